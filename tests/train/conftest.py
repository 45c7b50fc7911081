"""Fixtures shared by the entry-point tests.

Three tiny runs (:func:`tiny_babi_run`, :func:`tiny_babi_cut_run`, :func:`tiny_math_run`)
are trained once per test session and read by the tests of several files: each training
process costs its TensorFlow start, the training step's tracing and a SavedModel export,
so the tests that only read, serve, copy or continue a run share one. A test that changes
a run copies its folder first (``shutil.copytree``). A run whose SavedModel no test reads
is trained with ``--nosaved_model`` (the cut run; the tests' own runs likewise). The
commands that train nothing run in the test process (:func:`command_in_process`) where
their own process is not what a test looks at.
"""

import contextlib
import importlib
import importlib.util
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

from tests import preloaded_python
from tests.once_per_run import once_per_run

REPO = pathlib.Path(__file__).resolve().parents[2]


def write_babi_data(root, babi_task1_writer):
    """A bAbI folder with a 100-story task-1 training file and a 20-story test file."""
    (root / "en-10k").mkdir(parents=True)
    babi_task1_writer(root / "en-10k" / "qa1_single-supporting-fact_train.txt", 100, 0)
    babi_task1_writer(root / "en-10k" / "qa1_single-supporting-fact_test.txt", 20, 1)
    return root


@pytest.fixture(scope="module")
def tiny_babi(tmp_path_factory, babi_task1_writer):
    """A bAbI folder with a 100-story task-1 training file and a 20-story test file."""
    return write_babi_data(tmp_path_factory.mktemp("babi"), babi_task1_writer)


