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
    assert names[:3] == ["global_step", "epoch", "step_in_epoch"] and len(names) == 13
    assert state.value("lr_halved") is False and state.value("best_loss") == float("inf")
    with pytest.raises(AttributeError):
        state.value("no_such_counter")
