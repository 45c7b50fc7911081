"""The project's layering (docs/architecture.md): the library (``tpr_keras``) parses no
flags and imports neither absl, argparse nor the command-line app (``train``); ``serving``
never imports ``train``; only a command package's own test folder imports it. Checked in
fresh processes and by reading the sources."""

import ast
import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]

#: Every package of the library a user imports.
LIBRARY = ("tpr_keras", "tpr_keras.layers", "tpr_keras.models", "tpr_keras.training",
           "tpr_keras.data", "tpr_keras.ops", "tpr_keras.presets")

#: The library packages that import no Keras. Keras itself imports ``absl.logging`` (and
#: so ``absl.flags``), and on TensorFlow ``absl.app`` too, so only these can leave absl
#: out of the process altogether; the others are held to defining and parsing no flags.
KERAS_FREE = ("tpr_keras", "tpr_keras.training", "tpr_keras.data", "tpr_keras.presets",
              "tpr_keras.runtime", "tpr_keras.training.outputs")


def _python(code):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _imported_roots(package, root=REPO):
    """``{(file, top-level module)}`` of every absolute import under ``root/package``,
    those inside functions included."""
    found = set()
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            found |= {(str(path.relative_to(root)), name.split(".")[0]) for name in names}
    return found


def test_the_keras_free_library_packages_leave_absl_out_of_the_process():
    loaded = _python(
        f"import json, sys\nimport {', '.join(KERAS_FREE)}\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "                        if m.split('.')[0] in ('absl', 'keras', 'tensorflow'))))")
    assert "absl.flags" not in loaded and "absl.app" not in loaded, loaded


def test_the_library_defines_and_parses_no_flags_and_imports_no_train():
    report = _python(
        f"import json, sys\nimport {', '.join(LIBRARY)}\n"
        "from absl import flags\n"
        "print(json.dumps({'parsed': flags.FLAGS.is_parsed(),\n"
        "                  'flag_modules': sorted(flags.FLAGS.flags_by_module_dict()),\n"
        "                  'train': sorted(m for m in sys.modules\n"
        "                                  if m.split('.')[0] == 'train')}))")
    assert not report["parsed"]
    ours = [m for m in report["flag_modules"] if m.split(".")[0] in ("tpr_keras", "train")]
    assert not ours, f"flags defined by {ours}"
    assert not report["train"], report["train"]


#: What parses command lines; the library leaves both to train/, serving/ and tools/.
FLAG_PARSERS = ("absl", "argparse", "optparse", "getopt")


def test_no_library_module_imports_a_flag_parser_or_the_app():
    found = sorted(f"{path}: {root}" for path, root in _imported_roots("tpr_keras")
                   if root in FLAG_PARSERS + ("train",))
    assert not found, found


def test_the_import_scan_sees_flag_parsers_anywhere_in_a_module(tmp_path):
    """The scan that guards the library finds ``import argparse`` at module level, ``from
    absl import flags`` inside a function, and ``import absl.app as app`` in a class body."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("import argparse\n")
    (package / "b.py").write_text("def main():\n    from absl import flags\n")
    (package / "c.py").write_text("class C:\n    import absl.app as app\n")
    (package / "d.py").write_text("from . import a\nimport json\n")
    found = sorted((path, root) for path, root in _imported_roots("pkg", tmp_path)
                   if root in FLAG_PARSERS)
    assert found == [("pkg/a.py", "argparse"), ("pkg/b.py", "absl"), ("pkg/c.py", "absl")]


def test_serving_never_imports_train():
    found = sorted(f"{path}: {root}" for path, root in _imported_roots("serving")
                   if root == "train")
    assert not found, found


def test_train_imports_only_the_flag_parser_of_serving():
    """``train`` takes its command lines' parser from ``serving.command_flags`` (absl alone)
    and nothing else of ``serving``."""
    found = set()
    for path in sorted((REPO / "train").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module] + ([f"serving.{a.name}" for a in node.names]
                                         if node.module == "serving" else [])
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found |= {name for name in names if name.split(".")[0] == "serving"
                      and name != "serving"}
    assert found == {"serving.command_flags"}, found


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
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _command_imports_outside_their_tests(tmp_path) == [
        "tests/analysis/test_a.py: tools", "tests/models/test_b.py: bench",
        "tests/tools/test_c.py: bench"]