def write_module(path, n, seed, digits):
    """A Mathematics module file of ``n`` units-digit questions on ``digits``-digit numbers."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        number = int(rng.integers(10 ** (digits - 1), 10**digits))
        lines += [f"What is the units digit of {number}?", str(number % 10)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def write_math_data(root):
    """A Mathematics Dataset folder with one module (120 training questions)."""
    for i, folder in enumerate(["train-easy", "train-medium", "train-hard"]):
        write_module(root / folder / "numbers__place_value.txt", 40, i, 3)
    write_module(root / "interpolate" / "numbers__place_value.txt", 16, 7, 3)
    write_module(root / "extrapolate" / "numbers__place_value_big.txt", 8, 8, 6)
    return root


@pytest.fixture(scope="module")
def tiny_math(tmp_path_factory):
    """A Mathematics Dataset folder with one module (120 training questions)."""
    return write_math_data(tmp_path_factory.mktemp("mathematics"))


PAIRS = [("(a&b)", "a", 1), ("a", "(a&b)", 0), ("(a|b)", "(b|a)", 1), ("a", "~a", 0),
         ("(a>b)", "(~b>~a)", 1), ("(c&d)", "(c|d)", 1), ("(c|d)", "(c&d)", 0), ("~~a", "a", 1)]


@pytest.fixture(scope="module")
def tiny_entailment(tmp_path_factory):
    """An entailment folder: 32 training pairs, 8 in each evaluation split."""
    root = tmp_path_factory.mktemp("entailment")
    lines = [f"{a},{b},{label},0,0,0" for a, b, label in PAIRS]
    for name in ("train", "validate", "test_easy", "test_hard", "test_big", "test_massive",
                 "test_exam"):
        (root / f"{name}.txt").write_text("\n".join(lines * (4 if name == "train" else 1)) + "\n")
    return root


@pytest.fixture(scope="session")
def command_in_process():
    """``command_in_process(module, argv) -> subprocess.CompletedProcess``: what
    ``python -m <module> <argv>`` does, run in this process through the same
    :func:`train.cli.run` (its flags, its one-line errors and exit status), stdout and
    stderr captured. For the commands that train nothing (``train.evaluate``,
    ``train.export``, ``train.save_preset``, a rerun of a finished run), whose own start-up
    (TensorFlow's import) is most of a subprocess's time, and for the short training runs
    whose outputs, not their process, a test checks; the tests of a process's logging and
    of a kill start one.

    Keras's global state (the counters that name unnamed layers and variables, its
    settings such as the dtype policy) is cleared before the command, as a new process
    starts it, and after it, so that neither the command nor a later test in this process
    sees what the other made. ``sys.argv`` and ``__main__``'s module spec are the command's
    while it runs, so the command line a run records (``results.json``'s ``command``) is
    ``python -m <module> <argv>``, as from a process of its own."""
    import keras

    from train import cli

    def run(module, argv):
        command = importlib.import_module(module)
        argv = [str(a) for a in argv]
        out, err, code = io.StringIO(), io.StringIO(), 0
        main = types.ModuleType("__main__")
        main.__spec__ = importlib.util.find_spec(module)
        saved = sys.argv, sys.modules["__main__"]
        sys.argv, sys.modules["__main__"] = [command.__file__, *argv], main
        keras.backend.clear_session(free_memory=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.run(command.command, command.main, argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
            finally:
                keras.backend.clear_session(free_memory=False)
                sys.argv, sys.modules["__main__"] = saved
        return subprocess.CompletedProcess([module, *argv], code, out.getvalue(),
                                           err.getvalue())
    return run


def shared_folder(tmp_path_factory, name, build):
    """A folder made once per test run by ``build(folder)``, across the xdist workers
    (:func:`tests.once_per_run.once_per_run`)."""
    def make(folder):
        build(folder)  # the runs' results are files in the folder: nothing to return

    folder, _ = once_per_run(tmp_path_factory, name, make)
    return folder


def run_command(args, cwd, env, preloaded=True):
    """``python -m <args>`` to the end; asserts it succeeded; returns the finished process.
    ``preloaded``: forked from a Python that has imported TensorFlow
    (:mod:`tests.preloaded_python`), for a run whose outputs are checked, not its start-up;
    else a process of its own."""
    if preloaded:
        done = preloaded_python.run(["-m", *args], cwd=cwd, env=env, timeout=600)
    else:
        done = subprocess.run([sys.executable, "-m", *map(str, args)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def recorded_run(folder, args, env):
    """A run made by :func:`shared_folder`: the command's output is kept beside it."""
    return types.SimpleNamespace(
        model_dir=folder / "run", args=args, env=env,
        stdout=(folder / "stdout.txt").read_text(), stderr=(folder / "stderr.txt").read_text())


def keep_output(folder, done):
    """Keeps the output of the command that made a shared run (:func:`recorded_run`)."""
    (folder / "stdout.txt").write_text(done.stdout)
    (folder / "stderr.txt").write_text(done.stderr)


#: The shared bAbI run: task 1, 2 epochs of 17 steps, a checkpoint at each epoch's end only.
BABI_RUN_ARGS = ["--task", "1", "--epochs", "2", "--batch_size", "16", "--warmup_steps", "2",
                 "--seed", "1", "--download=false"]


def quiet_by_default_env(**extra):
    """The environment a user's shell gives a command: none of the variables that change
    its logging (TensorFlow's, ``--debug``'s, ``--tf_logs``'), of a cluster, or of the kill
    points of tests/train/test_finish.py; the checkout first on the path."""
    drop = ("TF_CPP_MIN_LOG_LEVEL", "TPR_KERAS_DEBUG", "TPR_KERAS_TF_LOGS", "TF_CONFIG",
            "TPR_KERAS_TEST_KILL_AT")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


@pytest.fixture(scope="session")
def tiny_babi_run(tmp_path_factory, babi_task1_writer):
    """``python -m train.babi`` trained once on a tiny task-1 folder (100 training stories,
    20 test ones: the data of :func:`tiny_babi`), as a user's shell starts it with stdout
    a pipe (``--verbose`` auto: plain lines) and one intra-op thread. It writes its
    SavedModel: tests/train/test_finish.py compares its variables with repaired runs',
    and tests/train/test_cli.py checks that a rerun adds no version and that its start-up
    wrote no TensorFlow noise (so it is a process of its own, not a preloaded one).
    Fields: ``model_dir`` (read it, or copy it to change it), ``data_dir``, ``args``
    (without ``--data_dir`` and ``--model_dir``), ``env``, the first run's ``stdout`` and
    ``stderr``."""
    env = quiet_by_default_env(TF_NUM_INTRAOP_THREADS="1")

    def build(folder):
        data = write_babi_data(folder / "babi", babi_task1_writer)
        keep_output(folder, run_command(
            ["train.babi", *BABI_RUN_ARGS, "--data_dir", data, "--model_dir", folder / "run"],
            folder, env, preloaded=False))

    folder = shared_folder(tmp_path_factory, "babi-run", build)
    return types.SimpleNamespace(**vars(recorded_run(folder, BABI_RUN_ARGS, env)),
                                 data_dir=folder / "babi")


#: The shared math run: TP-Transformer, tiny, 6 steps of 32 from 114 questions (one
#: epoch and a part), deterministic, a checkpoint every 2 steps (``--steps`` is added).
MATH_RUN_ARGS = ["--model", "tp_transformer", "--size", "tiny", "--module_weights",
                 "numbers__place_value=2", "--curve_questions", "16", "--batch_size", "32",
                 "--learning_rate", "3e-3", "--checkpoint_every_steps", "2",
                 "--steps_per_execution", "1", "--deterministic", "--download=false",
                 "--verbose", "0"]


@pytest.fixture(scope="session")
def tiny_math_run(tmp_path_factory):
    """``python -m train.math`` (:data:`MATH_RUN_ARGS`, ``--steps 6``) trained once on a
    copy of :func:`tiny_math`'s data. Fields as :func:`tiny_babi_run`'s (``args`` without
    ``--steps``). It writes its SavedModel (tests/train/test_math.py checks it is there);
    the runs that continue it pass ``--nosaved_model``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="")

    def build(folder):
        write_math_data(folder / "mathematics")
        keep_output(folder, run_command(
            ["train.math", *MATH_RUN_ARGS, "--steps", "6", "--data_dir",
             folder / "mathematics", "--model_dir", folder / "run"], folder, env))

    folder = shared_folder(tmp_path_factory, "math-run", build)
    return types.SimpleNamespace(**vars(recorded_run(folder, MATH_RUN_ARGS, env)),
                                 data_dir=folder / "mathematics")


#: The shared bAbI run cut by its time budget: 2 epochs of 17 steps, and text read without
#: ". ? !" (``--keep_sentence_ends=false``, MemN2N joint_paper's reading). No SavedModel:
#: its readers (a preset is made from its model.keras; train.export exports the preset)
#: serve none of its own, and tests/train/test_finish.py checks what such a run leaves.
CUT_RUN_ARGS = ["--task", "1", "--batch_size", "16", "--epochs", "2", "--warmup_steps", "5",
                "--keep_sentence_ends=false", "--download=false", "--verbose", "2",
                "--nosaved_model"]


@pytest.fixture(scope="session")
def tiny_babi_cut_run(tmp_path_factory, babi_task1_writer):
    """``python -m train.babi`` on the tiny task, cut by ``--max_train_minutes 0.00001``
    and then run again without it, which resumes it to its end. Fields as
    :func:`tiny_babi_run`'s (``stdout``: the second run's), with ``cut_stdout`` and
    ``cut_results`` (results.json as the cut run left it)."""
    env = quiet_by_default_env()

    def build(folder):
        data = write_babi_data(folder / "babi", babi_task1_writer)
        command = ["train.babi", *CUT_RUN_ARGS, "--data_dir", data, "--model_dir",
                   folder / "run"]
        cut = run_command([*command, "--max_train_minutes", "0.00001"], folder, env)
        (folder / "cut-stdout.txt").write_text(cut.stdout)
        shutil.copy(folder / "run" / "results.json", folder / "cut-results.json")
        keep_output(folder, run_command(command, folder, env))

    folder = shared_folder(tmp_path_factory, "babi-cut-run", build)
    return types.SimpleNamespace(**vars(recorded_run(folder, CUT_RUN_ARGS, env)),
                                 data_dir=folder / "babi",
                                 cut_stdout=(folder / "cut-stdout.txt").read_text(),
                                 cut_results=json.loads(
                                     (folder / "cut-results.json").read_text()))
