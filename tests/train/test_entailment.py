"""``python -m train.entailment`` end to end on tiny generated files (subprocess)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests import preloaded_python
from tests.jax_processes import jax_env

REPO = pathlib.Path(__file__).resolve().parents[2]
@pytest.mark.slow
@pytest.mark.parametrize("cell,recipe", [("tpru", []), ("gru", ["--recipe", "paper"])])
def test_train_entailment_writes_results(tiny_entailment, tmp_path, cell, recipe):
    """Without a GPU, the default recipe is cpu: XLA, and no time budget once --epochs is
    given; --recipe paper is §5.1 as published (no XLA unless asked)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = preloaded_python.run(
        ["-m", "train.entailment", "--data_dir", str(tiny_entailment),
         "--model_dir", str(tmp_path), "--cell", cell, "--dim", "8", "--roles", "4",
         "--epochs", "2", "--batch_size", "8", "--verbose", "0", *recipe],
        env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["accuracy_percent"]) == {
        "validate", "test_easy", "test_hard", "test_big", "test_massive", "test_exam"}
    # 8 pairs per eval file: accuracy is a multiple of 12.5 %.
    assert all(v % 12.5 == pytest.approx(0) or v % 12.5 == pytest.approx(12.5)
               for v in results["accuracy_percent"].values())
    assert results["steps"] == 2 * 4 and results["epochs"] == 2
    import tensorflow as tf

    config = results["config"]
    expected = "paper" if recipe or tf.config.list_physical_devices("GPU") else "cpu"
    assert (config["recipe"], config["jit_compile"], config["max_train_minutes"]) == (
        expected, expected == "cpu", None)
    assert ("Recipe paper" if recipe else f"Recipe auto -> {expected}") in done.stdout
    assert (tmp_path / "export" / "model.keras").exists()
    assert (tmp_path / "export" / "entailment" / "1" / "saved_model.pb").exists()


def test_flag_help_states_the_size_and_recipe_defaults():
    """The help text names the recipe's and paper size's values (it is built without
    loading TensorFlow, so it cannot read them); this keeps the two from drifting apart."""
    import re

    from tpr_keras.models.entailment import entailment_sizes as sizes
    from tpr_keras.training.recipes.entailment import PAPER_RECIPE

    from train import entailment

    values = entailment.command().flag_values
    helps = {name: values[name].help for name in values}
    expected = {"dim": sizes.UNITS, "roles": sizes.NUM_ROLES,
                **{k: PAPER_RECIPE[k] for k in ("batch_size", "learning_rate", "epochs",
                                                 "decay_every_epochs", "clip_norm")},
                "augment": "on" if PAPER_RECIPE["augment"] else "off"}
    for name, value in expected.items():
        match = re.search(r"default: the (?:recipe|size)'s, ([^)]+)\)", helps[name])
        assert match, f"--{name}: {helps[name]!r}"
        stated = match.group(1)
        if isinstance(value, str):
            assert stated == value, name
        else:
            assert float(stated) == float(value), f"--{name} help says {stated}, not {value}"
    assert "by 10" in helps["decay_every_epochs"] and PAPER_RECIPE["decay_factor"] == 0.1


@pytest.mark.slow
def test_train_entailment_on_jax_with_mixed_bfloat16(tiny_entailment, tmp_path):
    """Under KERAS_BACKEND=jax: the JAX trainer on numpy batches, mixed_bfloat16 recorded
    in the saved model's config, and the SavedModel written by a TensorFlow process."""
    env = jax_env(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "train.entailment", "--data_dir", str(tiny_entailment),
         "--model_dir", str(tmp_path), "--dim", "8", "--roles", "4", "--epochs", "2",
         "--batch_size", "8", "--verbose", "0", "--dtype_policy", "mixed_bfloat16"],
        env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["backend"] == "jax"
    assert results["model_config"]["dtype"] == "mixed_bfloat16"
    assert results["steps"] == 2 * 4
    assert all(v % 12.5 == pytest.approx(0) or v % 12.5 == pytest.approx(12.5)
               for v in results["accuracy_percent"].values())
    assert (tmp_path / "export" / "entailment" / "1" / "saved_model.pb").exists()
