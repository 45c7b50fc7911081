"""``KERAS_BACKEND=jax python -m train.babi`` end to end on a tiny generated task: it trains
with the JAX trainer (numpy batches, numpy checkpoints), resumes, and its SavedModel,
written by a TensorFlow process, scores as the JAX model does (<= 1e-5), also served over
gRPC."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from tests.jax_processes import jax_env

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]

JAX_LOGITS = textwrap.dedent("""
    import os, sys
    os.environ["KERAS_BACKEND"] = "jax"
    import keras
    import numpy as np
    import tpr_keras.models.tpr_rnn  # registers TPRRNN

    model = keras.models.load_model(sys.argv[1])
    ids = dict(np.load(sys.argv[2]))
    np.save(sys.argv[3], keras.ops.convert_to_numpy(model(ids)))
""")


def run_jax(args, cwd):
    env = jax_env(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-m", "train.babi", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_jax_run_trains_resumes_and_its_tensorflow_export_scores_the_same(tiny_babi,
                                                                          tmp_path):
    model_dir = tmp_path / "run"
    args = ["--task", "1", "--data_dir", str(tiny_babi), "--model_dir", str(model_dir),
            "--epochs", "2", "--batch_size", "16", "--warmup_steps", "5",
            "--download=false", "--verbose", "2"]
    done = run_jax([*args, "--nosaved_model"], tmp_path)  # no TensorFlow process: none
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Backend JAX" in done.stdout
    results = json.loads((model_dir / "results.json").read_text())
    assert results["config"]["backend"] == "jax"
    assert results["outputs"]["saved_model"] is None
    assert not (model_dir / "export" / "babi").exists() and "serve with" not in done.stdout
    steps = results["steps"]
    assert steps == results["history"][-1]["step"] > 0
    assert all(np.isfinite(h["train_loss"]) for h in results["history"])
    assert sorted(p.name for p in (model_dir / "checkpoints").iterdir())[-1].endswith(".npz")

    again = run_jax([*args[:6], "--epochs", "3", *args[8:]], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Resumed from" in again.stdout
    results = json.loads((model_dir / "results.json").read_text())
    assert [h["epoch"] for h in results["history"]] == [1, 2, 3]
    assert results["steps"] == steps * 3 // 2

    # The SavedModel (TensorFlow) against the trained model on JAX, on the same ids.
    versions = sorted((model_dir / "export" / "babi").iterdir())
    served = tf.saved_model.load(str(versions[-1]))
    stories = ["Mary went to the kitchen.\nJohn moved to the garden.",
               "John moved to the garden.\nMary went to the office.\nMary went to the hall."]
    questions = ["Where is Mary?", "Where is John?"]
    ids = served.signatures["tokenize"](story=tf.constant(stories),
                                        question=tf.constant(questions))
    np.savez(tmp_path / "ids.npz", story=ids["story_ids"].numpy(),
             question=ids["question_ids"].numpy())
    logits_path = tmp_path / "logits.npy"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", JAX_LOGITS,
                           str(model_dir / "export" / "model.keras"), str(tmp_path / "ids.npz"),
                           str(logits_path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    logits = np.load(logits_path)
    out = served.signatures["serving_default"](story=tf.constant(stories),
                                               question=tf.constant(questions))
    scores = out["scores"].numpy()
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    top = -np.sort(-probabilities, axis=-1)[:, :scores.shape[1]]
    np.testing.assert_allclose(scores, top, atol=1e-5)

    # And it answers through the server (gRPC, the official stubs), as the signature does.
    from tensorflow_serving.config import model_server_config_pb2

    from serving.client import BabiClient
    from serving.core.manager import ModelManager
    from serving.model_server.server import ModelServer

    config = model_server_config_pb2.ModelConfig(
        name="babi", base_path=str(model_dir / "export" / "babi"), model_platform="tensorflow")
    server = ModelServer(ModelManager([config]), port=0).start()
    try:
        with BabiClient(f"127.0.0.1:{server.port}") as client:
            answers = client.ask_batch(stories, questions)
    finally:
        server.stop(grace=1)
    assert [a.answer for a in answers] == [w.decode() for w in out["answer"].numpy()]
    np.testing.assert_allclose([[p for _, p in a.candidates] for a in answers], top, atol=1e-5)
    assert {a.version for a in answers} == {int(versions[-1].name)}


def test_a_tf_distribute_strategy_on_jax_is_a_usage_error(tiny_babi, tmp_path):
    done = run_jax(["--task", "1", "--data_dir", str(tiny_babi), "--strategy", "mirrored",
                    "--model_dir", str(tmp_path / "run"), "--download=false"], tmp_path)
    assert done.returncode != 0
    assert "--strategy mirrored is a tf.distribute strategy" in done.stderr + done.stdout
