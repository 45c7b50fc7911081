"""The linear cool-down (``TrainConfig.cooldown_steps``) in the loop, on the running backend:
the rate of each compiled call falls to zero over the last steps, and a constant-rate run
resumed by the same command with the cool-down retraces the unbroken cooled-down run."""

import keras
import numpy as np
import pytest

from tpr_keras.testing import batch_source
from tpr_keras.training import TrainConfig, sparse_classification
from tpr_keras.backend.backend_trainer import make_trainer

LR = 0.05


def batches(epoch):
    """Six batches of 16 (four classes), in an order that depends on ``epoch``."""
    rng = np.random.default_rng(3)
    out = []
    for _ in range(6):
        x = rng.normal(size=(16, 8)).astype("float32")
        y = ((x[:, 0] > 0).astype("int32") + 2 * (x[:, 1] > 0)).astype("int32")
        out.append(({"x": x}, {"y": y}))
    return out[::-1] if epoch % 2 else out


def build():
    keras.utils.set_random_seed(1)
    inputs = {"x": keras.Input((8,), name="x")}
    hidden = keras.layers.Dense(16, activation="tanh", name="hidden")(inputs["x"])
    return keras.Model(inputs, keras.layers.Dense(4, name="logits")(hidden))


def fit(folder, max_steps, cooldown_steps=None, rates=None, warmup_steps=2):
    """Trains in ``folder`` (resuming what is there); appends each call's rate to ``rates``."""
    config = TrainConfig(learning_rate=LR, epochs=100, max_steps=max_steps,
                         cooldown_steps=cooldown_steps, warmup_steps=warmup_steps, patience=None,
                         halve_lr_below=None, verbose=0, steps_per_execution=2,
                         checkpoint_every_steps=6)
    callbacks = []
    if rates is not None:
        callbacks.append(keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda batch, logs: rates.append(
                (int(logs["global_step"]), float(logs["learning_rate"])))))
    trainer = make_trainer(build, lambda: keras.optimizers.Adam(LR),
                           sparse_classification("y"), config, str(folder))
    history = trainer.fit(lambda epoch: batch_source(batches(epoch)), callbacks=callbacks)
    return trainer, history


def weights(trainer):
    return [np.asarray(w) for w in trainer.model.get_weights()]


def test_each_call_of_the_cooldown_trains_at_its_linear_rate(tmp_path):
    rates = []
    _, history = fit(tmp_path, max_steps=12, cooldown_steps=6, rates=rates)
    # two steps per call: the rate of the call starting after `step` steps
    # the warm-up (2 steps at a tenth) runs a step per call, then two steps per call at
    # the rate of the call's first step: constant to step 6, then 4/6 and 2/6
    assert [step for step, _ in rates] == [1, 2, 4, 6, 8, 10, 12]
    np.testing.assert_allclose([rate for _, rate in rates],
                               [LR / 10, LR / 10, LR, LR, LR, LR * 4 / 6, LR * 2 / 6],
                               rtol=1e-6)
    assert history[-1]["learning_rate"] == 0.0  # no step is left to train


def test_without_warmup_the_first_step_trains_at_the_full_rate(tmp_path):
    rates = []
    trainer, _ = fit(tmp_path, max_steps=4, rates=rates, warmup_steps=0)
    assert rates == [(2, LR), (4, LR)]
    assert trainer.current_learning_rate() == LR


def test_a_constant_run_cooled_down_on_resume_retraces_the_unbroken_run(tmp_path):
    """Warmup-stable-decay: the first 6 steps are the same at any cool-down length, so a
    6-step constant run resumed with ``max_steps=12, cooldown_steps=6`` is that run."""
    unbroken, _ = fit(tmp_path / "unbroken", max_steps=12, cooldown_steps=6)
    fit(tmp_path / "split", max_steps=6)
    resumed, _ = fit(tmp_path / "split", max_steps=12, cooldown_steps=6)
    constant, _ = fit(tmp_path / "constant", max_steps=12)
    for a, b in zip(weights(unbroken), weights(resumed)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    moved = [np.abs(a - b).max() for a, b in zip(weights(unbroken), weights(constant))]
    assert max(moved) > 1e-4  # the cool-down changed the last six steps


def test_a_cooldown_needs_the_step_budget_it_ends_at():
    with pytest.raises(ValueError, match="cooldown_steps"):
        TrainConfig(cooldown_steps=100)
    with pytest.raises(ValueError, match="cooldown_steps"):
        TrainConfig(max_steps=50, cooldown_steps=100)
