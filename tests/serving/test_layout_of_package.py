"""serving/'s layout: three sub-packages (core, model_server, client) whose imports go one way,
no import cycle among serving's modules, no test code in the package, no model or training
code outside serving/export.py, and one definition of a version folder's file names. Read
from the source with ``ast``: every import statement counts, including those inside
functions and ``if TYPE_CHECKING:`` blocks."""

import ast
import pathlib

import pytest

from tests.file_trees import write_files

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVING = ROOT / "serving"
SUB_PACKAGES = ("core", "model_server", "client")


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules that ``source`` (module ``name``) imports; ``from pkg import mod`` names
    ``pkg.mod`` (not ``pkg``) when that is one of the ``known`` modules. A package is not
    counted as imported by its submodules: Python initialises it first, whoever imports."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            submodules = {f"{base}.{a.name}" for a in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):  # names defined in ``base`` itself
                found.add(base)
    return found


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """``{module: (source, is_package)}`` -> ``{module: the known modules it imports}``."""
    known = set(sources)
    return {name: (imported_modules(src, name, is_pkg, known) & known) - {name}
            for name, (src, is_pkg) in sources.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as ``[a, b, ..., a]``, or None if it is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def serving_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in sorted(SERVING.rglob("*.py"))}


@pytest.fixture(scope="module")
def graph():
    return import_graph(serving_sources())


@pytest.fixture(scope="module")
def all_imports():
    sources = serving_sources()
    return {name: imported_modules(src, name, is_pkg, set(sources))
            for name, (src, is_pkg) in sources.items()}


def test_the_three_sub_packages_and_the_entry_points_exist():
    for sub in SUB_PACKAGES:
        assert (SERVING / sub / "__init__.py").is_file(), sub
    # python -m serving.server (README, serving/models.config, tests, bench), and the rest
    for path in ("server.py", "model_server/__main__.py", "client/__main__.py", "export.py"):
        assert (SERVING / path).is_file(), path


def test_every_serving_module_is_in_a_sub_package_or_is_an_entry_point():
    top = sorted(p.name for p in SERVING.glob("*.py"))
    assert top == ["__init__.py", "command_flags.py", "export.py", "server.py"], top


def test_the_flags_module_every_command_shares_imports_absl_and_the_standard_library_only(
        all_imports):
    """``serving.command_flags`` parses the client's flags too: it must stay TensorFlow-free."""
    imported = {m.split(".")[0] for m in all_imports["serving.command_flags"]}
    assert imported <= {"__future__", "absl", "collections", "re", "sys", "textwrap",
                        "types"}, imported


def test_the_core_imports_no_front_end_and_the_client_no_server(all_imports):
    for name, modules in all_imports.items():
        if name.startswith("serving.core"):
            bad = {m for m in modules if m.startswith(("serving.model_server", "serving.client",
                                                       "serving.server", "serving.export"))}
            assert not bad, (name, bad)
        if name.startswith("serving.client"):  # TensorFlow-free: nothing of the server
            bad = {m for m in modules if m.startswith("serving.") and
                   not m.startswith(("serving.client", "serving.command_flags"))}
            assert not bad, (name, bad)
        if name.startswith("serving.model_server") or name == "serving.server":
            bad = {m for m in modules if m.startswith(("serving.client", "serving.export"))
                   or m.startswith("serving.server") and name != "serving.server"}
            assert not bad, (name, bad)


def test_no_import_cycle_among_serving_modules(graph):
    assert sum(map(len, graph.values())) > 30  # the walk sees the imports
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_sees_a_cycle_through_type_checking():
    """A cycle through an import under ``if TYPE_CHECKING:``: tensors imports servable for a
    type, servable imports tensors for real."""
    sources = {
        "serving.core.tensors": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from serving.core.servable import Signature\n", False),
        "serving.core.servable": ("from serving.core.tensors import check_batch\n", False),
        "serving.core": ("from serving.core import tensors\n", True),
    }
    cycle = find_cycle(import_graph(sources))
    assert cycle is not None and set(cycle) == {"serving.core.tensors", "serving.core.servable"}
    del sources["serving.core.servable"]
    assert find_cycle(import_graph(sources)) is None


