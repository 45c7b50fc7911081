"""``EpochMetric`` in the epoch loop, on the running backend: a function of the model after
each epoch lands in that epoch's history record and in ``history.json``."""

import json

import keras
import numpy as np
import pytest

from tpr_keras.testing import batch_source
from tpr_keras.training import EpochMetric, TrainConfig, sparse_classification
from tpr_keras.backend.backend_trainer import make_trainer


def batches():
    """Six batches of 16 of a linearly separable task."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(6):
        x = rng.normal(size=(16, 8)).astype("float32")
        out.append(({"x": x}, {"y": (x[:, 0] > 0).astype("int32")}))
    return out


def error_percent(model):
    """The validation error % of ``model``, computed here from its predictions."""
    wrong = [np.argmax(keras.ops.convert_to_numpy(model(x)), -1) != y["y"]
             for x, y in batches()]
    return float(100.0 * np.concatenate(wrong).mean())


def fit(write_dir, epochs, callbacks):
    def build():
        keras.utils.set_random_seed(1)
        inputs = {"x": keras.Input((8,), name="x")}
        return keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs["x"]))

    config = TrainConfig(learning_rate=0.05, epochs=epochs, warmup_steps=0, patience=None,
                         halve_lr_below=None, verbose=0, reinit_on_nan=False)
    trainer = make_trainer(build, lambda: keras.optimizers.Adam(0.05),
                           sparse_classification("y"), config, str(write_dir))
    return trainer.fit(lambda epoch: batch_source(batches()), batch_source(batches()),
                       steps_per_epoch=6, callbacks=callbacks)


def test_each_epoch_records_the_metric_of_that_epochs_model(tmp_path):
    metric = EpochMetric("my_error", error_percent, verbose=False)
    history = fit(tmp_path, 2, [metric])
    # The loop's own validation of the same batches after the same epoch agrees.
    for record in history:
        assert record["my_error"] == pytest.approx(record["valid_error_percent"], abs=1e-4)
        assert record["my_error_seconds"] >= 0
    saved = json.loads((tmp_path / "history.json").read_text())
    assert [r["my_error"] for r in saved] == [r["my_error"] for r in history]
    # A resumed run keeps the records of the epochs before it and adds its own.
    history = fit(tmp_path, 3, [EpochMetric("my_error", error_percent, verbose=False)])
    assert len(history) == 3 and all("my_error" in r for r in history)
    assert [r["my_error"] for r in history[:2]] == [r["my_error"] for r in saved]


def test_outside_the_loop_it_says_so():
    with pytest.raises(RuntimeError, match="inside the training loop"):
        EpochMetric("x", lambda model: 0).on_epoch_end(0)
