"""``python -m train.math`` end to end on tiny generated Mathematics files: the shared run
and the JAX run in processes of their own, the others through the same command line in
this process."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tests.jax_processes import jax_env

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["tp_transformer", "transformer"])
def test_train_math_results_and_export(tiny_math, tmp_path, model, request,
                                       command_in_process):
    if model == "tp_transformer":  # the shared run: --size tiny, module weights, a curve
        run = request.getfixturevalue("tiny_math_run")
        stdout, model_dir, data_dir = run.stdout, run.model_dir, run.data_dir
    else:  # --size left at its default, auto: tiny on this CPU; run in this process
        done = command_in_process("train.math", [
            "--data_dir", tiny_math, "--model", model, "--steps", "6", "--batch_size", "32",
            "--learning_rate", "3e-3", "--model_dir", tmp_path, "--download=false",
            "--verbose", "0"])
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        stdout, model_dir, data_dir = done.stdout, tmp_path, tiny_math
    results = json.loads((model_dir / "results.json").read_text())
    assert list(results["interpolate_accuracy_percent"]) == ["numbers__place_value"]
    assert list(results["extrapolate_accuracy_percent"]) == ["numbers__place_value_big"]
    # 16 interpolate questions: accuracy is a multiple of 6.25 %.
    assert results["interpolate_accuracy_percent"]["numbers__place_value"] % 6.25 == 0
    assert results["steps"] == 6
    assert results["summary"]["interpolate"]["modules"] == 1
    assert (model_dir / "export" / "math" / "1" / "saved_model.pb").exists()
    assert "interpolate |       1 |" in stdout
    # Flags override the recipe; the rest of it (β2, clip) comes from the tiny preset.
    config = results["config"]
    assert (config["preset"], config["batch_size"], config["learning_rate"]) == ("tiny", 32, 3e-3)
    assert (config["steps"], config["beta_2"], config["clip_norm"]) == (6, 0.995, 0.1)
    if model == "transformer":
        assert config["preset_flag"] == "auto"
        assert "Size auto -> tiny (no GPU" in stdout
    else:
        assert "Size tiny: Adam lr 0.003" in stdout
        # (one module: its weight draws the plain balanced pass; the flag is recorded)
        assert config["module_weights"] == "numbers__place_value=2"
        assert_curve_matches_the_final_score(results)
        assert_the_kept_epoch_was_chosen_on_held_out_questions(results, model_dir, data_dir)


def kept_epoch(history):
    """The epoch whose weights the run kept: the trainer's early-stopping rule (lowest
    validation error, ties to a loss lower by more than 1e-3) over the history."""
    from tpr_keras.training.early_stopping import EarlyStopping

    rule, best, kept = EarlyStopping(), (float("inf"), float("inf")), None
    for epoch, record in enumerate(history):
        if rule.improves(record["valid_error_percent"], record["valid_loss"], *best):
            best, kept = (record["valid_error_percent"], record["valid_loss"]), epoch
    return kept


def assert_curve_matches_the_final_score(results):
    """``--curve_questions 16`` scored all 16 interpolate questions after every epoch; the
    final score is the kept (best-validation) epoch's, so its curve point equals it."""
    history = results["history"]
    assert len(history) == 2  # 6 steps of 32 from 114 questions: one epoch and a part
    curve = [r["interpolate_exact_match_percent"]["numbers__place_value"] for r in history]
    kept = kept_epoch(history)
    assert curve[kept] == results["interpolate_accuracy_percent"]["numbers__place_value"]
    assert all(value % 6.25 == 0 for value in curve)
    assert results["config"]["curve_questions"] == 16


