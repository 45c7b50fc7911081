"""The project's layering (docs/architecture.md): the library (``tpr_keras``) parses no
flags and imports neither absl, argparse, the command-line app (``train``) nor the server
(``serving``), and inside it each module imports only down its floors (data, presets ->
ops -> layers, losses -> models -> training); ``serving`` never imports ``train``. Checked
in fresh processes and by reading the sources; the outer ring (``bench``, ``experiments``,
``tools``) is tests/test_outer_ring.py's."""

import ast
import json
import os
import pathlib
import re
import subprocess
import sys

from tests.file_trees import write_files

REPO = pathlib.Path(__file__).resolve().parents[1]

#: Every package of the library a user imports.
LIBRARY = ("tpr_keras", "tpr_keras.layers", "tpr_keras.models", "tpr_keras.training",
           "tpr_keras.data", "tpr_keras.ops", "tpr_keras.presets", "tpr_keras.evaluation",
           "tpr_keras.export")

#: The library packages that import no Keras. Keras itself imports ``absl.logging`` (and
#: so ``absl.flags``), and on TensorFlow ``absl.app`` too, so only these can leave absl
#: out of the process altogether; the others are held to defining and parsing no flags.
KERAS_FREE = ("tpr_keras", "tpr_keras.training", "tpr_keras.data", "tpr_keras.presets",
              "tpr_keras.runtime", "tpr_keras.provenance", "tpr_keras.run_outputs")


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


def test_no_library_module_imports_a_flag_parser_the_app_or_the_server():
    found = sorted(f"{path}: {root}" for path, root in _imported_roots("tpr_keras")
                   if root in FLAG_PARSERS + ("train", "serving"))
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


#: The floors of the library (docs/architecture.md, "The library's floors"), bottom up. A
#: module belongs to the part of the longest dotted prefix it has, and imports from its own
#: part and from the parts of lower floors only: never from a part of its own floor or of
#: one above (inside functions too, and a lazy export's or ``importlib``'s module name).
LIBRARY_FLOORS = (
    ("tpr_keras",),  # the version
    ("tpr_keras.lazy", "tpr_keras.runtime", "tpr_keras.atomic_files",
     "tpr_keras.provenance"),  # standard library
    ("tpr_keras.data", "tpr_keras.presets", "tpr_keras.backend",
     "tpr_keras.run_outputs"),  # text, folders, devices, a run's files
    ("tpr_keras.ops",),  # the TPR algebra
    ("tpr_keras.layers", "tpr_keras.losses"),  # Keras layers; per-example losses
    ("tpr_keras.models",),  # the families, their presets and task models
    ("tpr_keras.training", "tpr_keras.analysis",
     "tpr_keras.evaluation",  # the trainers; the papers' analyses; the tables
     "tpr_keras.export"),  # SavedModel export for TF Serving
    ("tpr_keras.backend.tensorflow.trainer",
     "tpr_keras.backend.jax.trainer"),  # each backend's trainer, on the base Trainer
    ("tpr_keras.backend.backend_trainer",),  # make_trainer: the running backend's trainer
    ("tpr_keras.testing",),  # the test suite's helpers: nothing in the library uses them
)

#: The drawn exceptions, names loaded on first use (never an import statement):
#: ``tpr_keras.layers`` still names the family layers it used to hold (``MemN2NNetwork``,
#: ...), loaded from their family on first access; importing ``tpr_keras.layers`` imports no
#: family (tests/models/test_lazy_models.py). A family still names its exporter and in-graph
#: tokenizer (``tpr_keras.models.babi.export_babi_model``, ...), and its task model's
#: ``export()`` imports the exporter by name (as Keras' ``Model.export`` imports
#: ``keras.export``); the models import no TensorFlow
#: (:func:`test_no_model_module_imports_tensorflow`).
KEPT_NAMES = {("tpr_keras/layers/__init__.py", "tpr_keras.models")} | {
    (path, "tpr_keras.export") for path in (
        "tpr_keras/models/babi/__init__.py", "tpr_keras/models/babi/babi_answerer.py",
        "tpr_keras/models/entailment/__init__.py",
        "tpr_keras/models/entailment/entailment_classifier.py",
        "tpr_keras/models/tp_transformer/__init__.py",
        "tpr_keras/models/tp_transformer/tp_transformer_answerer.py")}

#: ``tpr_keras.training`` still names the backends' trainers (``Trainer``, ``JaxTrainer``,
#: ``is_chief``, ``make_trainer``), loaded from ``tpr_keras.backend`` on first access
#: (tests/training/test_trainer_names.py).
KEPT_NAMES |= {("tpr_keras/training/__init__.py", f"tpr_keras.backend.{module}")
               for module in ("tensorflow.trainer", "jax.trainer", "backend_trainer")}

