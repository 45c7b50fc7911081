"""A ``train.*`` run is finished only when everything it makes exists (``train/finish.py``).

Real ``python -m train.babi`` processes (forked from a Python that has imported
TensorFlow: ``tests/preloaded_python.py``) on a tiny task are killed with SIGKILL at named
points of the finish (``TPR_KERAS_TEST_KILL_AT``, :func:`tpr_keras.atomic_files.kill_point`)
and the same command is run again: the run then ends servable, its SavedModel holding the
weights of an unbroken run. A finished run that lacks its model and SavedModel (as runs
finished before results.json came last can) gets them back from a rerun, without training;
one trained with ``--nosaved_model`` gets its SavedModel only from a rerun without it. The
reruns of finished runs, which train nothing and are not killed, run in the test process
(``command_in_process``: the command's own ``cli.run``).
"""

import json
import os
import pathlib
import shlex
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import tpr_keras.models.tpr_rnn  # noqa: F401  (registers TPRRNN for load_model)
from tests import preloaded_python
from tpr_keras.atomic_files import KILL_AT_ENV

REPO = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT = 600


@pytest.fixture
def rerun(command_in_process):
    """``rerun(shared, model_dir, args=None) -> stdout``: ``python -m train.babi`` with
    ``args`` (default the shared run's, ``--verbose 0``) and the data of the shared run
    ``shared``, on ``model_dir``, in this process; asserts it succeeded."""

    def run(shared, model_dir, args=None):
        args = [*shared.args, "--verbose", "0"] if args is None else args
        done = command_in_process("train.babi", [
            *args, "--data_dir", shared.data_dir, "--model_dir", model_dir])
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done.stdout

    return run


@pytest.fixture
def start(tiny_babi_run):
    """``start(model_dir, kill_at=None) -> preloaded_python.Process``: ``python -m
    train.babi`` with the flags and data of the shared tiny run (2 epochs of 17 steps; a
    checkpoint at each epoch's end only, so the second is the last; one thread), killed by
    itself at ``kill_at``; every process still running when the test ends is killed (by its
    pid)."""
    started = []

    def launch(model_dir, kill_at=None):
        env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", KILL_AT_ENV)}
        env.update(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", TF_NUM_INTRAOP_THREADS="1")
        if kill_at:
            env[KILL_AT_ENV] = kill_at
        started.append(preloaded_python.spawn(
            ["-m", "train.babi", *tiny_babi_run.args, "--verbose", "0",
             "--data_dir", str(tiny_babi_run.data_dir), "--model_dir", str(model_dir)],
            env=env, cwd=REPO))
        return started[-1]

    yield launch
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def wait(process, returncode=0):
    """The process's stdout once it ended with ``returncode`` (-9: killed)."""
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == returncode, out[-2000:] + err[-3000:]
    return out


def saved_arrays(version_dir):
    """The SavedModel's variables as sorted ``(dtype, shape, bytes)``: the order of its
    captured variables differs between exports of the same model."""
    reader = tf.train.load_checkpoint(str(version_dir / "variables" / "variables"))
    arrays = [np.asarray(reader.get_tensor(k)) for k in reader.get_variable_to_shape_map()
              if k.endswith("VARIABLE_VALUE")]
    return sorted((str(a.dtype), a.shape, a.tobytes()) for a in arrays)


def served_version(model_dir):
    """The version folder results.json names; asserts it is servable."""
    outputs = json.loads((model_dir / "results.json").read_text())["outputs"]
    version = model_dir / outputs["saved_model"]
    assert (version / "saved_model.pb").is_file(), version
    assert (version / "variables" / "variables.index").is_file(), version
    assert (model_dir / outputs["model"]).is_file() and (model_dir / outputs["vocab"]).is_file()
    return version


def hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) \
        if folder.is_dir() else []


@pytest.mark.slow
def test_killed_at_each_point_of_the_finish_the_rerun_ends_servable_as_unbroken(
        start, rerun, tiny_babi_run, tmp_path):
    """One run killed at three points in turn and rerun each time; beside it (a second
    lane, for the time: in this process while the killed run's process works) a copy of
    the unbroken run (the shared one) that lost its SavedModel and then its model.keras,
    rerun each time."""
    run, unbroken, repaired = tmp_path / "run", tiny_babi_run.model_dir, tmp_path / "repaired"
    # Mid-checkpoint: the last checkpoint is written but not yet in place.
    wait(start(run, kill_at="mid-checkpoint:2"), -9)
    assert 'model_checkpoint_path: "ckpt-17"' in (run / "checkpoints" / "checkpoint").read_text()
    assert [n.split("-tmp-")[0] for n in hidden(run / "checkpoints")] == [".ckpt-34"]
    assert not (run / "results.json").exists() and not (run / "export").exists()
    arrays = saved_arrays(served_version(unbroken))
    lose_export(unbroken, repaired)

    # Mid-export: the rerun trains epoch 2 again and is killed before the SavedModel's rename.
    killed = start(run, kill_at="mid-export")
    check_export_repaired(rerun(tiny_babi_run, repaired), repaired, arrays)
    out = wait(killed, -9)
    assert "Resumed from" in out and "at epoch 2, step 17" in out
    assert hidden(run / "checkpoints") == []  # the stale checkpoint temporary is gone
    assert (run / "export" / "model.keras").is_file()
    assert [n.split("-tmp-")[0] for n in hidden(run / "export" / "babi")] == [".export"]
    assert not [p for p in (run / "export" / "babi").iterdir() if p.name.isdigit()]

    # Between the model (and SavedModel) and the results: results.json comes last.
    killed = start(run, kill_at="before-results")
    (repaired / "export" / "model.keras").unlink()
    check_model_repaired(rerun(tiny_babi_run, repaired), repaired, unbroken)
    out = wait(killed, -9)
    assert "Removed 1 stale temporary of an interrupted run (export/babi/.export-tmp-" in out
    assert "Resumed from" in out and "at epoch 3, step 34" in out
    assert hidden(run / "export" / "babi") == []
    assert (run / "export" / "babi" / "1" / "saved_model.pb").is_file()
    assert not (run / "results.json").exists()  # so the run is not finished yet

    finishing = start(run)
    out = rerun(tiny_babi_run, repaired)  # now complete: nothing to do
    assert "model and SavedModel " in out and "in place, nothing written" in out
    assert "SavedModel for TF Serving: " in wait(finishing)
    assert saved_arrays(served_version(run)) == arrays
    assert json.loads((run / "results.json").read_text())["test_error_percent"] == \
        json.loads((unbroken / "results.json").read_text())["test_error_percent"]