def assert_the_kept_epoch_was_chosen_on_held_out_questions(results, run_dir, data_dir):
    """The run validated on 6 of its 120 training questions (5 %), drawn again here from the
    same files: the kept model's loss on them is the kept epoch's validation loss, and its
    loss on the interpolate test file is not."""
    import keras

    from tpr_keras.data import mathematics
    from tpr_keras.models.tp_transformer import sequence_compute_fn

    assert results["validation"]["source"] == results["config"]["validation_source"] == (
        "heldout_train")
    assert json.loads((run_dir / "validation.json").read_text()) == results["validation"]
    model = keras.models.load_model(run_dir / "export" / "model.keras")
    vocab = mathematics.CharVocabulary.load(run_dir / "export" / "vocab.txt")
    data = mathematics.load_mathematics(data_dir, vocab=vocab, download=False)
    held = mathematics.hold_out(data.train, 1000)
    assert results["validation"]["questions"] == held.questions == {"numbers__place_value": 6}
    compute = sequence_compute_fn()

    def loss(split):
        return float(np.concatenate([
            np.asarray(compute(model, features, labels, False)["loss"])
            for features, labels in mathematics.make_dataset(split, 256)]).mean())

    valid_loss = results["history"][kept_epoch(results["history"])]["valid_loss"]
    assert loss(held.validation) == pytest.approx(valid_loss, rel=1e-4, abs=1e-5)
    assert loss(data.interpolate["numbers__place_value"]) != pytest.approx(valid_loss,
                                                                          rel=1e-3)


@pytest.mark.slow
def test_train_math_on_jax_scores_what_its_tensorflow_export_scores(tiny_math, tmp_path):
    """Under KERAS_BACKEND=jax: the JAX trainer on numpy batches, the greedy exact match on
    JAX, and the SavedModel (written by TensorFlow) giving the same greedy answers."""
    env = jax_env(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "train.math", "--data_dir", str(tiny_math), "--size", "tiny",
         "--steps", "6", "--batch_size", "32", "--learning_rate", "3e-3",
         "--curve_questions", "16",
         "--model_dir", str(tmp_path), "--download=false", "--verbose", "0"],
        env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["backend"] == "jax" and results["steps"] == 6
    assert_curve_matches_the_final_score(results)
    assert_the_kept_epoch_was_chosen_on_held_out_questions(results, tmp_path, tiny_math)
    accuracy = results["interpolate_accuracy_percent"]["numbers__place_value"]
    assert accuracy % 6.25 == 0
    import tensorflow as tf

    served = tf.saved_model.load(str(tmp_path / "export" / "math" / "1"))
    lines = (tiny_math / "interpolate" / "numbers__place_value.txt").read_text().splitlines()
    questions, answers = lines[0::2], lines[1::2]
    out = served.signatures["serving_default"](question=tf.constant(questions))
    got = [a.decode() for a in out["answer"].numpy()]
    assert 100.0 * np.mean([g == a for g, a in zip(got, answers)]) == accuracy


@pytest.mark.slow
def test_a_run_that_continued_a_preset_becomes_a_preset_naming_its_parent(
        tiny_math_run, tmp_path, command_in_process):
    """``--init_from`` a preset, then ``train.save_preset``: the new preset's metadata names
    the parent's weights (SHA-256), its training command and commit, and the commit at
    which the name meant that parent. The parent is the shared tiny run; the continued run
    and save_preset run in this process."""
    from tpr_keras.presets.preset_files import sha256_file

    data_dir = tiny_math_run.data_dir
    common = ["--data_dir", str(data_dir), "--model", "tp_transformer", "--size", "tiny",
              "--batch_size", "32", "--download=false", "--verbose", "0"]
    metadata = {}
    for name, model_dir in [("a", tiny_math_run.model_dir), ("b", tmp_path / "run-b")]:
        if name == "b":
            done = command_in_process("train.math", [
                *common, "--steps", "3", "--init_from", tmp_path / "preset-a", "--model_dir",
                model_dir, "--nosaved_model"])  # a preset is made from model.keras
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        saved = command_in_process("train.save_preset", [
            "--model_dir", model_dir, "--output", tmp_path / f"preset-{name}", "--data_dir",
            data_dir, "--sample", "4", "--allow_dirty", "--results_json",
            f"results/math/{name}/results.json"])
        assert saved.returncode == 0, saved.stdout[-2000:] + saved.stderr[-3000:]
        metadata[name] = json.loads((tmp_path / f"preset-{name}" / "metadata.json").read_text())
    a, b = metadata["a"]["training"], metadata["b"]["training"]
    assert "parent" not in a and "--init_from" in b["command"]
    assert b["parent"] == {
        "preset": "preset-a", "command": a["command"], "commit": a["source"]["commit"],
        "results_json": "results/math/a/results.json", "at_commit": b["source"]["commit"],
        "weights_sha256": sha256_file(tmp_path / "preset-a" / "model.weights.h5")}
