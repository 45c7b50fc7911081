"""Fault tolerance: ``kill -9`` mid-epoch and restart; the NaN guard and checkpoints."""

import json
import pathlib
import re
import subprocess
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.training import Trainer, TrainConfig, sparse_classification

# 200 stories: 540 training questions = 34 steps of 16 per epoch, 2 epochs.
ARGS = ["--task", "1", "--download=false", "--batch_size", "16", "--warmup_steps", "5",
        "--epochs", "2", "--checkpoint_every_steps", "5", "--seed", "5", "--verbose", "2",
        "--strategy", "one_device", "--nosaved_model"]  # results.json is compared, no export
STEPS_PER_EPOCH = 34
TIMEOUT = 300


def latest_checkpoint_step(model_dir):
    """Step of the checkpoint the ``checkpoint`` state file names (0 if none).

    The state file is replaced only after a checkpoint is completely written.
    """
    state = pathlib.Path(model_dir) / "checkpoints" / "checkpoint"
    match = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', state.read_text()
                      if state.exists() else "", re.M)
    return int(match.group(1)) if match else 0


def comparable(results):
    """results.json without timings."""
    drop = {"train_seconds", "process_train_seconds", "wall_seconds",
            "train_examples_per_second", "step_examples_per_second"}
    out = {k: v for k, v in results.items() if k not in drop}
    out["history"] = [{k: v for k, v in h.items()
                       if k not in ("seconds", "examples_per_second", "finished_at")}
                      for h in results["history"]]
    return out


def wait_all(processes, deadline):
    try:
        for process in processes:
            process.wait(timeout=max(deadline - time.time(), 1))
    except subprocess.TimeoutExpired:
        pass  # the caller reports the logs; the fixture kills what still runs


@pytest.mark.slow
def test_kill_9_mid_epoch_then_restart_matches_an_unbroken_run(
        make_babi, babi_process, tmp_path):
    data_dir = make_babi(200)
    deadline = time.time() + TIMEOUT
    args = lambda name: [*ARGS, "--data_dir", data_dir, "--model_dir", tmp_path / name]
    # The reference run and the run to be killed start together (2 cores: one each).
    unbroken = babi_process(args("unbroken"), tmp_path / "unbroken.log")
    crashed = babi_process(args("crashed"), tmp_path / "crashed.log")
    # Kill -9 once a checkpoint inside epoch 2 exists (step > 34, not an epoch end).
    killed_after = 0
    while crashed.poll() is None and time.time() < deadline:
        killed_after = latest_checkpoint_step(tmp_path / "crashed")
        if killed_after > STEPS_PER_EPOCH + 5:
            crashed.kill()  # SIGKILL: no clean-up, no final checkpoint
            break
        time.sleep(0.02)
    crashed.wait(timeout=30)
    log = (tmp_path / "crashed.log").read_text()
    assert crashed.returncode == -9, f"not killed mid-run:\n{log[-3000:]}"
    assert not (tmp_path / "crashed" / "results.json").exists()
    resumed_at = latest_checkpoint_step(tmp_path / "crashed")
    assert resumed_at % STEPS_PER_EPOCH != 0 and resumed_at >= killed_after

    # Restarting the same command resumes from the latest checkpoint.
    restarted = babi_process(args("crashed"), tmp_path / "restarted.log")
    wait_all([unbroken, restarted], deadline)
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in ["unbroken", "restarted"]}
    assert unbroken.returncode == 0, logs["unbroken"][-3000:]
    assert restarted.returncode == 0, logs["restarted"][-3000:]
    assert (f"Resumed from {tmp_path / 'crashed' / 'checkpoints' / f'ckpt-{resumed_at}'} "
            f"at epoch 2, step {resumed_at}.") in logs["restarted"]

    # Same step count, per-epoch history, validation and test errors (CPU kernels
    # are deterministic here, so the numbers agree to float tolerance or better).
    expected = comparable(json.loads((tmp_path / "unbroken" / "results.json").read_text()))
    actual = comparable(json.loads((tmp_path / "crashed" / "results.json").read_text()))
    assert actual["steps"] == expected["steps"] == 2 * STEPS_PER_EPOCH
    assert actual["test_error_percent"] == pytest.approx(expected["test_error_percent"])
    assert actual["valid_error_percent"] == pytest.approx(expected["valid_error_percent"])
    assert len(actual["history"]) == len(expected["history"]) == 2
    for got, want in zip(actual["history"], expected["history"]):
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6), (key, got, want)


def test_nan_steps_are_logged_and_never_checkpointed(tmp_path, capsys):
    """A poisoned batch is skipped on both replicas, logged, and every checkpoint
    written (one per step) holds only finite values."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    x[50] = np.nan  # batch 3 of 6; with two replicas only replica 0 sees it

    def model_fn():
        keras.utils.set_random_seed(1)
        inputs = {"x": keras.Input((8,), name="x")}
        hidden = keras.layers.Dense(16, activation="tanh")(inputs["x"])
        return keras.Model(inputs, keras.layers.Dense(2)(hidden))

    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    config = TrainConfig(learning_rate=0.01, epochs=2, warmup_steps=0, patience=None,
                         halve_lr_below=None, verbose=0, checkpoint_every_steps=1)
    trainer = Trainer(model_fn, lambda: keras.optimizers.Adam(0.01), sparse_classification("y"),
                      config, str(tmp_path), strategy=tf.distribute.MirroredStrategy(devices))
    written = []
    save = trainer.checkpoints.manager.save

    def save_and_check(*args, **kwargs):
        path = save(*args, **kwargs)
        reader = tf.train.load_checkpoint(path)
        for key, dtype in reader.get_variable_to_dtype_map().items():
            if dtype.is_floating:
                value = reader.get_tensor(key)
                # best_error/best_loss start at +inf by design; nothing may be NaN.
                assert not np.isnan(value).any(), (path, key)
                if "best_" not in key:
                    assert np.isfinite(value).all(), (path, key)
        written.append(path)
        return path

    trainer.checkpoints.manager.save = save_and_check
    fn = lambda epoch: tf.data.Dataset.from_tensor_slices(({"x": x}, {"y": y})).batch(16)
    history = trainer.fit(fn)
    out = capsys.readouterr().out
    assert out.count("step skipped") == 2, out  # once per epoch
    assert "Non-finite loss/gradient at step 3: step skipped." in out
    assert "Non-finite loss/gradient at step 8: step skipped." in out
    assert int(trainer.state.skipped_steps.numpy()) == 2
    assert int(trainer.state.global_step.numpy()) == 10
    assert int(trainer.optimizer.iterations.numpy()) == 10
    assert len(written) == 10 + 2  # every applied step, plus each epoch end
    assert all(np.isfinite(h["train_loss"]) for h in history)
    for weight in trainer.model.weights:
        assert np.isfinite(weight.numpy()).all()
