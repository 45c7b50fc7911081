"""JaxTrainer's step is the TensorFlow Trainer's step: the same weights after the same
batches (sums, clipping, learning-rate warm-up), weight-0 filler rows change nothing, a
NaN is skipped, dynamic loss scaling halves its scale on overflow without a
re-initialisation, and a run resumes from its numpy checkpoints. The JAX side runs in a
subprocess (the backend is chosen before Keras is imported)."""

import json
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.training import Trainer, TrainConfig, sparse_classification
from tests.jax_processes import jax_env

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]

COMMON = textwrap.dedent("""
    import keras
    import numpy as np

    INITIAL = None  # path of the initial weights, the same on both backends

    def model_fn():
        inputs = keras.Input((6,), name="x")
        hidden = keras.layers.Dense(16, activation="tanh")(inputs)
        model = keras.Model({"x": inputs}, keras.layers.Dense(4)(hidden))
        if INITIAL:
            with np.load(INITIAL) as weights:
                model.set_weights([weights[f"w{i}"] for i in range(len(weights.files))])
        return model

    def optimizer_fn():
        return keras.optimizers.Adam(0.05)

    def config(**overrides):
        from tpr_keras.training import TrainConfig
        return TrainConfig(**{"epochs": 2, "verbose": 0, "clip_norm": 0.5,
                              "warmup_steps": 3, "learning_rate": 0.05, **overrides})

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6)).astype("float32")
    Y = rng.integers(0, 4, size=(40,)).astype("int32")
""")

JAX_SIDE = COMMON + textwrap.dedent("""
    import json, sys
    from tpr_keras.training import JaxTrainer, sparse_classification

    folder = sys.argv[1]
    INITIAL = folder + "/initial.npz"

    def batches(x, y, size=8, pad_to=None):
        out = []
        for i in range(0, len(x), size):
            xb, yb = x[i:i + size], y[i:i + size]
            weight = np.ones(len(xb), "float32")
            if pad_to and len(xb) < pad_to:  # weight-0 filler rows, as NumpyBatches makes
                fill = pad_to - len(xb)
                xb = np.concatenate([xb, np.repeat(xb[:1], fill, 0)])
                yb = np.concatenate([yb, np.repeat(yb[:1], fill, 0)])
                weight = np.concatenate([weight, np.zeros(fill, "float32")])
            out.append(({"x": xb}, {"y": yb, "weight": weight}))
        return out

    out = {}
    # 1. Batches of 12 (the last of 4 rows), with filler rows to 12: same as TF's.
    trainer = JaxTrainer(model_fn, optimizer_fn, sparse_classification("y"), config(),
                         folder + "/plain")
    history = trainer.fit(lambda epoch: batches(X, Y, 12, pad_to=12))
    out["weights"] = [w.tolist() for w in trainer.model.get_weights()]
    out["loss"] = [h["train_loss"] for h in history]
    # 2. A NaN batch is skipped (no update), the rest trains.
    bad = X.copy(); bad[3, 0] = np.nan
    trainer = JaxTrainer(model_fn, optimizer_fn, sparse_classification("y"),
                         config(epochs=1, reinit_on_nan=False), folder + "/nan")
    trainer.fit(lambda epoch: batches(bad, Y, 8))
    out["nan_skipped"] = trainer.state.value("skipped_steps")
    out["nan_steps"] = trainer.state.value("global_step")
    # 3. Loss scaling from a scale that overflows: halved until it fits, no re-init.
    trainer = JaxTrainer(model_fn, optimizer_fn, sparse_classification("y"),
                         config(epochs=4, loss_scale=True), folder + "/scaled")
    trainer.state.loss_scale.assign(2.0 ** 140)  # float32 overflows at 2**128
    history = trainer.fit(lambda epoch: batches(X, Y, 8))
    out["scaled"] = {"skipped": trainer.state.value("skipped_steps"),
                     "scale": trainer.state.value("loss_scale"), "reinits": trainer.reinits,
                     "loss": history[-1]["train_loss"]}
    # 4. Resume: 1 epoch, then a second fit to 2 epochs continues from the checkpoint.
    trainer = JaxTrainer(model_fn, optimizer_fn, sparse_classification("y"),
                         config(epochs=1), folder + "/resume")
    trainer.fit(lambda epoch: batches(X, Y, 12, pad_to=12))
    trainer = JaxTrainer(model_fn, optimizer_fn, sparse_classification("y"), config(),
                         folder + "/resume")
    trainer.fit(lambda epoch: batches(X, Y, 12, pad_to=12))
    out["resumed_from"] = trainer.restored_from
    out["resumed_weights"] = [w.tolist() for w in trainer.model.get_weights()]
    json.dump(out, open(folder + "/jax.json", "w"))
""")


def tensorflow_side(tmp_path):
    """The shared definitions on TensorFlow, with the initial weights written for JAX."""
    namespace = {}
    exec(COMMON, namespace)
    keras.utils.set_random_seed(1)
    weights = namespace["model_fn"]().get_weights()
    np.savez(tmp_path / "initial.npz", **{f"w{i}": w for i, w in enumerate(weights)})
    namespace["INITIAL"] = str(tmp_path / "initial.npz")
    return namespace


