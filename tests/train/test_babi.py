"""``python -m train.babi`` end to end on a tiny generated task (subprocess)."""

import json
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests import preloaded_python
import tpr_keras.models.memn2n  # noqa: F401  (registers MemN2N for load_model)
import tpr_keras.models.tpr_rnn  # noqa: F401  (registers TPRRNN for load_model)

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_train(args, cwd, **environ):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", **environ)
    return preloaded_python.run(["-m", "train.babi", *args], cwd=cwd, env=env, timeout=600)


@pytest.mark.slow
def test_train_evaluate_and_export(tiny_babi_run):
    """The shared tiny run (2 epochs, one intra-op thread): its results, its table and its
    export. Its reruns, the finished one and the one resumed with more epochs, are
    tests/train/test_cli.py's."""
    model_dir = tiny_babi_run.model_dir
    results = json.loads((model_dir / "results.json").read_text())
    assert set(results["test_error_percent"]) == {"1"}
    assert 0.0 <= results["test_error_percent"]["1"] <= 100.0
    assert results["data"] == {"train": 270, "valid": 30, "test": 60, "vocabulary": 17,
                               "max_words": 6, "truncated": results["data"]["truncated"]}
    assert results["epochs"] == 2 and results["steps"] == 2 * 17
    assert results["train_seconds"] > 0
    # The machine it trained on, with the threads the run was given (CPU-hours).
    assert results["machine"]["cpus"] == os.cpu_count()
    assert results["machine"]["intra_op_threads"] == 1
    assert f"{os.cpu_count()} cores" in results["machine"]["description"]
    assert "task | valid error % | test error %" in tiny_babi_run.stdout
    # The export loads and answers with a word of the vocabulary.
    model = keras.models.load_model(model_dir / "export" / "model.keras")
    vocab = (model_dir / "export" / "vocab.txt").read_text().splitlines()
    assert vocab[:2] == ["<pad>", "<unk>"] and len(vocab) == model.vocabulary_size
    logits = model({"story": np.ones((1, 3, 6), "int32"), "question": np.ones((1, 6), "int32")})
    assert logits.shape == (1, 17)


def test_offline_without_data_says_what_to_pass(tmp_path):
    env_dir = tmp_path / "empty"
    env_dir.mkdir()
    done = run_train(["--task", "1", "--data_dir", str(env_dir), "--model_dir",
                      str(tmp_path / "run"), "--download=false"], tmp_path)
    assert done.returncode != 0
    assert "en-10k" in done.stderr


@pytest.mark.slow
def test_memn2n_trains_and_exports_through_the_same_path(tiny_babi, tmp_path):
    model_dir = tmp_path / "mem"
    done = run_train(["--model", "memn2n", "--task", "1", "--data_dir", str(tiny_babi),
                      "--model_dir", str(model_dir), "--epochs", "3", "--download=false",
                      "--verbose", "0"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((model_dir / "results.json").read_text())
    assert results["config"]["model"] == "memn2n"
    assert results["config"]["optimizer"] == "sgd" and results["config"]["batch_size"] == 32
    assert results["steps"] == 3 * 9  # 270 training samples, batch 32
    model = keras.models.load_model(model_dir / "export" / "model.keras")
    assert type(model).__name__ == "MemN2N"
    assert (model_dir / "export" / "babi" / "1" / "saved_model.pb").exists()


def resolved_recipe(argv):
    """What ``train.babi`` resolves for the flags ``argv`` (in a fresh process, as a run
    parses them): ``{"batch", "preset", "hp", "config"}`` (config: the TrainConfig)."""
    code = (
        "import dataclasses, json, train.babi\n"
        "from train.tasks.babi import BabiTask\n"
        f"task = BabiTask(train.babi.command().parse({argv!r}))\n"
        "batch = task.resolve_recipe()\n"
        "config = dataclasses.asdict(task.train_config({}))\n"
        "print(json.dumps({'batch': batch, 'preset': task.preset, 'hp': task.hp,\n"
        "                  'config': config}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_paper_size_flag_trains_with_the_recipe_modules_values():
    """``--task all --preset all_tasks_authors`` (a recorded command's flags, ``--preset``
    read as ``--size``): the sizes come
    from the paper size, the TrainConfig and optimizer from :mod:`tpr_keras.training.recipes`
    (the all-tasks recipe), not from the model class."""
    from tpr_keras.training.recipes import recipe

    got = resolved_recipe(["--task", "all", "--preset", "all_tasks_authors"])
    expected = recipe("tpr_rnn", "all_tasks")
    assert got["preset"] == "all_tasks_authors"
    assert got["hp"] == expected
    assert got["batch"] == expected["batch_size"]
    config = got["config"]
    for key in ("learning_rate", "epochs", "clip_norm", "warmup_steps", "halve_lr_below",
                "decay_every_epochs"):
        assert config[key] == expected[key], key


def test_the_memn2n_joint_protocol_has_no_early_stopping():
    """``--size joint_paper`` trains all its epochs (the authors' code tests the final
    weights), whatever the default ``--patience``, and reads text as their parser does."""
    got = resolved_recipe(["--task", "all", "--model", "memn2n", "--size", "joint_paper"])
    config = got["config"]
    assert config["patience"] is None and config["epochs"] == 50
    assert config["keep_best"] is False
    assert got["hp"]["keep_sentence_ends"] is False  # ". ?" dropped, as the authors' parser


def test_flag_help_states_the_tpr_rnn_recipes():
    """The help text (built without TensorFlow) restates Appendix A's two recipes; this keeps
    it equal to the recipes the run actually reads."""
    import re

    from tpr_keras.training.recipes import recipe

    from train import babi

    values = babi.command().flag_values
    helps = {name: values[name].help for name in values}
    single, joint = recipe("tpr_rnn", "single_task"), recipe("tpr_rnn", "all_tasks")
    for name in ("batch_size", "learning_rate", "beta_1", "beta_2"):
        match = re.search(r"[Dd]efault ([\d.]+) single-task, ([\d.]+) all", helps[name])
        assert match, f"--{name}: {helps[name]!r}"
        assert float(match.group(1)) == single[name], f"--{name} single-task"
        assert float(match.group(2)) == joint[name], f"--{name} all tasks"
    assert f"(default {single['clip_norm']:g})" in helps["clip_norm"]
    assert f"TPR-RNN default {single['warmup_steps']}" in helps["warmup_steps"]
