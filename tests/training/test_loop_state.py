"""The custom loop's state and speed: the learning rate applied per step through warmup,
counters written back and examples counted, running sums and training seconds kept in
checkpoints across a resume, a benchmark step that leaves the trainer untouched, a
host-only input pipeline, a time budget that stops mid-epoch, and a jit-compiled step
that trains like the plain one."""

import numpy as np
import pytest
import tensorflow as tf

from tests.training.toy_trainer import dataset_fn, losses, make_data, trainer


# ------------------------------------------------------ loop state and speed
def test_learning_rate_is_applied_per_step_through_warmup(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path / "a", warmup_steps=4, warmup_factor=0.1, epochs=1, max_steps=3)
    tr.fit(dataset_fn(x, y))
    assert float(tr.optimizer.learning_rate.numpy()) == pytest.approx(0.001)  # still warming up
    assert not bool(tr.state.warmup_done.numpy())
    tr = trainer(tmp_path / "b", warmup_steps=4, warmup_factor=0.1, epochs=1, max_steps=5)
    tr.fit(dataset_fn(x, y))
    assert float(tr.optimizer.learning_rate.numpy()) == pytest.approx(0.01)
    assert bool(tr.state.warmup_done.numpy())
    # a resumed trainer starts from the checkpointed warm-up state
    again = trainer(tmp_path / "b", warmup_steps=4, warmup_factor=0.1, epochs=1)
    assert again.restore()
    assert again.current_learning_rate() == pytest.approx(0.01)


def test_counters_are_written_back_and_history_counts_examples(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=3)
    assert tr.train_examples_per_second is None
    history = tr.fit(dataset_fn(x, y))
    for h in history:
        assert h["examples_per_second"] * h["seconds"] == pytest.approx(96)
    assert tr.train_examples_per_second > 0  # epochs 2 and 3
    assert int(tr.state.global_step.numpy()) == 18
    assert int(tr.state.epoch.numpy()) == 3
    for name in ("step_in_epoch", "epoch_steps"):
        assert tr.state.value(name) == 0
    # the checkpoint holds the same values
    fresh = trainer(tmp_path, epochs=3)
    assert fresh.restore() and int(fresh.state.global_step.numpy()) == 18


def test_mid_epoch_checkpoint_holds_the_running_sums(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=2, max_steps=9, checkpoint_every_steps=1)
    tr.fit(dataset_fn(x, y))
    fresh = trainer(tmp_path, epochs=2)
    assert fresh.restore()
    assert int(fresh.state.global_step.numpy()) == 9
    assert int(fresh.state.step_in_epoch.numpy()) == 3
    assert int(fresh.state.epoch_steps.numpy()) == 3
    assert float(fresh.state.epoch_loss_sum.numpy()) > 0


def test_training_seconds_are_checkpointed_and_add_up_across_a_resume(tmp_path):
    import time

    x, y = make_data()
    first = trainer(tmp_path, epochs=2, max_steps=8, checkpoint_every_steps=1)
    first.fit(dataset_fn(x, y))  # 6 steps per epoch: stops inside epoch 2
    fresh = trainer(tmp_path, epochs=2)
    assert fresh.restore()
    kept_total = fresh.state.value("train_seconds")
    kept_epoch = fresh.state.value("epoch_seconds")
    assert 0 < kept_epoch < kept_total <= first.train_seconds
    # Earlier sittings of 1,000 s, 500 of them in the interrupted epoch.
    fresh.state.train_seconds.assign(1000.0)
    fresh.state.epoch_seconds.assign(500.0)
    fresh.save_checkpoint()
    resumed = trainer(tmp_path, epochs=2)
    start = time.perf_counter()
    history = resumed.fit(dataset_fn(x, y))
    outside = time.perf_counter() - start
    assert 1000.0 < resumed.train_seconds <= 1000.0 + outside
    # the resumed epoch's record holds both processes' parts; its rate is this one's
    assert 500.0 < history[1]["seconds"] <= 500.0 + outside
    assert history[1]["examples_per_second"] > 2 * 16 / outside  # 2 steps of 16 here
    assert "call_seconds" not in history[1]
    assert resumed.state.value("epoch_seconds") == 0.0  # between epochs
    # a later process reads the total of the last checkpoint (written at the epoch's end)
    again = trainer(tmp_path, epochs=2)
    assert again.restore() and 1000.0 < again.train_seconds <= resumed.train_seconds


