"""The training behaviours as loop callbacks: the time budget's clock, MemN2N's linear
start, and that EarlyStopping and LearningRatePolicy act on the trainer's state."""

import types

import numpy as np

from tpr_keras.models import MemN2N
import pytest

from tpr_keras.training.callbacks import (LinearStart, NanReinit, StepCheckpoints, TimeBudget,
                                          default_callbacks)
from tpr_keras.training.config import TrainConfig
from tpr_keras.training.early_stopping import EarlyStopping
from tpr_keras.training.lr_policy import LearningRatePolicy
from tpr_keras.training.state import TrainerState


def test_time_budget_ends_the_epoch_and_stops_once_its_seconds_are_spent(capsys):
    now = [100.0]
    budget = TimeBudget(90.0, clock=lambda: now[0])
    loop = types.SimpleNamespace(step_counter=lambda name: 7)
    budget.on_fit_start(loop)
    assert budget.seconds_left(loop) == 90.0
    now[0] = 189.0
    assert not budget.on_step_end(loop) and budget.stop_reason(loop) is None
    now[0] = 190.0
    assert budget.on_step_end(loop) and budget.stop_reason(loop) == "time_budget"
    assert "Time budget of 1.5 min reached at step 7" in capsys.readouterr().out
    unlimited = TimeBudget(None)
    unlimited.on_fit_start(loop)
    assert unlimited.stop_reason(loop) is None and unlimited.seconds_left(loop) is None


def test_linear_start_ends_when_the_validation_loss_stops_falling():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, linear_start=True)
    model({"story": np.ones((1, 2, 6), "int32"), "question": np.ones((1, 6), "int32")})
    factors = []
    loop = types.SimpleNamespace(model=model, set_lr_factor=factors.append)
    callback = LinearStart()
    callback.on_validation(loop, {}, [{"epoch": 1, "valid_loss": 2.0},
                                      {"epoch": 2, "valid_loss": 1.5}])
    assert model.linear_start is True and factors == []
    callback.on_validation(loop, {}, [{"epoch": 2, "valid_loss": 1.5},
                                      {"epoch": 3, "valid_loss": 1.5}])
    assert model.linear_start is False and factors == [1.0]


def test_early_stopping_and_the_halving_keep_their_state_in_the_trainer():
    state = TrainerState.create_host()
    best = []
    loop = types.SimpleNamespace(state=state, config=TrainConfig(verbose=0),
                                 checkpoints=types.SimpleNamespace(
                                     write_best=lambda: best.append(True)))
    stopping = EarlyStopping(patience=2)
    stopping.on_validation(loop, {"error_percent": 10.0, "loss": 0.5}, [])
    assert state.value("best_error") == 10.0 and best == [True]
    for _ in range(2):
        stopping.on_validation(loop, {"error_percent": 12.0, "loss": 0.4}, [])
    assert state.value("bad_validations") == 2 and stopping.stop_reason(loop) == "early_stopping"
    policy = LearningRatePolicy(0.01, halve_lr_below=0.1)
    policy.on_validation(loop, {"loss": 0.2}, [])
    assert state.value("lr_halved") is False
    policy.on_validation(loop, {"loss": 0.05}, [])
    assert state.value("lr_halved") is True


def test_a_nan_in_the_warm_up_reinitialises_until_the_limit():
    calls = []
    loop = types.SimpleNamespace(reinits=0, step_counter=lambda name: False,
                                 reinitialize=lambda: calls.append(1))
    callback = NanReinit(max_reinits=1)
    callback.on_step_skipped(loop)
    assert calls == [1]
    loop.reinits = 1
    with pytest.raises(FloatingPointError, match="Warm-up diverged 1 times"):
        callback.on_step_skipped(loop)
    loop.step_counter = lambda name: True  # after the warm-up: the step is only skipped
    callback.on_step_skipped(loop)
    assert calls == [1]


def test_step_checkpoints_every_n_applied_steps():
    saved, step = [], [0]
    loop = types.SimpleNamespace(step_counter=lambda name: step[0],
                                 save_checkpoint=lambda: saved.append(step[0]))
    callback = StepCheckpoints(3)
    for step[0] in range(1, 8):
        assert callback.on_step_end(loop) is False
    assert saved == [3, 6]


def test_every_run_gets_the_callbacks_its_config_asks_for():
    kinds = [type(c) for c in default_callbacks(TrainConfig(max_train_seconds=60))]
    assert kinds == [LearningRatePolicy, EarlyStopping, NanReinit, TimeBudget]
    config = TrainConfig(reinit_on_nan=False, checkpoint_every_steps=10)
    assert [type(c) for c in default_callbacks(config)] == [
        LearningRatePolicy, EarlyStopping, StepCheckpoints, TimeBudget]
