"""CheckpointIO on its own: latest and best checkpoints of model, optimizer and state."""

import keras
import numpy as np
import pytest

from tpr_keras.training import CheckpointIO, TrainerState


def build(seed):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(inputs))
    optimizer = keras.optimizers.Adam(0.01)
    optimizer.build(model.trainable_variables)
    return model, optimizer, TrainerState.create()


def kernel(model):
    return model.get_layer("head").kernel


def test_save_and_restore_latest_round_trips_model_optimizer_and_state(tmp_path):
    model, optimizer, state = build(0)
    io = CheckpointIO(model, optimizer, state.variables(), str(tmp_path))
    assert io.latest() is None and io.restore_latest() is None
    kernel(model).assign(np.full((3, 2), 7.0, "float32"))
    optimizer.iterations.assign(5)
    state.global_step.assign(5)
    state.best_error.assign(12.5)
    path = io.save(step=5)
    assert path.endswith("ckpt-5") and io.latest() == path

    model2, optimizer2, state2 = build(1)
    io2 = CheckpointIO(model2, optimizer2, state2.variables(), str(tmp_path / "other"),
                       read_dir=str(tmp_path))  # a worker reading the chief's folder
    assert io2.restore_latest() == path
    np.testing.assert_array_equal(kernel(model2).numpy(), 7.0)
    assert int(optimizer2.iterations.numpy()) == 5
    assert state2.value("global_step") == 5 and state2.value("best_error") == 12.5


def test_best_weights_are_separate_from_the_latest(tmp_path):
    model, optimizer, state = build(0)
    io = CheckpointIO(model, optimizer, state.variables(), str(tmp_path))
    assert not io.restore_best()
    kernel(model).assign(np.ones((3, 2), "float32"))
    io.write_best()
    kernel(model).assign(np.zeros((3, 2), "float32"))
    io.save(step=1)
    assert io.restore_best()
    np.testing.assert_array_equal(kernel(model).numpy(), 1.0)
    assert state.value("global_step") == 0  # best holds weights only


def test_keeps_only_the_last_checkpoints(tmp_path):
    model, optimizer, state = build(0)
    io = CheckpointIO(model, optimizer, state.variables(), str(tmp_path), max_to_keep=2)
    for step in (1, 2, 3):
        io.save(step)
    assert [p.rsplit("-", 1)[1] for p in io.manager.checkpoints] == ["2", "3"]


def test_state_fields_are_the_checkpoint_keys_in_order():
    state = TrainerState.create()
    names = list(state.variables())
    assert names[:3] == ["global_step", "epoch", "step_in_epoch"] and len(names) == 17
    assert names[-2:] == ["loss_scale", "loss_scale_good_steps"]
    assert state.value("lr_halved") is False and state.value("best_loss") == float("inf")
    with pytest.raises(AttributeError):
        state.value("no_such_counter")


def test_checkpoint_without_the_time_counters_restores(tmp_path):
    """Runs checkpointed before the optional counters existed (train_seconds, epoch_seconds,
    loss_scale, loss_scale_good_steps) resume; those keep their values."""
    from tpr_keras.training.trainer_state import OPTIONAL_FIELDS

    model, optimizer, state = build(0)
    older = {k: v for k, v in state.variables().items() if k not in OPTIONAL_FIELDS}
    assert len(older) == len(state.variables()) - 4
    state.global_step.assign(9)
    kernel(model).assign(np.full((3, 2), 3.0, "float32"))
    path = CheckpointIO(model, optimizer, older, str(tmp_path)).save(step=9)

    model2, optimizer2, state2 = build(1)
    state2.train_seconds.assign(5.0)  # not in the checkpoint: left as it is
    assert CheckpointIO(model2, optimizer2, state2.variables(), str(tmp_path)
                        ).restore_latest() == path
    np.testing.assert_array_equal(kernel(model2).numpy(), 3.0)
    assert state2.value("global_step") == 9 and state2.value("train_seconds") == 5.0
    # A counter that is not optional is still required.
    required = {k: v for k, v in state.variables().items() if k != "best_error"}
    CheckpointIO(model, optimizer, required, str(tmp_path / "b")).save(step=1)
    model3, optimizer3, state3 = build(2)
    with pytest.raises(ValueError, match="does not match"):
        CheckpointIO(model3, optimizer3, state3.variables(), str(tmp_path / "b")).restore_latest()