def test_relative_imports_resolve_within_the_package():
    known = {"serving.core", "serving.core.status", "serving.core.tensors"}
    found = imported_modules("from . import status\nfrom .tensors import MAX_RANK\n",
                             "serving.core.json_tensor", False, known)
    assert found >= {"serving.core.status", "serving.core.tensors"}


def test_no_fuzzer_or_other_test_code_inside_serving():
    assert not [p for p in SERVING.rglob("*.py") if "fuzz" in p.name or p.name.startswith("test")]


def test_no_training_code_and_model_code_only_in_export(all_imports):
    """Data flows one way, tpr_keras -> serving, and serving never imports train; only the
    exporter command touches tpr_keras's models and exporters (the server serves any
    SavedModel, and stock TF Serving can replace it). The server imports of the library
    :mod:`tpr_keras.runtime`, for the one TensorFlow start-up filter, and
    :mod:`tpr_keras.export.layout`, the file names of a version folder (their one
    definition; it imports nothing but ``os``)."""
    for name, modules in all_imports.items():
        tops = {m.split(".")[0] for m in modules}
        assert "train" not in tops and "bench" not in tops and "tests" not in tops, name
        if name != "serving.export":
            library = {m for m in modules if m.split(".")[0] in ("tpr_keras", "keras")}
            assert library <= {"tpr_keras.runtime", "tpr_keras.export.layout"}, (name, library)


def test_the_layout_the_server_takes_from_the_library_imports_nothing_of_it():
    """``tpr_keras.export.layout`` and its package import nothing but ``os`` and
    ``tpr_keras.lazy`` (the package's lazy names), so ``serving.core.layout`` stays free of
    TensorFlow, Keras and the models."""
    export = ROOT / "tpr_keras" / "export"
    layout = imported_modules((export / "layout.py").read_text(encoding="utf-8"),
                              "tpr_keras.export.layout", False, set())
    package = imported_modules((export / "__init__.py").read_text(encoding="utf-8"),
                               "tpr_keras.export", True, set())
    assert layout == {"os"} and package == {"tpr_keras.lazy"}, (layout, package)


#: The file names of a version folder, each defined once, in tpr_keras/export/layout.py.
LAYOUT_NAMES = ("EXTRA_ASSETS_DIR", "WARMUP_FILE", "WARMUP_PATH", "EXPORT_INFO_FILE")


def assigned_names(root):
    """``{name: [modules that assign it]}`` for each of :data:`LAYOUT_NAMES` assigned (``=``,
    ``: type =``, ``+=``, ``for``/``with`` targets, anywhere in a module) under ``root``'s
    ``tpr_keras``, ``serving``, ``train``, ``tools`` and ``bench``."""
    found = {}
    for top in ("tpr_keras", "serving", "train", "tools", "bench"):
        for path in sorted((root / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                        and node.id in LAYOUT_NAMES:
                    found.setdefault(node.id, []).append(
                        str(path.relative_to(root).with_suffix("")).replace("/", "."))
    return found


def test_each_layout_name_is_defined_once_in_the_library():
    """Exporters and server read one definition of each name (strings compare equal
    whether or not they are one object, so the test reads the sources)."""
    assert assigned_names(ROOT) == {name: ["tpr_keras.export.layout"] for name in LAYOUT_NAMES}


def test_the_definition_scan_sees_a_second_definition(tmp_path):
    """An assignment anywhere in a module counts (annotated, in a function, under ``if``);
    an import of the name does not."""
    files = {"tpr_keras/export/layout.py": 'WARMUP_FILE = "w"\nEXTRA_ASSETS_DIR: str = "a"\n',
             "serving/core/layout.py": "from tpr_keras.export.layout import WARMUP_FILE\n",
             "serving/core/warmup.py": 'WARMUP_FILE = "w"\ndef f():\n    WARMUP_PATH = "x"\n',
             "train/export.py": 'if True:\n    EXPORT_INFO_FILE = "e"\n'}
    write_files(tmp_path, files)
    for top in ("tools", "bench"):
        (tmp_path / top).mkdir()
    assert assigned_names(tmp_path) == {
        "WARMUP_FILE": ["tpr_keras.export.layout", "serving.core.warmup"],
        "EXTRA_ASSETS_DIR": ["tpr_keras.export.layout"],
        "WARMUP_PATH": ["serving.core.warmup"], "EXPORT_INFO_FILE": ["train.export"]}
