"""The training behaviours as loop callbacks (Keras' protocol): the time budget's clock,
MemN2N's linear start, and that EarlyStopping and LearningRatePolicy act on the trainer's
state."""

import types

import keras
import numpy as np

from tpr_keras.models import MemN2N
import pytest

from tpr_keras.training.callbacks import (LinearStart, NanReinit, StepCheckpoints, TimeBudget,
                                          default_callbacks)
from tpr_keras.training.config import TrainConfig
from tpr_keras.training.early_stopping import EarlyStopping
from tpr_keras.training.lr_policy import LearningRatePolicy
from tpr_keras.training.progress import ConsoleProgress, TrainingSummaries
from tpr_keras.training.trainer_state import TrainerState


def attached(callback, **trainer):
    """``callback`` as the loop hands it over: a model and a trainer."""
    model = keras.Sequential([keras.layers.Dense(1)])
    model.stop_training = False
    callback.set_model(model)
    callback.set_trainer(types.SimpleNamespace(**trainer))
    return callback


def step_logs(global_step, applied=1, overflow=0):
    return {"loss": 0.5, "accuracy": 0.5, "grad_norm": 1.0, "learning_rate": 0.01,
            "applied": applied, "overflow": overflow, "global_step": global_step}


def test_time_budget_ends_the_epoch_and_stops_once_its_seconds_are_spent(capsys):
    now = [100.0]
    budget = attached(TimeBudget(90.0, clock=lambda: now[0]))
    budget.on_train_begin()
    assert budget.seconds_left() == 90.0
    now[0] = 500.0  # past the budget before the first step: a call trains at least one
    assert budget.stop_reason() is None
    budget.on_train_begin()
    now[0] = 589.0
    budget.on_train_batch_end(0, step_logs(7))
    assert not budget.model.stop_training and budget.stop_reason() is None
    now[0] = 590.0
    budget.on_train_batch_end(1, step_logs(7))
    assert budget.model.stop_training and budget.stop_reason() == "time_budget"
    assert "Time budget of 1.5 min reached at step 7" in capsys.readouterr().out
    unlimited = attached(TimeBudget(None))
    unlimited.on_train_begin()
    assert unlimited.stop_reason() is None and unlimited.seconds_left() is None


def test_linear_start_ends_when_the_validation_loss_stops_falling():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, linear_start=True)
    model({"story": np.ones((1, 2, 6), "int32"), "question": np.ones((1, 6), "int32")})
    factors = []
    history = [{"epoch": 1, "valid_loss": 2.0}, {"epoch": 2, "valid_loss": 1.5}]
    callback = LinearStart()
    callback.set_model(model)
    callback.set_trainer(types.SimpleNamespace(history=history,
                                               set_lr_factor=factors.append))
    callback.on_epoch_end(1, {"val_loss": 1.5})
    assert model.linear_start is True and factors == []
    history.append({"epoch": 3, "valid_loss": 1.5})
    callback.on_epoch_end(2, {"val_loss": 1.5})
    assert model.linear_start is False and factors == [1.0]


def test_early_stopping_and_the_halving_keep_their_state_in_the_trainer():
    state = TrainerState.create_host()
    best = []
    trainer = dict(state=state, config=TrainConfig(verbose=0),
                   checkpoints=types.SimpleNamespace(write_best=lambda: best.append(True)))
    stopping = attached(EarlyStopping(patience=2), **trainer)
    stopping.on_epoch_end(0, {"loss": 0.3})  # no validation data: nothing to judge
    assert state.value("bad_validations") == 0 and best == []
    stopping.on_epoch_end(0, {"val_error_percent": 10.0, "val_loss": 0.5})
    assert state.value("best_error") == 10.0 and best == [True]
    for epoch in (1, 2):
        stopping.on_epoch_end(epoch, {"val_error_percent": 12.0, "val_loss": 0.4})
    assert state.value("bad_validations") == 2 and stopping.stop_reason() == "early_stopping"
    policy = attached(LearningRatePolicy(0.01, halve_lr_below=0.1), **trainer)
    policy.on_epoch_end(3, {"val_loss": 0.2})
    assert state.value("lr_halved") is False
    policy.on_epoch_end(4, {"val_loss": 0.05})
    assert state.value("lr_halved") is True


def test_a_nan_in_the_warm_up_reinitialises_until_the_limit():
    calls = []
    callback = attached(NanReinit(max_reinits=1), reinits=0,
                        step_counter=lambda name: False,
                        reinitialize=lambda: calls.append(1))
    callback.on_train_batch_end(0, step_logs(0))  # an applied step
    callback.on_train_batch_end(0, step_logs(0, applied=0, overflow=1))  # a loss-scale skip
    assert calls == []
    callback.on_train_batch_end(0, step_logs(0, applied=0))
    assert calls == [1]
    callback.trainer.reinits = 1
    with pytest.raises(FloatingPointError, match="Warm-up diverged 1 times"):
        callback.on_train_batch_end(0, step_logs(0, applied=0))
    # after the warm-up: the step is only skipped
    callback.trainer.step_counter = lambda name: True
    callback.on_train_batch_end(0, step_logs(0, applied=0))
    assert calls == [1]


def test_step_checkpoints_every_n_applied_steps():
    saved = []
    callback = attached(StepCheckpoints(3), save_checkpoint=lambda: saved.append(step))
    for step in range(1, 8):
        callback.on_train_batch_end(step, step_logs(step))
    callback.on_train_batch_end(9, step_logs(9, applied=0))  # a skipped step saves nothing
    assert saved == [3, 6]


def test_every_run_gets_the_callbacks_its_config_asks_for():
    kinds = [type(c) for c in default_callbacks(TrainConfig(max_train_seconds=60))]
    assert kinds == [ConsoleProgress, TrainingSummaries, LearningRatePolicy, EarlyStopping,
                     NanReinit, TimeBudget]
    config = TrainConfig(reinit_on_nan=False, checkpoint_every_steps=10)
    assert [type(c) for c in default_callbacks(config)][2:] == [
        LearningRatePolicy, EarlyStopping, StepCheckpoints, TimeBudget]