@pytest.mark.slow
def test_a_run_without_a_saved_model_gets_one_only_from_a_rerun_that_asks(
        tiny_babi_cut_run, rerun, tmp_path):
    """The shared cut run trained with ``--nosaved_model`` (both its processes): its
    model.keras and vocab.txt, results.json naming no SavedModel, no ``export/babi/``, and
    in place of the "serve with" line the train.export command that writes it. A copy rerun
    with the flag trains and exports nothing and says nothing was missing; rerun without
    it (the default), it exports the missing SavedModel from model.keras."""
    from train import export

    cut = tiny_babi_cut_run
    assert "--nosaved_model" in cut.args
    finished = json.loads((cut.model_dir / "results.json").read_text())
    for stdout, results in [(cut.cut_stdout, cut.cut_results), (cut.stdout, finished)]:
        assert results["outputs"] == {"model": os.path.join("export", "model.keras"),
                                      "vocab": os.path.join("export", "vocab.txt"),
                                      "saved_model": None}
        assert "SavedModel for TF Serving" not in stdout and "serve with" not in stdout
        lines = [line for line in stdout.splitlines() if line.startswith("No SavedModel")]
        assert len(lines) == 1, stdout
        prefix = "No SavedModel (--nosaved_model); to serve the model, write it with: python "
        assert lines[0].startswith(prefix + "-m train.export "), lines[0]
        flags = export.command().parse(shlex.split(lines[0][len(prefix):])[2:])
        assert (flags.keras_model, flags.export_dir, flags.model_name) == (
            str(cut.model_dir / "export" / "model.keras"), str(cut.model_dir / "export"), "babi")
        assert (flags.max_story_sentences, flags.keep_sentence_ends) == (70, False)
    assert sorted(os.listdir(cut.model_dir / "export")) == ["model.keras", "vocab.txt"]

    run = tmp_path / "run"
    shutil.copytree(cut.model_dir, run)
    line = trained_nothing(rerun(cut, run, cut.args), run)
    assert line.endswith("in " + str(run / "results.json") + "; model in place, no SavedModel "
                         "(--nosaved_model), nothing written. Use a new --model_dir, or a "
                         "larger --epochs to continue."), line
    assert sorted(os.listdir(run / "export")) == ["model.keras", "vocab.txt"]
    assert json.loads((run / "results.json").read_text())["outputs"]["saved_model"] is None

    line = trained_nothing(rerun(cut, run, [a for a in cut.args if a != "--nosaved_model"]),
                           run)
    assert "its outputs were incomplete: exported the missing SavedModel " in line, line
    assert served_version(run) == run / "export" / "babi" / "1"
    assert json.loads((run / "results.json").read_text())["outputs"]["saved_model"] == \
        os.path.join("export", "babi", "1")


def lose_export(unbroken, run):
    """A copy of the finished run ``unbroken`` at ``run`` as the issue found one: finished
    before results.json came last and named its outputs, and killed mid-export (a
    temporary, no version)."""
    shutil.copytree(unbroken, run)
    results = json.loads((run / "results.json").read_text())
    del results["outputs"]
    (run / "results.json").write_text(json.dumps(results))
    shutil.rmtree(run / "export" / "babi" / "1")
    (run / "export" / "babi" / ".export-tmp-abcd1234" / "variables").mkdir(parents=True)


def trained_nothing(out, run):
    """The one line of a rerun of a finished run; asserts it trained and evaluated nothing."""
    lines = [line for line in out.splitlines() if line.startswith("Already trained")]
    assert len(lines) == 1, out
    assert "Resumed from" not in out and "Results:" not in out
    assert 'model_checkpoint_path: "ckpt-34"' in (run / "checkpoints" / "checkpoint").read_text()
    return lines[0]


def check_export_repaired(out, run, arrays):
    line = trained_nothing(out, run)
    assert "its outputs were incomplete: removed 1 stale temporary of an interrupted run " \
        "(export/babi/.export-tmp-abcd1234); exported the missing SavedModel " in line, line
    assert "rebuilt" not in line
    assert hidden(run / "export" / "babi") == []
    assert saved_arrays(served_version(run)) == arrays
    assert json.loads((run / "results.json").read_text())["outputs"]["saved_model"] == \
        "export/babi/1"


def check_model_repaired(out, run, unbroken):
    line = trained_nothing(out, run)
    assert "its outputs were incomplete: rebuilt " in line, line
    assert "model.keras and vocab.txt from the best weights." in line
    assert "removed" not in line and "exported" not in line
    rebuilt = keras.models.load_model(run / "export" / "model.keras").get_weights()
    trained = keras.models.load_model(unbroken / "export" / "model.keras").get_weights()
    assert len(rebuilt) == len(trained)
    assert all(np.array_equal(a, b) for a, b in zip(rebuilt, trained))