#: A string that names a module of the library: ``"tpr_keras.models.memn2n"``,
#: ``"tpr_keras.export.babi:export_babi_answerer"``.
_MODULE_NAME = re.compile(r"tpr_keras(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?")


def _library_part(module):
    """``(floor, part)`` of a dotted name inside ``tpr_keras``."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        for floor, names in enumerate(LIBRARY_FLOORS):
            if ".".join(parts[:n]) in names:
                return floor, ".".join(parts[:n])
    raise AssertionError(f"{module} is outside tpr_keras")


def _library_imports(path, module):
    """``{(kind, module)}``: what ``path`` (module ``module``) imports of the library, by an
    import statement (``"import"``, relative ones resolved) or by naming it in a string
    (``"name"``: lazy exports, ``importlib.import_module``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {("import", alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found |= {("import", base)} | {("import", f"{base}.{a.name}") for a in node.names}
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and _MODULE_NAME.fullmatch(node.value)):
            found.add(("name", node.value.partition(":")[0]))
    return {(kind, name) for kind, name in found if name.split(".")[0] == "tpr_keras"}


def _up_the_floors(root=REPO):
    """``["<file>: <module> (<part> -> <part>)"]`` for each import of the library that is
    not from its own part or a lower floor, and ``"<file>: on no floor"`` for a module of a
    part :data:`LIBRARY_FLOORS` does not place."""
    found = []
    for path in sorted((root / "tpr_keras").rglob("*.py")):
        relative = path.relative_to(root)
        names = relative.with_suffix("").parts
        module = ".".join(names[:-1] if names[-1] == "__init__" else names)
        floor, part = _library_part(module)
        if part == "tpr_keras" and module != "tpr_keras":
            found.append(f"{relative}: on no floor")
            continue
        for kind, name in sorted(_library_imports(path, module)):
            their_floor, theirs = _library_part(name)
            if theirs == part or their_floor < floor:
                continue
            if kind == "name" and (str(relative), theirs) in KEPT_NAMES:
                continue
            found.append(f"{relative}: {name} ({part} -> {theirs})")
    return found


def test_the_library_imports_only_down_its_floors():
    found = _up_the_floors()
    assert not found, found


def test_the_floor_scan_refuses_every_import_up_or_across(tmp_path):
    """Up (inside a function, relative, or a lazy export's string), across one floor, and a
    package on no floor are refused; down, within a part, and the kept names are not."""
    files = {
        "tpr_keras/__init__.py": "",
        "tpr_keras/layers/__init__.py": 'EXPORTS = {"MemN2NHop": "tpr_keras.models.memn2n"}\n',
        "tpr_keras/layers/tpru.py": "def f():\n    from tpr_keras.models import TPRRNN\n",
        "tpr_keras/models/__init__.py": "from tpr_keras.layers import tpru\n",
        "tpr_keras/models/tp.py": "from ..training import losses\nfrom . import x\n",
        "tpr_keras/models/babi.py": 'EXPORTER = "tpr_keras.analysis.roles:plot"\n',
        "tpr_keras/presets/files.py": "import tpr_keras.models\nimport tpr_keras.data\n",
        "tpr_keras/training/loop.py": "from tpr_keras.data import babi\nimport tpr_keras.lazy\n",
        "tpr_keras/exporters/__init__.py": "import tpr_keras.models\n",
        "tpr_keras/ops/tpr.py": 'DOC = "see tpr_keras.layers (the layers)"\n',
    }
    write_files(tmp_path, files)
    assert _up_the_floors(tmp_path) == [
        "tpr_keras/exporters/__init__.py: on no floor",
        "tpr_keras/layers/tpru.py: tpr_keras.models (tpr_keras.layers -> tpr_keras.models)",
        "tpr_keras/layers/tpru.py: tpr_keras.models.TPRRNN "
        "(tpr_keras.layers -> tpr_keras.models)",
        "tpr_keras/models/babi.py: tpr_keras.analysis.roles "
        "(tpr_keras.models -> tpr_keras.analysis)",
        "tpr_keras/models/tp.py: tpr_keras.training (tpr_keras.models -> tpr_keras.training)",
        "tpr_keras/models/tp.py: tpr_keras.training.losses "
        "(tpr_keras.models -> tpr_keras.training)",
        "tpr_keras/presets/files.py: tpr_keras.data (tpr_keras.presets -> tpr_keras.data)",
        "tpr_keras/presets/files.py: tpr_keras.models (tpr_keras.presets -> tpr_keras.models)"]


def test_no_model_module_imports_tensorflow():
    """``tpr_keras.models`` holds backend-neutral Keras models; the SavedModel export and the
    in-graph tokenizers, TensorFlow's, are ``tpr_keras.export`` (an import inside a function
    counts: ``_imported_roots`` reads every import statement)."""
    found = sorted(f"{path}: {root}" for path, root in _imported_roots("tpr_keras/models")
                   if root == "tensorflow")
    assert not found, found
