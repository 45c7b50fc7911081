"""``--recipe authors_code`` of ``train.math`` and ``train.babi`` builds the authors'
training step (docs/authors_code.md; its 20-step trajectories: tests/fidelity/)."""

import io
import json
import zipfile

import numpy as np
import pytest


def run(command_in_process, command, args):
    """``python -m <command> <args>``, without a SavedModel (the tests read the config
    and model.keras), in this process (``command_in_process``: the command's own
    ``cli.run``; what the run prints and writes is checked, not its process)."""
    return command_in_process(command, [*args, "--download=false", "--verbose", "0",
                                        "--nosaved_model"])


def saved_weights(model_dir):
    """``{h5 path: max |value|}`` of the exported ``model.keras``."""
    import h5py

    archive = zipfile.ZipFile(model_dir / "export" / "model.keras")
    weights = h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r")
    out = {}
    weights.visititems(lambda name, item: out.__setitem__(name, float(np.max(np.abs(item[()]))))
                       if hasattr(item, "shape") else None)
    return out


@pytest.mark.slow
def test_train_math_authors_code(tiny_math, tmp_path, command_in_process):
    done = run(command_in_process, "train.math", [
        "--data_dir", tiny_math, "--size", "tiny", "--recipe", "authors_code", "--steps", "2",
        "--batch_size", "32", "--model_dir", tmp_path])
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((tmp_path / "results.json").read_text())["config"]
    assert (config["recipe"], config["learning_rate"], config["beta_2"], config["clip_norm"],
            config["balance_modules"], config["batch_size"]) == (
        "authors_code", 1e-4, 0.995, 0.1, False, 32)
    assert "PyTorch-form Adam lr 0.0001" in done.stdout
    # PyTorch's nn.Linear initialisation: attention biases drawn in ±1/√64 (2 steps of
    # lr 1e-4 move a zero bias by at most 2e-4).
    attention = [m for name, m in saved_weights(tmp_path).items() if "attention" in name]
    assert attention and max(attention) <= 1 / 8 + 1e-3 and min(attention) > 0.05


def _train_babi_authors_code(command_in_process, data_dir, model_dir, *flags):
    """Two steps of ``train.babi --recipe authors_code`` on task 1; the run's config and
    the exported model's config."""
    done = run(command_in_process, "train.babi", [
        "--task", "1", "--data_dir", data_dir, "--recipe", "authors_code", "--steps", "2",
        "--epochs", "1", *flags, "--model_dir", model_dir])
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((model_dir / "results.json").read_text())["config"]
    model = json.loads(zipfile.ZipFile(model_dir / "export" / "model.keras").read("config.json"))
    return config, model["config"]


@pytest.mark.slow
def test_train_babi_authors_code(tiny_babi, tmp_path, command_in_process):
    config, model = _train_babi_authors_code(command_in_process, tiny_babi, tmp_path, "--size",
                                             "all_tasks_authors")
    assert (config["optimizer"], config["batch_size"], config["warmup_steps"],
            config["halve_lr_below"], config["pad_row"], config["beta_power_start"]) == (
        "nesterov_adam", 32, 51, None, "trained", "glorot_uniform")
    assert model["pad_row"] == "trained"
    # The two step differences have their own flags, which win over the recipe.
    (tmp_path / "switched").mkdir()
    config, model = _train_babi_authors_code(
        command_in_process, tiny_babi, tmp_path / "switched", "--size", "all_tasks_authors",
        "--pad_row", "zero", "--beta_power_start", "beta")
    assert (config["pad_row"], config["beta_power_start"]) == ("zero", "beta")
    assert model["pad_row"] == "zero"


@pytest.mark.slow
def test_train_babi_memn2n_authors_code(tiny_babi, tmp_path, command_in_process):
    config, model = _train_babi_authors_code(command_in_process, tiny_babi, tmp_path, "--model",
                                             "memn2n")
    assert (config["optimizer"], config["learning_rate"], config["loss_reduction"],
            config["matrix_norm"], config["clip_norm"], config["answer_time_words"]) == (
        "sgd", 0.005, "sum", "spectral", 40.0, True)
    assert {k: model[k] for k in ("sentence_encoding", "mask_empty_memories",
                                  "pad_gradient", "answer_time_words")} == {
        "sentence_encoding": "position_code", "mask_empty_memories": False,
        "pad_gradient": True, "answer_time_words": True}
