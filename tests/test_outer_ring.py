"""The outer ring (docs/architecture.md, "The outer ring"): the command packages
(``bench``, ``experiments``, ``tools``) are imported by their own test folder only, their
parts import one another only along the drawn arrows (which form no circle), and the
library, the server and the app (``tpr_keras``, ``serving``, ``train``) import none of them.
Checked by reading the sources; the inner packages' layering is tests/test_layering.py's."""

import ast
import pathlib

from tests.file_trees import write_files
from tests.test_layering import REPO, _imported_roots

#: The command packages (run from a checkout as ``python -m <package>.<name>``, not
#: installed). Each is imported by its own test folder only (``tests/tools`` imports
#: ``tools``); ``tests/conftest.py`` imports all three so that they are importable.
COMMAND_PACKAGES = ("bench", "experiments", "tools")


def _command_imports_outside_their_tests(root=REPO):
    """``["<test file>: <package>"]`` for each module under ``root/tests`` that imports a
    command package other than the one its folder tests (``tests/<package>/...``)."""
    found = []
    for path, top in _imported_roots("tests", root):
        folder = pathlib.PurePath(path).parts[1]
        if top in COMMAND_PACKAGES and top != folder and path != "tests/conftest.py":
            found.append(f"{path}: {top}")
    return sorted(found)


def test_only_a_command_packages_own_tests_import_it():
    found = _command_imports_outside_their_tests()
    assert not found, found


def test_the_test_import_scan_finds_a_command_package_imported_elsewhere(tmp_path):
    """A library test importing ``tools`` (also inside a function) and ``tests/tools``
    importing ``bench`` are offenders; each folder's own package, the conftest, relative
    imports and look-alike names are not."""
    files = {
        "tests/conftest.py": "import bench\nimport experiments\nimport tools\n",
        "tests/analysis/test_a.py": "from tools.analysis import modules as command\n",
        "tests/models/test_b.py": "def test_b():\n    import bench.backends\n",
        "tests/tools/test_c.py": "from tools import report\nfrom bench import backends\n",
        "tests/experiments/test_d.py": "import experiments.train_presets as presets\n",
        "tests/bench/test_e.py": "import bench\nfrom .tools import x\nimport toolsy\n",
    }
    write_files(tmp_path, files)
    assert _command_imports_outside_their_tests(tmp_path) == [
        "tests/analysis/test_a.py: tools", "tests/models/test_b.py: bench",
        "tests/tools/test_c.py: bench"]


#: The outer ring (docs/architecture.md, "The outer ring"): scripts run from a checkout, each
#: kind in one place. A module belongs to the part of the longest dotted prefix it has.
OUTER_PARTS = {
    "bench": "bench",  # speed benchmarks
    "experiments": "experiments",  # runs that keep their JSON under results/
    "tools": "tools",  # checks of exported and served models, pages made by running code
    "tools.report": "report",  # committed JSON -> the pages' generated blocks and figures
    "tools.analysis": "analysis",  # the papers' analyses' command lines
    "tools.fidelity": "fidelity",  # the authors' code against the port
    "tools.checkpoint_conversion": "checkpoint_conversion",  # the authors' checkpoints
    "tests.serving.serving_fuzz": "serving_fuzz",  # the long fuzz run against a server
}

#: The arrows drawn between outer parts: (importer, imported). Anything else is refused.
OUTER_ARROWS = {
    ("report", "experiments"),  # an experiment's table is laid out by its own module
    ("analysis", "report"),  # an analysis prints its tables as the report lays them out
    ("fidelity", "checkpoint_conversion"),  # the weight-name mappings
}

#: What the library, the server and the app may never import.
INNER = ("tpr_keras", "serving", "train")


def _outer_part(module):
    """The outer part of a dotted module name, or None for a module outside the ring."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in OUTER_PARTS:
            return OUTER_PARTS[".".join(parts[:n])]
    return None


def _imported_modules(path):
    """Every absolute module ``path`` imports (inside functions too); ``from p import m``
    names both ``p`` and ``p.m``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _outer_files(root):
    files = [p for top in ("bench", "experiments", "tools")
             for p in sorted((root / top).rglob("*.py"))]
    fuzz = root / "tests" / "serving" / "serving_fuzz.py"
    return files + ([fuzz] if fuzz.exists() else [])


def _against_the_arrows(root=REPO):
    """``["<file>: <module> (<part> -> <part>)"]``: each import between two outer parts that
    :data:`OUTER_ARROWS` does not draw."""
    found = []
    for path in _outer_files(root):
        relative = path.relative_to(root)
        source = _outer_part(".".join(relative.with_suffix("").parts))
        for module in sorted(_imported_modules(path)):
            target = _outer_part(module)
            if target and target != source and (source, target) not in OUTER_ARROWS:
                # ``from tools import analysis`` names the package ``tools`` too: a
                # package named on the way to the importer's own part is no arrow.
                if any(other.startswith(module + ".") and _outer_part(other) == source
                       for other in _imported_modules(path)):
                    continue
                found.append(f"{relative}: {module} ({source} -> {target})")
    return found


def test_the_outer_ring_imports_only_along_the_drawn_arrows():
    found = _against_the_arrows()
    assert not found, found


def test_the_drawn_arrows_form_no_circle():
    from tests.test_import_cycles import find_cycle

    graph = {part: set() for part in OUTER_PARTS.values()}
    for source, target in OUTER_ARROWS:
        graph[source].add(target)
    assert find_cycle(graph) is None


def test_the_library_the_server_and_the_app_import_no_outer_script():
    found = sorted(f"{path}: {root}" for package in INNER
                   for path, root in _imported_roots(package)
                   if root in COMMAND_PACKAGES + ("tests",))
    assert not found, found


def test_the_arrow_scan_refuses_an_undrawn_import_anywhere_in_a_module(tmp_path):
    """An experiment importing a tool (inside a function too), a benchmark importing an
    experiment and the report importing a check are refused; the report reading an
    experiment, a tool importing its own package's module, and the inner packages are not."""
    files = {
        "experiments/runs.py": "def main():\n    from tools.report import common\n",
        "experiments/ok.py": "import json\nfrom tpr_keras import models\n",
        "bench/speed.py": "import experiments.runs\n",
        "tools/check.py": "from tools import served\nfrom serving import client\n",
        "tools/served.py": "import os\n",
        "tools/report/blocks.py": "from experiments import runs\nfrom tools import check\n",
    }
    write_files(tmp_path, files)
    assert _against_the_arrows(tmp_path) == [
        "bench/speed.py: experiments.runs (bench -> experiments)",
        "experiments/runs.py: tools.report (experiments -> report)",
        "experiments/runs.py: tools.report.common (experiments -> report)",
        "tools/report/blocks.py: tools (report -> tools)",
        "tools/report/blocks.py: tools.check (report -> tools)"]
