"""Keras' own callbacks in the epoch loop, on the running backend (TensorFlow's ``Trainer``,
or ``JaxTrainer`` under ``KERAS_BACKEND=jax``): the loop calls them as ``model.fit`` does,
with the step's and the epoch's logs, and stops when one sets ``model.stop_training``."""

import csv

import keras
import numpy as np
import pytest

from tpr_keras.training import TrainConfig, sparse_classification
from tpr_keras.backend.backend_trainer import make_trainer


def batches(poison_batch=None):
    """Six batches of 16 (a linearly separable task); ``poison_batch`` has NaN inputs."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(6):
        x = rng.normal(size=(16, 8)).astype("float32")
        y = (x[:, 0] > 0).astype("int32")
        if i == poison_batch:
            x[:] = np.nan
        out.append(({"x": x}, {"y": y}))
    return out


def fit(tmp_path, callbacks, data, epochs=3, valid=True):
    def build():
        keras.utils.set_random_seed(1)
        inputs = {"x": keras.Input((8,), name="x")}
        return keras.Model(inputs, keras.layers.Dense(2)(inputs["x"]))

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        def dataset(items):
            return tf.data.Dataset.from_generator(
                lambda: iter(items),
                output_signature=({"x": tf.TensorSpec((16, 8), tf.float32)},
                                  {"y": tf.TensorSpec((16,), tf.int32)}))
    else:
        def dataset(items):
            return items
    config = TrainConfig(learning_rate=0.05, epochs=epochs, warmup_steps=0, patience=None,
                         halve_lr_below=None, verbose=0, reinit_on_nan=False)
    trainer = make_trainer(build, lambda: keras.optimizers.Adam(0.05),
                           sparse_classification("y"), config, str(tmp_path))
    history = trainer.fit(lambda epoch: dataset(data),
                          dataset(batches()) if valid else None, steps_per_epoch=6,
                          callbacks=callbacks)
    return trainer, history


def test_csv_logger_and_lambda_callback_see_every_step_and_epoch(tmp_path):
    steps, epochs = [], []
    recorder = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: steps.append((batch, logs["global_step"])),
        on_epoch_end=lambda epoch, logs: epochs.append((epoch, dict(logs))))
    log = tmp_path / "log.csv"
    trainer, history = fit(tmp_path / "run", [keras.callbacks.CSVLogger(str(log)), recorder],
                           batches())
    assert trainer.stop_reason == "epochs"
    assert [s for _, s in steps] == list(range(1, 19))  # the global step after each
    assert [b for b, _ in steps] == list(range(6)) * 3  # the batch within its epoch
    assert [e for e, _ in epochs] == [0, 1, 2]
    for (_, logs), record in zip(epochs, history):
        assert logs["val_error_percent"] == pytest.approx(record["valid_error_percent"])
        assert logs["loss"] == pytest.approx(record["train_loss"])
    with open(log) as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    assert float(rows[-1]["val_loss"]) == pytest.approx(history[-1]["valid_loss"], rel=1e-6)
    assert float(rows[-1]["val_loss"]) < float(rows[0]["val_loss"])  # it learned


def test_terminate_on_nan_stops_the_loop_at_the_non_finite_step(tmp_path):
    trainer, history = fit(tmp_path, [keras.callbacks.TerminateOnNaN()],
                           batches(poison_batch=2))
    assert trainer.stop_reason == "callback"
    assert trainer.state.value("global_step") == 2  # two applied steps, then the NaN one
    assert trainer.state.value("skipped_steps") == 1
    assert len(history) == 1


def test_a_keras_callback_setting_stop_training_ends_the_run(tmp_path):
    class StopAfterEight(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if logs["global_step"] >= 8:
                self.model.stop_training = True

    trainer, history = fit(tmp_path, [StopAfterEight()], batches(), valid=False)
    assert trainer.stop_reason == "callback"
    assert trainer.state.value("global_step") == 8 and len(history) == 2
