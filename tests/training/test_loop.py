"""The custom loop: exact replica equivalence, NaN guard, lr policy, resume.

Its state and speed (counters, running sums, time budget, jit): test_loop_state.py."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.training.toy_trainer import dataset_fn, losses, make_data, model_fn, trainer
from tpr_keras.training import NesterovAdam, Trainer, TrainConfig, sparse_classification


def test_mirrored_two_replicas_equals_one_device(tmp_path):
    devices = tf.config.list_logical_devices("CPU")
    assert len(devices) == 2, "conftest splits the CPU into two logical devices"
    x, y = make_data()
    single = trainer(tmp_path / "one", tf.distribute.OneDeviceStrategy("/cpu:0"))
    mirrored = trainer(tmp_path / "two", tf.distribute.MirroredStrategy([d.name for d in devices]))
    assert mirrored.strategy.num_replicas_in_sync == 2
    loss1, w1 = losses(single, dataset_fn(x, y), 6)
    loss2, w2 = losses(mirrored, dataset_fn(x, y), 6)
    assert loss1[-1] < loss1[0]
    np.testing.assert_allclose(loss2, loss1, rtol=1e-5, atol=1e-6)
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_mirrored_fit_of_several_steps_per_call_with_loss_scaling_equals_one_device(tmp_path):
    """fit's compiled call reads a distributed iterator in-graph and updates the loss scale
    (a mirrored variable) in cross-replica context: two replicas, 3 steps per call, give
    the one-device run of one step per call (tolerance: the all-reduce's float32 sums)."""
    x, y = make_data()
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    scaling = dict(epochs=2, loss_scale=True, loss_scale_period=4)
    single = trainer(tmp_path / "one", tf.distribute.OneDeviceStrategy("/cpu:0"), **scaling)
    mirrored = trainer(tmp_path / "two", tf.distribute.MirroredStrategy(devices),
                       steps_per_execution=3, **scaling)
    one, two = single.fit(dataset_fn(x, y)), mirrored.fit(dataset_fn(x, y))
    np.testing.assert_allclose([h["train_loss"] for h in two],
                               [h["train_loss"] for h in one], rtol=1e-5)
    for a, b in zip(single.model.weights, mirrored.model.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    assert mirrored.state.value("loss_scale") == single.state.value("loss_scale") == 2.0 ** 18
    assert mirrored.state.value("global_step") == 12


def test_nan_step_is_skipped_and_state_untouched(tmp_path):
    x, y = make_data()
    x_bad = x.copy()
    x_bad[:16] = np.nan  # the first batch (no shuffle) is poisoned
    tr = trainer(tmp_path, reinit_on_nan=False)
    ds = tf.data.Dataset.from_tensor_slices(({"x": x_bad}, {"y": y})).batch(16)
    dist = tr.strategy.experimental_distribute_dataset(ds)
    step = tr.make_train_function(dist.element_spec)
    before = [w.numpy() for w in tr.model.weights]
    iterator = iter(dist)
    out = step(next(iterator))
    assert not bool(out["applied"])
    assert int(tr.optimizer.iterations.numpy()) == 0
    for a, w in zip(before, tr.model.weights):
        np.testing.assert_array_equal(a, w.numpy())
    assert bool(step(next(iterator))["applied"])
    assert int(tr.optimizer.iterations.numpy()) == 1


def test_warmup_nan_reinitialises_and_training_continues(tmp_path):
    x, y = make_data()
    x_bad = x.copy()
    x_bad[:16] = np.inf
    tr = trainer(tmp_path, warmup_steps=3, epochs=1)
    fn = lambda epoch: tf.data.Dataset.from_tensor_slices(({"x": x_bad}, {"y": y})).batch(16)
    tr.fit(fn)
    assert tr.reinits == 1
    assert int(tr.state.skipped_steps.numpy()) == 1
    assert int(tr.state.global_step.numpy()) == 5  # 6 batches, one skipped


def test_learning_rate_warmup_and_halving(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, warmup_steps=4, warmup_factor=0.1, halve_lr_below=10.0, epochs=2)
    assert tr.current_learning_rate() == pytest.approx(0.001)
    history = tr.fit(dataset_fn(x, y), dataset_fn(x, y)(0))
    assert bool(tr.state.warmup_done.numpy())
    assert bool(tr.state.lr_halved.numpy())  # valid loss < 10 after epoch 1
    assert tr.current_learning_rate() == pytest.approx(0.005)
    assert history[1]["learning_rate"] == pytest.approx(0.005)


def test_resume_continues_from_checkpoint(tmp_path):
    x, y = make_data()
    full = trainer(tmp_path / "full", epochs=4)
    full.fit(dataset_fn(x, y))
    first = trainer(tmp_path / "split", epochs=2)
    first.fit(dataset_fn(x, y))
    second = trainer(tmp_path / "split", epochs=4)  # same dir: resumes at epoch 3
    history = second.fit(dataset_fn(x, y))
    assert int(second.state.global_step.numpy()) == 24
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    for a, b in zip(full.model.weights, second.model.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_loss_scale_doubles_at_the_same_step_after_a_resume(tmp_path):
    """The applied steps since the last change of the loss scale are checkpointed: a run
    resumed after epoch 1 (6 steps, 2 since the doubling at step 4) doubles again at steps
    8 and 12, as the unbroken run does."""
    x, y = make_data()
    scaling = dict(loss_scale=True, loss_scale_period=4)
    full = trainer(tmp_path / "full", epochs=2, **scaling)
    full.fit(dataset_fn(x, y))
    first = trainer(tmp_path / "split", epochs=1, **scaling)
    first.fit(dataset_fn(x, y))
    assert first.state.value("loss_scale") == 2.0 ** 16
    assert first.state.value("loss_scale_good_steps") == 2
    second = trainer(tmp_path / "split", epochs=2, **scaling)
    second.fit(dataset_fn(x, y))
    assert full.state.value("loss_scale") == second.state.value("loss_scale") == 2.0 ** 18
    assert second.state.value("loss_scale_good_steps") == 0


def test_resume_mid_epoch_skips_seen_batches(tmp_path):
    x, y = make_data()
    full = trainer(tmp_path / "full", epochs=2)
    full.fit(dataset_fn(x, y))
    first = trainer(tmp_path / "split", epochs=2, max_steps=8, checkpoint_every_steps=1)
    first.fit(dataset_fn(x, y))
    assert int(first.state.step_in_epoch.numpy()) == 2  # stopped inside epoch 2
    second = trainer(tmp_path / "split", epochs=2)
    second.fit(dataset_fn(x, y))
    assert int(second.state.global_step.numpy()) == 12
    for a, b in zip(full.model.weights, second.model.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_early_stopping_and_best_weights_restored(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=50, patience=2)
    # Validation labels unrelated to the inputs: improvement must stall.
    noise = np.random.default_rng(9).integers(0, 4, size=len(y)).astype("int32")
    valid = dataset_fn(x, noise)(0)
    history = tr.fit(dataset_fn(x, y), valid)
    assert len(history) < 50
    best = min(h["valid_error_percent"] for h in history)
    assert tr.evaluate(valid)["error_percent"] == pytest.approx(best)
    saved = json.loads((tmp_path / "history.json").read_text())
    assert len(saved) == len(history)


def test_evaluate_groups():
    x, y = make_data()
    tr = Trainer(model_fn(), lambda: keras.optimizers.Adam(), sparse_classification("y"),
                 TrainConfig(verbose=0), model_dir=None or "/tmp/unused-eval")
    ds = tf.data.Dataset.from_tensor_slices(({"x": x}, {"y": y, "g": y % 2})).batch(32)
    result = tr.evaluate(ds, group_key="g")
    assert result["count"] == 96 and set(result["error_percent_by_group"]) == {0, 1}


def test_nesterov_adam_matches_formula():
    var = tf.Variable([1.0, -2.0])
    opt = NesterovAdam(learning_rate=0.1, beta_1=0.6, beta_2=0.4)
    grads = [np.array([0.5, -1.0]), np.array([0.2, 0.3])]
    m = v = np.zeros(2)
    theta = np.array([1.0, -2.0])
    for t, g in enumerate(grads, start=1):
        opt.apply([tf.constant(g, tf.float32)], [var])
        m = 0.6 * m + 0.4 * g
        v = 0.4 * v + 0.6 * g * g
        alpha = 0.1 * np.sqrt(1 - 0.4**t) / (1 - 0.6**t)
        theta = theta - alpha * (0.6 * m + 0.4 * g) / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(var.numpy(), theta, rtol=1e-5)


def test_step_decay_per_epoch(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=3, decay_every_epochs=1, decay_factor=0.1)
    history = tr.fit(dataset_fn(x, y))
    assert [h["learning_rate"] for h in history] == pytest.approx([0.01, 0.001, 0.0001])


def test_binary_classification_loss_and_correct():
    from tpr_keras.training import binary_classification

    compute = binary_classification()
    model = lambda features, training: tf.constant([[2.0], [-1.0], [0.5]])
    out = compute(model, None, tf.constant([[1.0], [1.0], [0.0]]), False)
    np.testing.assert_allclose(out["correct"], [1.0, 0.0, 0.0])
    expected = [np.log1p(np.exp(-2.0)), np.log1p(np.exp(1.0)), np.log1p(np.exp(0.5))]
    np.testing.assert_allclose(out["loss"], expected, rtol=1e-5)


class ListHoldingModel(keras.Model):
    """Keeps sub-layers in a Python list, which tf.train.Checkpoint(model=...) skips."""

    def __init__(self):
        super().__init__()
        self.blocks = [keras.layers.Dense(8, name=f"block_{i}") for i in range(2)]
        self.head = keras.layers.Dense(4, name="head")

    def call(self, features):
        x = features["x"]
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def test_checkpoints_cover_layers_held_in_lists(tmp_path):
    def build():
        keras.utils.set_random_seed(3)
        model = ListHoldingModel()
        model({"x": np.zeros((1, 8), "float32")})
        return model

    x, y = make_data()
    tr = Trainer(build, lambda: keras.optimizers.Adam(0.01), sparse_classification("y"),
                 TrainConfig(epochs=1, warmup_steps=0, verbose=0, patience=None,
                             halve_lr_below=None), str(tmp_path))
    tr.fit(dataset_fn(x, y))
    trained = [w.numpy().copy() for w in tr.model.weights]
    fresh = Trainer(build, lambda: keras.optimizers.Adam(0.01), sparse_classification("y"),
                    TrainConfig(verbose=0), str(tmp_path))
    assert fresh.restore()
    for w, value in zip(fresh.model.weights, trained):
        np.testing.assert_array_equal(w.numpy(), value, err_msg=w.path)


# ------------------------------------------------------------ early stopping
def scripted_validation(tr, results):
    """Makes ``tr.evaluate`` return ``(error_percent, loss)`` pairs in turn."""
    script = iter(results)

    def evaluate(dataset, group_key=None):
        error, loss = next(script)
        return {"loss": loss, "error_percent": error, "accuracy": 1 - error / 100, "count": 1}

    tr.evaluate = evaluate


ZERO_ERROR_PLATEAU = [(10.0, 0.5), (0.0, 0.05), (0.0, 0.0495), (0.0, 0.0492), (0.0, 0.049),
                      (0.0, 0.0488), (0.0, 0.0486), (0.0, 0.0484)] + [(0.0, 0.048)] * 20


def test_min_delta_loss_stops_on_a_negligible_loss_change(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=20, patience=3, min_delta_loss=1e-3)
    scripted_validation(tr, ZERO_ERROR_PLATEAU)
    history = tr.fit(dataset_fn(x, y), dataset_fn(x, y)(0))
    # epoch 2 reaches 0 % (the best); epochs 3-5 improve the loss by < 1e-3 each
    assert len(history) == 5
    assert float(tr.state.best_loss.numpy()) == pytest.approx(0.05)
    assert int(tr.state.bad_validations.numpy()) == 3


def test_without_min_delta_every_tiny_loss_decrease_resets_patience(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=15, patience=3, min_delta_loss=0.0)
    scripted_validation(tr, ZERO_ERROR_PLATEAU)
    history = tr.fit(dataset_fn(x, y), dataset_fn(x, y)(0))
    assert len(history) == 12  # the last improvement is epoch 9; 3 bad validations follow


def test_min_delta_still_counts_a_lower_error_and_a_large_loss_drop(tmp_path):
    tr = trainer(tmp_path, min_delta_loss=1e-3)
    assert tr.early_stopping.improves(1.0, 9.0, 2.0, 0.1)  # a lower error always counts
    assert tr.early_stopping.improves(1.0, 0.0980, 1.0, 0.1)  # equal error, loss 2e-3 lower
    assert not tr.early_stopping.improves(1.0, 0.0995, 1.0, 0.1)  # equal error, loss 5e-4 lower
    assert not tr.early_stopping.improves(2.0, 0.01, 1.0, 0.1)  # a higher error never counts


def test_patience_at_zero_stops_soon_after_zero_error(tmp_path):
    x, y = make_data()
    # errors stay above 0 for a while with flat losses: only `patience` applies
    script = [(10.0, 0.5), (10.0, 0.5), (5.0, 0.4), (0.0, 0.1)] + [(0.0, 0.1)] * 30
    tr = trainer(tmp_path, epochs=30, patience=20, patience_at_zero=2)
    scripted_validation(tr, script)
    history = tr.fit(dataset_fn(x, y), dataset_fn(x, y)(0))
    assert len(history) == 6  # 0 % at epoch 4, then 2 validations without improvement
    tr2 = trainer(tmp_path / "off", epochs=30, patience=20, patience_at_zero=None)
    scripted_validation(tr2, script)
    assert len(tr2.fit(dataset_fn(x, y), dataset_fn(x, y)(0))) == 24
