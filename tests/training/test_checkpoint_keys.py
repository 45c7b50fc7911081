"""Checkpoints find each variable by its path, not by its position."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.training import Trainer, TrainConfig, sparse_classification
from tpr_keras.training import checkpoints


class TwoKernels(keras.layers.Layer):
    """Two same-shaped kernels, created in either order (as a refactor might)."""

    def __init__(self, swap=False, **kwargs):
        super().__init__(**kwargs)
        self.swap = swap

    def build(self, input_shape):
        names = ["update", "reset"]
        for name in reversed(names) if self.swap else names:
            setattr(self, name, self.add_weight(name=name, shape=(4, 4)))

    def call(self, x):
        return x @ self.update + 2.0 * (x @ self.reset)


def model_fn(swap, seed):
    def build():
        keras.utils.set_random_seed(seed)
        inputs = {"x": keras.Input((4,), name="x")}
        return keras.Model(inputs, TwoKernels(swap, name="cell")(inputs["x"]))
    return build


def make_trainer(path, swap, seed=0):
    config = TrainConfig(learning_rate=0.01, epochs=1, warmup_steps=0, patience=None,
                         halve_lr_below=None, verbose=0)
    return Trainer(model_fn(swap, seed), lambda: keras.optimizers.Adam(0.01),
                   sparse_classification("y"), config, str(path))


def cell(trainer):
    return trainer.model.get_layer("cell")


def test_reordered_variables_are_restored_by_name(tmp_path):
    first = make_trainer(tmp_path, swap=False, seed=1)
    assert [v.path for v in first.model.variables] == ["cell/update", "cell/reset"]
    cell(first).update.assign(np.full((4, 4), 1.0, "float32"))
    cell(first).reset.assign(np.full((4, 4), 2.0, "float32"))
    first.save_checkpoint()

    second = make_trainer(tmp_path, swap=True, seed=2)  # same paths, other order
    assert [v.path for v in second.model.variables] == ["cell/reset", "cell/update"]
    assert second.restore()
    np.testing.assert_array_equal(cell(second).update.numpy(), 1.0)
    np.testing.assert_array_equal(cell(second).reset.numpy(), 2.0)
    # the optimizer slots follow their variables too
    slots = checkpoints.variables_by_path(second.optimizer.variables, owner_prefix=True)
    assert "cell_update_momentum" in slots and "iteration" in slots


def test_checkpoint_written_by_position_is_read_with_a_warning(tmp_path):
    old = make_trainer(tmp_path, swap=False, seed=1)
    cell(old).update.assign(np.full((4, 4), 3.0, "float32"))
    cell(old).reset.assign(np.full((4, 4), 4.0, "float32"))
    old.state.global_step.assign(7)
    positional = tf.train.Checkpoint(
        model_variables=checkpoints.variables_by_position(old.model.variables),
        optimizer_variables=checkpoints.variables_by_position(old.optimizer.variables),
        **old.state.variables())
    # what the Trainer wrote before checkpoints were keyed by path
    tf.train.CheckpointManager(positional, str(tmp_path / "checkpoints"), 3).save(7)

    new = make_trainer(tmp_path, swap=False, seed=2)
    with pytest.warns(UserWarning, match="by position"):
        assert new.restore()
    np.testing.assert_array_equal(cell(new).update.numpy(), 3.0)
    np.testing.assert_array_equal(cell(new).reset.numpy(), 4.0)
    assert new.state.value("global_step") == 7

    # best-validation weights of that age too
    tf.train.Checkpoint(model_variables=checkpoints.variables_by_position(old.model.variables)).write(
        new.checkpoints.best_prefix)
    cell(new).update.assign(np.zeros((4, 4), "float32"))
    assert new.restore_best()
    np.testing.assert_array_equal(cell(new).update.numpy(), 3.0)


def test_a_checkpoint_of_other_variables_is_a_clear_error(tmp_path):
    make_trainer(tmp_path, swap=False).save_checkpoint()

    def other():
        inputs = {"x": keras.Input((4,), name="x")}
        return keras.Model(inputs, keras.layers.Dense(4, name="dense_head")(inputs["x"]))

    config = TrainConfig(epochs=1, warmup_steps=0, patience=None, verbose=0)
    trainer = Trainer(other, lambda: keras.optimizers.Adam(0.01), sparse_classification("y"),
                      config, str(tmp_path))
    with pytest.raises(ValueError, match=r"dense_head/kernel.*cell/update"):
        trainer.restore()


def test_two_variables_with_one_path_are_refused():
    a = keras.Variable(np.zeros(2), name="kernel")
    b = keras.Variable(np.ones(2), name="kernel")
    with pytest.raises(ValueError, match="share the path 'kernel'"):
        checkpoints.variables_by_path([a, b])
    assert list(checkpoints.variables_by_path([a], owner_prefix=False)) == ["kernel"]


def test_nadam_resumes_in_a_process_that_made_other_optimizers(tmp_path):
    def trainer(seed):
        config = TrainConfig(learning_rate=0.01, epochs=1, warmup_steps=0, patience=None,
                             halve_lr_below=None, verbose=0)
        return Trainer(model_fn(False, seed), lambda: keras.optimizers.Nadam(0.01),
                       sparse_classification("y"), config, str(tmp_path))

    first = trainer(seed=1)
    first.optimizer.build(first.model.trainable_variables)
    unnamed = [v for v in first.optimizer.variables if "/" not in v.path]
    assert len(unnamed) == 1  # Nadam's u_product, outside the optimizer's scope
    unnamed[0].assign(0.25)
    first.save_checkpoint()
    keys = checkpoints.checkpoint_keys(first.checkpoints.latest(), "optimizer_variables")

    keras.optimizers.Nadam(0.01).build([keras.Variable(np.zeros(2))])  # renumbers the next
    second = trainer(seed=2)
    second.optimizer.build(second.model.trainable_variables)
    assert [v.path for v in second.optimizer.variables if "/" not in v.path] != \
        [unnamed[0].path]
    assert second.restore()
    restored = [v for v in second.optimizer.variables if "/" not in v.path]
    assert float(restored[0].numpy()) == 0.25
    assert "variable" in keys
