"""Every ``train.*`` command trains on JAX in a process where ``import tensorflow`` fails,
as on a machine with Keras, JAX and numpy alone: it writes results.json and the ``.keras``
model, and prints the command that writes the SavedModel where TensorFlow is installed."""

import json
import pathlib
import subprocess
import sys

import pytest

from tests.jax_processes import jax_env

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]

WITHOUT_TENSORFLOW = (
    "import runpy, sys\n"
    "sys.modules['tensorflow'] = None  # any import of tensorflow now raises ImportError\n"
    "module, sys.argv = sys.argv[1], sys.argv[1:]\n"
    "runpy.run_module(module, run_name='__main__')\n")

COMMANDS = {
    "babi": ("tiny_babi", ["--task", "1", "--epochs", "1", "--batch_size", "32",
                           "--download=false"]),
    "entailment": ("tiny_entailment", ["--dim", "8", "--roles", "4", "--epochs", "1",
                                       "--batch_size", "8"]),
    "math": ("tiny_math", ["--size", "tiny", "--steps", "2", "--batch_size", "32",
                           "--download=false"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_trains_on_jax_without_tensorflow(command, request, tmp_path):
    fixture, args = COMMANDS[command]
    data_dir = request.getfixturevalue(fixture)
    env = jax_env(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, f"train.{command}", "--data_dir",
         str(data_dir), "--model_dir", str(tmp_path), "--verbose", "0",
         *args], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["backend"] == "jax" and results["steps"] > 0
    assert (tmp_path / "export" / "model.keras").exists()
    assert "TensorFlow is not installed here, so no SavedModel was written" in done.stdout
    assert f"python -m train.export --keras_model {tmp_path / 'export' / 'model.keras'}" in (
        done.stdout)


@pytest.mark.slow
def test_a_jax_run_keeps_its_compiled_steps_in_the_cache_folder(tiny_math, tmp_path):
    """``--jax_cache_dir``: the compiled programs land there, and the run says so."""
    cache = tmp_path / "jax-cache"
    env = jax_env(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "train.math", "--data_dir", str(tiny_math), "--model_dir",
         str(tmp_path / "run"), "--verbose", "0", "--jax_cache_dir", str(cache),
         "--nosaved_model", *COMMANDS["math"][1]], env=env, capture_output=True, text=True,
        timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert f"Compiled steps cached in {cache}." in done.stdout
    assert len(list(cache.iterdir())) >= 2  # at least the training and the evaluation step
