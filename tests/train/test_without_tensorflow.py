"""Every ``train.*`` command trains on JAX in a process where ``import tensorflow`` fails,
as on a machine with Keras, JAX and numpy alone: it writes results.json and the ``.keras``
model, prints the command that writes the SavedModel where TensorFlow is installed, and
keeps its compiled steps in ``--jax_cache_dir``."""

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
         "--jax_cache_dir", str(tmp_path / "jax-cache"), *args], env=env,
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["backend"] == "jax" and results["steps"] > 0
    assert (tmp_path / "export" / "model.keras").exists()
    assert "TensorFlow is not installed here, so no SavedModel was written" in done.stdout
    assert f"python -m train.export --keras_model {tmp_path / 'export' / 'model.keras'}" in (
        done.stdout)
    # --jax_cache_dir: the compiled training and evaluation steps are kept there
    assert f"Compiled steps cached in {tmp_path / 'jax-cache'}." in done.stdout
    assert len(list((tmp_path / "jax-cache").iterdir())) >= 2

