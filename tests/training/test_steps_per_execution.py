"""Several training steps per compiled call (``TrainConfig.steps_per_execution``) and the
in-step loss scaling, on the running backend (TensorFlow's ``Trainer``, or ``JaxTrainer``
under ``KERAS_BACKEND=jax``): the same steps and numbers as one step per call, callbacks
once per call with its last batch index, calls cut at the warm-up's end, ``max_steps`` and
checkpoint multiples, and a loss scale halved below 1 ending the run."""

import keras
import numpy as np
import pytest

from tpr_keras.training import TrainConfig, sparse_classification
from tpr_keras.backend.backend_trainer import make_trainer


def batches(epoch, poison=False):
    """Six batches of 16 (four classes), in an order that depends on ``epoch``."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(6):
        x = rng.normal(size=(16, 8)).astype("float32")
        y = ((x[:, 0] > 0).astype("int32") + 2 * (x[:, 1] > 0)).astype("int32")
        out.append(({"x": np.full_like(x, np.nan) if poison else x}, {"y": y}))
    return out[::-1] if epoch % 2 else out


def fit(tmp_path, steps_per_execution, callbacks=(), poison=False, **overrides):
    def build():
        keras.utils.set_random_seed(1)
        inputs = {"x": keras.Input((8,), name="x")}
        hidden = keras.layers.Dense(16, activation="tanh", name="hidden")(inputs["x"])
        return keras.Model(inputs, keras.layers.Dense(4, name="logits")(hidden))

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
    settings = dict(learning_rate=0.05, epochs=2, warmup_steps=3, patience=None,
                    halve_lr_below=None, verbose=0, steps_per_execution=steps_per_execution)
    config = TrainConfig(**{**settings, **overrides})
    trainer = make_trainer(build, lambda: keras.optimizers.Adam(0.05),
                           sparse_classification("y"), config, str(tmp_path))
    history = trainer.fit(lambda epoch: dataset(batches(epoch, poison)),
                          callbacks=list(callbacks))
    return trainer, history


def recorder(calls):
    return keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: calls.append(
        (batch, int(logs["global_step"]), int(logs["steps"]), int(logs["applied"]))))


def test_four_steps_per_call_train_the_same_steps_as_one(tmp_path):
    """Loss scaling on (doubling every 4 steps, in the step): both runs end with the same
    weights, losses and scale. With 4 steps per call, the warm-up (3 steps, re-initialised
    on a NaN) runs one step per call, and calls end at the checkpoint multiples 5 and 10
    and where an epoch's 6 batches run out."""
    scaling = dict(loss_scale=True, loss_scale_period=4, checkpoint_every_steps=5)
    one_calls, four_calls = [], []
    one, one_history = fit(tmp_path / "one", 1, [recorder(one_calls)], **scaling)
    four, four_history = fit(tmp_path / "four", 4, [recorder(four_calls)], **scaling)
    assert one_calls == [(i % 6, i + 1, 1, 1) for i in range(12)]
    assert four_calls == [(0, 1, 1, 1), (1, 2, 1, 1), (2, 3, 1, 1), (4, 5, 2, 2),
                          (5, 6, 1, 1), (3, 10, 4, 4), (5, 12, 2, 2)]
    for a, b in zip(one.model.get_weights(), four.model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert [h["train_loss"] for h in one_history] == [h["train_loss"] for h in four_history]
    assert one.state.value("loss_scale") == four.state.value("loss_scale") == 2.0 ** 18
    assert four.state.value("loss_scale_good_steps") == 0
    saved = {p.name.split(".")[0] for p in (tmp_path / "four" / "checkpoints").iterdir()}
    assert "ckpt-10" in saved  # the call stopped at the multiple of 5, not at step 11


def test_max_steps_inside_a_call_is_exact(tmp_path):
    trainer, history = fit(tmp_path, 4, max_steps=8, warmup_steps=0)
    assert trainer.state.value("global_step") == 8 and trainer.stop_reason == "steps"
    assert trainer.state.value("step_in_epoch") == 2 and len(history) == 2


class StopAfterStep2(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if logs["global_step"] >= 2:
            self.model.stop_training = True


def test_a_callback_stops_the_run_at_the_end_of_its_call(tmp_path):
    calls = []
    trainer, _ = fit(tmp_path, 4, [recorder(calls), StopAfterStep2()], warmup_steps=0)
    # no warm-up, so the first call has 4 steps: the stop asked at step 2 ends it after 4
    assert calls == [(3, 4, 4, 4)]
    assert trainer.state.value("global_step") == 4 and trainer.stop_reason == "callback"


@pytest.mark.parametrize("steps_per_execution", [1, 4])
def test_a_loss_scale_halved_below_one_is_a_diverged_model(tmp_path, steps_per_execution):
    """Every step is NaN: each halves the scale (2 ** 15 at the start) and none
    re-initialises; the 16th halving leaves 0.5 and ends the run."""
    with pytest.raises(FloatingPointError, match=r"loss scale 1 \(step 0\).*diverged"):
        fit(tmp_path, steps_per_execution, poison=True, epochs=4, loss_scale=True,
            reinit_on_nan=False)