DATA_PARALLEL = textwrap.dedent("""
    import json, sys
    import jax
    from tpr_keras.training import JaxTrainer, sparse_classification

    folder = sys.argv[1]
    INITIAL = folder + "/initial.npz"
    assert len(jax.devices()) == 2
    keras.distribution.set_distribution(keras.distribution.DataParallel(
        devices=keras.distribution.list_devices()))
    weight = np.concatenate([np.ones(4, "float32"), np.zeros(8, "float32")])

    def batches(epoch):  # batches of 12, the last of 4 pairs filled to 12
        for i in range(0, 40, 12):
            xb, yb = X[i:i + 12], Y[i:i + 12]
            fill = 12 - len(xb)
            yield ({"x": np.concatenate([xb, np.repeat(xb[:1], fill, 0)])},
                   {"y": np.concatenate([yb, np.repeat(yb[:1], fill, 0)]),
                    "weight": np.ones(12, "float32") if not fill else weight})

    trainer = JaxTrainer(model_fn, optimizer_fn, sparse_classification("y"), config(),
                         folder + "/dp")
    kernel = trainer.model.trainable_variables[0].value
    trainer.fit(batches)
    json.dump({"weights": [w.tolist() for w in trainer.model.get_weights()],
               "replicated": len(kernel.sharding.device_set)},
              open(folder + "/dp.json", "w"))
""")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One JAX process runs JAX_SIDE, then DATA_PARALLEL (its 2 forced host devices; the
    one-device trainers run on the first), while TensorFlow's Trainer trains the reference
    both compare with: ``{"jax", "dp", "tf_weights", "tf_history"}``. A JAX process's
    start and its trainers' compilations cost several seconds, the same for both."""
    tmp_path = tmp_path_factory.mktemp("jax_trainer")
    namespace = tensorflow_side(tmp_path)
    env = jax_env(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3",
                  XLA_FLAGS="--xla_force_host_platform_device_count=2")
    process = subprocess.Popen([sys.executable, "-c", JAX_SIDE + DATA_PARALLEL, str(tmp_path)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        x, y = namespace["X"], namespace["Y"]
        data = tf.data.Dataset.from_tensor_slices(({"x": x}, {"y": y})).batch(12)
        trainer = Trainer(namespace["model_fn"], namespace["optimizer_fn"],
                          sparse_classification("y"), namespace["config"](),
                          str(tmp_path / "tf"))
        history = trainer.fit(lambda epoch: data)
        _, stderr = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr[-3000:]
    return {"jax": json.loads((tmp_path / "jax.json").read_text()),
            "dp": json.loads((tmp_path / "dp.json").read_text()),
            "tf_weights": trainer.model.get_weights(), "tf_history": history}


def test_the_jax_step_is_the_tensorflow_step(runs):
    out, tf_weights, tf_history = runs["jax"], runs["tf_weights"], runs["tf_history"]
    for got, want in zip(out["weights"], tf_weights):
        np.testing.assert_allclose(np.array(got), want, atol=2e-5)
    np.testing.assert_allclose(out["loss"], [h["train_loss"] for h in tf_history], rtol=1e-5)
    for got, want in zip(out["resumed_weights"], tf_weights):
        np.testing.assert_allclose(np.array(got), want, atol=2e-5)
    assert out["resumed_from"].endswith("ckpt-4.npz")

    assert out["nan_skipped"] == 1 and out["nan_steps"] == 4
    scaled = out["scaled"]
    assert scaled["skipped"] >= 12 and scaled["scale"] < 2.0 ** 128
    assert scaled["reinits"] == 0 and np.isfinite(scaled["loss"])


def test_data_parallel_on_two_jax_devices_is_the_one_device_step(runs):
    """keras.distribution.DataParallel over 2 (forced host) devices: the same weights as
    TensorFlow's one-device Trainer on the same global batches."""
    out = runs["dp"]
    assert out["replicated"] == 2
    for got, want in zip(out["weights"], runs["tf_weights"]):
        np.testing.assert_allclose(np.array(got), want, atol=2e-5)


def test_tensorflow_loss_scaling_halves_on_overflow_without_reinitialising(tmp_path):
    namespace = tensorflow_side(tmp_path)
    x, y = namespace["X"], namespace["Y"]
    data = tf.data.Dataset.from_tensor_slices(({"x": x}, {"y": y})).batch(8)
    trainer = Trainer(namespace["model_fn"], namespace["optimizer_fn"],
                      sparse_classification("y"),
                      namespace["config"](epochs=4, loss_scale=True), str(tmp_path))
    trainer.state.loss_scale.assign(2.0 ** 140)
    history = trainer.fit(lambda epoch: data)
    assert trainer.state.value("skipped_steps") >= 12
    assert trainer.state.value("loss_scale") < 2.0 ** 128 and trainer.reinits == 0
    assert np.isfinite(history[-1]["train_loss"])
