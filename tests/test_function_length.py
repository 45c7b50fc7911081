"""No function of the library (``tpr_keras``), the app (``train``) or the server
(``serving``) is longer than :data:`LIMIT` lines (``def`` to its last line, docstring
included) but the few named in :data:`LONG_FUNCTIONS`, each with the reason a reader would
accept. Read from the sources, nested functions and methods included."""

import ast
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("tpr_keras", "train", "serving")
LIMIT = 80

#: ``"<file>:<qualified name>"`` -> why it may stay longer than :data:`LIMIT` lines.
LONG_FUNCTIONS = {}


def long_functions(root=REPO, packages=PACKAGES, limit=LIMIT):
    """``{"<file>:<qualified name>": lines}`` of every function over ``limit`` lines."""
    found = {}

    def visit(node, path, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                lines = child.end_lineno - child.lineno + 1
                if lines > limit:
                    found[f"{path}:{name}"] = lines
                visit(child, path, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, path, prefix + child.name + ".")
            else:
                visit(child, path, prefix)

    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            visit(ast.parse(path.read_text(encoding="utf-8"), relative), relative, "")
    return found


def test_no_function_is_longer_than_the_limit_but_the_named_ones():
    found = long_functions()
    unexplained = {name: lines for name, lines in found.items() if name not in LONG_FUNCTIONS}
    assert not unexplained, (f"functions over {LIMIT} lines: {unexplained}; split them "
                             "(or name one in LONG_FUNCTIONS with the reason it stays long)")


def test_every_named_long_function_is_still_long():
    """A name that no longer needs its place leaves :data:`LONG_FUNCTIONS`."""
    stale = sorted(set(LONG_FUNCTIONS) - set(long_functions()))
    assert not stale, f"no longer over {LIMIT} lines (remove from LONG_FUNCTIONS): {stale}"


def test_the_scan_finds_long_functions_methods_and_nested_ones(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(5))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        f"def short():\n    pass\n\n\ndef long():\n{body}"
        f"    def inner():\n{body.replace('    ', '        ')}\n\n"
        f"class C:\n    async def method(self):\n{body.replace('    ', '        ')}")
    assert long_functions(tmp_path, ("pkg",), limit=5) == {
        "pkg/m.py:long": 12, "pkg/m.py:long.inner": 6, "pkg/m.py:C.method": 6}