def test_benchmark_train_step_leaves_the_trainer_untouched(tmp_path):
    x, y = make_data()
    tr = trainer(tmp_path, epochs=1)
    tr.fit(dataset_fn(x, y))
    before = [v.numpy().copy() for v in tr.model.variables + tr.optimizer.variables]
    rate = tr.benchmark_train_step(dataset_fn(x, y)(0), seconds=0.3)
    assert rate > 0
    for value, variable in zip(before, tr.model.variables + tr.optimizer.variables):
        np.testing.assert_array_equal(value, variable.numpy())


def test_host_only_iterates_the_dataset_itself_without_autotune(tmp_path):
    from tpr_keras.backend.tensorflow.trainer import without_autotune

    ds = dataset_fn(*make_data())(0)
    one = trainer(tmp_path / "one", tf.distribute.OneDeviceStrategy("/cpu:0"))
    assert one.host_only and trainer(tmp_path / "default").host_only
    fed = one.distribute_dataset(ds)
    assert isinstance(fed, tf.data.Dataset)
    assert fed.options().autotune.enabled is False
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    two = trainer(tmp_path / "two", tf.distribute.MirroredStrategy(devices))
    assert not two.host_only
    assert not isinstance(two.distribute_dataset(ds), tf.data.Dataset)
    # an explicit choice of the dataset is kept
    options = tf.data.Options()
    options.autotune.enabled = True
    assert without_autotune(ds.with_options(options)).options().autotune.enabled is True


def test_time_budget_stops_mid_epoch_and_the_next_fit_resumes(tmp_path, monkeypatch):
    import itertools

    from tpr_keras.training import trainer as shared_trainer

    x, y = make_data()
    full = trainer(tmp_path / "full", epochs=3)
    full.fit(dataset_fn(x, y))
    # A clock that advances 1 s per reading: the budget of 1.5 s is spent after one step.
    ticks = itertools.count()
    monkeypatch.setattr(shared_trainer.time, "monotonic", lambda: float(next(ticks)))
    cut = trainer(tmp_path / "cut", epochs=3, max_train_seconds=1.5)
    cut.fit(dataset_fn(x, y))
    monkeypatch.undo()
    assert int(cut.state.global_step.numpy()) == 1  # stopped after the first step
    assert int(cut.state.epoch.numpy()) == 0 and int(cut.state.step_in_epoch.numpy()) == 1
    resumed = trainer(tmp_path / "cut", epochs=3)  # no budget: runs to the end
    history = resumed.fit(dataset_fn(x, y))
    assert int(resumed.state.global_step.numpy()) == 18
    assert [h["epoch"] for h in history] == [1, 2, 3]
    for a, b in zip(full.model.weights, resumed.model.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_jit_compiled_step_trains_like_the_plain_one(tmp_path):
    x, y = make_data()
    plain_losses, plain_weights = losses(trainer(tmp_path / "plain"), dataset_fn(x, y), 4)
    jit = trainer(tmp_path / "jit", jit_compile=True)
    jit_losses, jit_weights = losses(jit, dataset_fn(x, y), 4)
    step = jit.make_train_function(
        jit.strategy.experimental_distribute_dataset(dataset_fn(x, y)(0)).element_spec)
    assert step.function_spec.jit_compile is True  # really XLA, not the plain graph
    np.testing.assert_allclose(jit_losses, plain_losses, rtol=1e-4)
    initial = [w.numpy() for w in trainer(tmp_path / "initial").model.weights]
    assert max(np.abs(a - b).max() for a, b in zip(initial, jit_weights)) > 1e-3  # it trained
    for a, b in zip(plain_weights, jit_weights):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
