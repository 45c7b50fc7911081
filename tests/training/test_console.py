"""What the loop prints and how it ends: lines for log files, a bar that ends its line,
stop reasons, and which runs count as finished."""

import itertools
import json
import re

import keras
import numpy as np
import tensorflow as tf

from tpr_keras.training import Trainer, TrainConfig, finished_run, sparse_classification
from tpr_keras.training.callbacks import Callback, TimeBudget
from tpr_keras.training.early_stopping import stop_reason
from tpr_keras.training.console import format_seconds


def make_trainer(model_dir, **overrides):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")

    def data(epoch):
        return tf.data.Dataset.from_tensor_slices(({"x": x}, {"y": y})).batch(16)

    def build():
        keras.utils.set_random_seed(1)
        inputs = {"x": keras.Input((8,), name="x")}
        return keras.Model(inputs, keras.layers.Dense(2)(inputs["x"]))

    config = TrainConfig(learning_rate=0.01, epochs=3, warmup_steps=0, patience=None,
                         halve_lr_below=None, verbose=0)
    for key, value in overrides.items():
        setattr(config, key, value)
    trainer = Trainer(build, lambda: keras.optimizers.Adam(0.01), sparse_classification("y"),
                      config, str(model_dir))
    return trainer, data, data(0)


def test_plain_lines_carry_rate_and_time_left(tmp_path, capsys):
    trainer, data, valid = make_trainer(tmp_path, verbose=2, progress_seconds=0.0)
    trainer.fit(data, valid, steps_per_epoch=6)
    out = capsys.readouterr().out
    assert "\x08" not in out and "\r" not in out and "\x1b" not in out  # no bar redraws
    epoch_lines = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in epoch_lines] == ["epoch 1/3", "epoch 2/3",
                                                             "epoch 3/3"]
    assert all("ex/s" in line for line in epoch_lines)
    assert "left" in epoch_lines[0] and "left" not in epoch_lines[-1]
    step_lines = [line for line in out.splitlines() if line.startswith("  epoch ")]
    # progress_seconds=0: a line after every step but the epoch's first (the rate skips it)
    assert len(step_lines) == 3 * 5
    assert re.search(r"step 6/6: .* ex/s \| epoch ends in 0s", step_lines[4]), step_lines[4]
    assert trainer.stop_reason == "epochs"


def test_progress_bar_with_max_steps_counts_the_steps_it_will_run(tmp_path, capsys):
    trainer, data, valid = make_trainer(tmp_path, verbose=1, epochs=10, max_steps=4)
    trainer.fit(data, valid, steps_per_epoch=6)
    out = capsys.readouterr().out
    assert "Epoch 1/1" in out and "Epoch 1/10" not in out
    assert "4/4" in out and "/6" not in out
    # the epoch summary starts a line of its own
    assert re.search(r"(^|\n)epoch 1/1: loss", out), out
    assert trainer.stop_reason == "steps"


def test_a_callback_sees_each_validation_with_its_record_and_can_stop_the_run(tmp_path):
    class StopAfterTwo(Callback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def on_epoch_end(self, epoch, logs=None):
            self.seen.append((self.trainer.history[-1]["epoch"],
                              self.trainer.history[-1]["valid_error_percent"],
                              logs["val_error_percent"]))

        def stop_reason(self):
            return "target_error" if len(self.seen) >= 2 else None

    trainer, data, valid = make_trainer(tmp_path, epochs=5)
    callback = StopAfterTwo()
    history = trainer.fit(data, valid, steps_per_epoch=6, callbacks=[callback])
    assert [h["epoch"] for h in history] == [1, 2] and trainer.stop_reason == "target_error"
    assert [epoch for epoch, _, _ in callback.seen] == [1, 2]
    assert all(a == b for _, a, b in callback.seen)


def test_time_budget_is_not_a_finished_run(tmp_path):
    trainer, data, valid = make_trainer(tmp_path, max_train_seconds=3600)
    # A clock that advances 1 s per reading: a budget of 0.5 s (set at 0) has run out when
    # it is first read, after the first step; a call always trains that step.
    ticks = itertools.count()
    budget = TimeBudget(0.5, clock=lambda: float(next(ticks)))
    trainer.fit(data, valid, steps_per_epoch=6, callbacks=[budget])
    assert trainer.stop_reason == "time_budget"
    steps = int(trainer.state.global_step.numpy())
    assert steps == 1
    (tmp_path / "results.json").write_text(json.dumps({"steps": steps, "epochs": 1}))
    assert finished_run(str(tmp_path), trainer.config) is None  # the command resumes it
    # The same state is finished for a run whose stop condition it meets.
    config = TrainConfig(epochs=3, max_steps=1)
    results, reason = finished_run(str(tmp_path), config)
    assert reason == "steps" and results["steps"] == 1


def test_finished_run_needs_results_of_the_latest_checkpoint(tmp_path):
    trainer, data, valid = make_trainer(tmp_path, epochs=2)
    trainer.fit(data, valid, steps_per_epoch=6)
    assert trainer.stop_reason == "epochs"
    config = TrainConfig(epochs=2, patience=None)
    assert finished_run(str(tmp_path), config) is None  # no results.json: killed before it
    (tmp_path / "results.json").write_text(json.dumps({"steps": 6, "epochs": 1}))
    assert finished_run(str(tmp_path), config) is None  # results of an older step
    (tmp_path / "results.json").write_text(json.dumps({"steps": 12, "epochs": 2}))
    assert finished_run(str(tmp_path), config)[1] == "epochs"
    assert finished_run(str(tmp_path), TrainConfig(epochs=3, patience=None)) is None


def test_stop_reasons():
    config = TrainConfig(epochs=5, max_steps=None, patience=3, patience_at_zero=1,
                         target_error=None)
    assert stop_reason(config, 10, 2, 5.0, 0) is None
    assert stop_reason(config, 10, 5, 5.0, 0) == "epochs"
    assert stop_reason(config, 10, 2, 5.0, 3) == "early_stopping"
    assert stop_reason(config, 10, 2, 0.0, 1) == "early_stopping"
    config.target_error = 5.0
    assert stop_reason(config, 10, 2, 5.0, 0) == "target_error"
    config.max_steps = 10
    assert stop_reason(config, 10, 2, 50.0, 0) == "steps"


def test_format_seconds():
    assert [format_seconds(s) for s in (0, 59.4, 75, 3599, 7300)] == [
        "0s", "59s", "1m15s", "59m59s", "2h01m"]
