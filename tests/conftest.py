"""Test set-up shared by the whole suite.

The CPU is split into two logical devices before TensorFlow initialises, so
distribution tests get a real 2-replica ``MirroredStrategy`` on any machine.
"""

import gc
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The JAX half of the test command compiles with XLA's fast-compile flags
# (tests/jax_processes.py says why), set before anything initialises JAX.
if str(pathlib.Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.jax_processes import FAST_COMPILE_XLA_FLAGS  # noqa: E402

if os.environ.get("KERAS_BACKEND") == "jax":
    os.environ.setdefault("XLA_FLAGS", FAST_COMPILE_XLA_FLAGS)
# The train.* commands keep JAX's compiled programs in ~/.cache/tpr_keras/jax by default;
# the tests' commands (their processes inherit this) keep none unless a test asks.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# The project's top-level packages, imported before pytest imports tests/serving and
# tests/train. With --import-mode=importlib, pytest names a test module by its path from
# the rootdir (tests/, where pytest.ini is): tests/serving/conftest.py becomes
# "serving.conftest", and pytest 9.2 registers a namespace package "serving" for
# tests/serving when no module of that name is loaded yet, which hides the real package
# ("No module named 'serving.export'"). Loaded first, the real packages stay.
import serving  # noqa: E402, F401
import train  # noqa: E402, F401

# The same for bench/, tools/ and experiments/, which are not installed: imported from this
# checkout (on sys.path above, as is tests.serving.fuzz). Only their own test folders
# (tests/bench, tests/tools, tests/experiments) import them (tests/test_outer_ring.py).
import bench  # noqa: E402, F401
import experiments  # noqa: E402, F401
import tools  # noqa: E402, F401

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
)

REPO = pathlib.Path(__file__).resolve().parents[1]


#: Folders whose every test is marked ``every_backend`` (a model test file marks itself).
EVERY_BACKEND_FOLDERS = (REPO / "tests" / "layers", REPO / "tests" / "ops")


def pytest_collection_modifyitems(config, items):
    """The layer and op tests are marked ``every_backend`` (the test command runs that marker
    again under ``KERAS_BACKEND=jax``); tests marked ``tensorflow_backend`` need Keras on
    TensorFlow: skipped on the others."""
    import keras

    for item in items:
        if any(folder in pathlib.Path(item.path).parents for folder in EVERY_BACKEND_FOLDERS):
            item.add_marker(pytest.mark.every_backend)
    if keras.backend.backend() == "tensorflow":
        return
    skip = pytest.mark.skip(reason=f"needs the TensorFlow backend, not {keras.backend.backend()}")
    for item in items:
        if item.get_closest_marker("tensorflow_backend"):
            item.add_marker(skip)


def pytest_collection_finish(session):
    """What the test process holds once the tests are collected (TensorFlow, Keras, the
    test modules: about 400,000 objects, none of them garbage later) is frozen out of the
    cyclic garbage collector's sight (:func:`gc.freeze`): each full collection, which
    ``serving.core.memory`` runs after every poll that unloaded a version and Python runs on
    its own as objects pile up, then walks only what the tests made since, not all of it
    again (about 0.4 s each on 2 cores: the 28 full collections of five serving test files
    took 10.2 s, 3.1 s frozen)."""
    gc.freeze()


SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """``../shared/data`` next to the checkout; tests using it skip when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def write_babi_task1(path, stories, seed):
    """Writes task-1-like bAbI stories: 'X went to Y.' ... 'Where is X?' (3 questions each)."""
    people = ["mary", "john", "sandra", "daniel"]
    places = ["kitchen", "garden", "office", "hallway"]
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(stories):
        where, n = {}, 0
        for _ in range(3):
            for _ in range(2):
                person, place = rng.choice(people), rng.choice(places)
                where[person] = place
                n += 1
                lines.append(f"{n} {person.capitalize()} went to the {place}.")
            person = rng.choice(sorted(where))
            n += 1
            lines.append(f"{n} Where is {person.capitalize()}? \t{where[person]}\t{n - 1}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def babi_task1_writer():
    """The :func:`write_babi_task1` helper, for tests that build tiny bAbI files."""
    return write_babi_task1


def write_math_run(root, name, model, seed, interpolate, extrapolate):
    """A ``train.math --model_dir`` holding only what the math analysis reads: a
    ``results.json`` with the per-module accuracies, the summary train.math writes and the
    config. Returns the folder's path as a string."""
    path = root / name
    path.mkdir()
    summary = {regime: {"modules": len(s), "mean": sum(s.values()) / len(s),
                        "above_95": sum(v > 95 for v in s.values())}
               for regime, s in (("interpolate", interpolate), ("extrapolate", extrapolate))}
    (path / "results.json").write_text(json.dumps({
        "interpolate_accuracy_percent": interpolate, "extrapolate_accuracy_percent": extrapolate,
        "summary": summary, "steps": 100, "config": {"model": model, "seed": seed}}))
    return str(path)


@pytest.fixture
def math_run_pair(tmp_path):
    """Two math runs (``tests/analysis`` and ``tests/tools`` test the tables and the command on
    them): TP-Transformer with 3 interpolate modules, Transformer lacking arithmetic__mul.
    95.0 is not above 95 %, 95.5 is."""
    tp = write_math_run(tmp_path, "tp", "tp_transformer", 0,
                        {"numbers__place_value": 95.5, "algebra__linear_1d": 99.0,
                         "arithmetic__mul": 40.0}, {"numbers__place_value_big": 20.0})
    tf = write_math_run(tmp_path, "tf", "transformer", 0,
                        {"numbers__place_value": 90.0, "algebra__linear_1d": 95.0},
                        {"numbers__place_value_big": 10.5})
    return tp, tf


@pytest.fixture
def math_seed_runs(tmp_path):
    """``{model: [run folder of seeds 0, 1, 2]}`` with hand-computable statistics (per module
    and seed: tp_transformer numbers__place_value 90/92/94, comparison__pair 50/60/70,
    arithmetic__add_or_sub 96/96/96; transformer 85/86/87, 55/58/61, 97/98/99; extrapolate
    numbers__place_value_big 10/20/30 and 5/5/5)."""
    tp = {"numbers__place_value": [90, 92, 94], "comparison__pair": [50, 60, 70],
          "arithmetic__add_or_sub": [96, 96, 96]}
    tf = {"numbers__place_value": [85, 86, 87], "comparison__pair": [55, 58, 61],
          "arithmetic__add_or_sub": [97, 98, 99]}
    big = {"tp_transformer": [10, 20, 30], "transformer": [5, 5, 5]}
    dirs = {}
    for model, scores in (("tp_transformer", tp), ("transformer", tf)):
        dirs[model] = [write_math_run(tmp_path, f"{model}-seed{s}", model, s,
                                      {m: float(v[s]) for m, v in scores.items()},
                                      {"numbers__place_value_big": float(big[model][s])})
                       for s in range(3)]
    return dirs


@pytest.fixture(scope="module")
def load_script(request):
    """``load_script(name)``: ``<package>/<name>.py`` of the repository package named like
    the test's folder (``tests/tools`` → ``tools/``, ``tests/experiments`` →
    ``experiments/``), loaded fresh as a module, to test its functions."""
    import importlib.util

    package = REPO / request.path.parent.name

    def load(name):
        spec = importlib.util.spec_from_file_location(name, package / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
