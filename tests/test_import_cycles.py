"""No import circles in ``tpr_keras``: its modules' imports form a DAG.

An edge ``a -> b`` is an ``import b`` or ``from b import x`` in ``a``; ``from p import m``
with ``m`` a submodule is an edge to both ``p`` (its ``__init__`` runs) and ``p.m``. The
implicit import of a package's ``__init__`` before its submodules is not an edge (a
package re-exporting its submodules would otherwise always be a circle).
"""

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tpr_keras")


def modules():
    """``{dotted name: path}`` of every module of ``tpr_keras``."""
    found = {}
    root = os.path.dirname(PACKAGE)
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def imports(name, path, known, top_level_only):
    """The ``tpr_keras`` modules ``name`` imports (at module level, or anywhere)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    nodes = list(tree.body)
    if top_level_only:  # module level includes the bodies of top-level if/try
        i = 0
        while i < len(nodes):
            node = nodes[i]
            if isinstance(node, (ast.If, ast.Try)):
                nodes += node.body + node.orelse + getattr(node, "finalbody", [])
                nodes += [s for h in getattr(node, "handlers", []) for s in h.body]
            i += 1
    else:
        nodes = list(ast.walk(tree))
    out = set()
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base in known:
                out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
    out.discard(name)
    return out


def find_cycle(graph):
    """One cycle of ``graph`` as a list of names, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, trail + [nxt])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


@pytest.mark.parametrize("top_level_only", [True, False], ids=["module-level", "anywhere"])
def test_no_import_cycles(top_level_only):
    known = modules()
    graph = {name: imports(name, path, known, top_level_only) for name, path in known.items()}
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_checker_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
