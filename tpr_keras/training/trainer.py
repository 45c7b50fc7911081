"""The base ``Trainer``: the epochs of a training run, the same for every backend.

:class:`Trainer` is what :class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer`
(TensorFlow, ``tf.distribute``) and :class:`~tpr_keras.backend.jax.trainer.JAXTrainer`
(JAX, one jit-compiled step) share, as Keras' backend trainers share
``keras.src.trainers.trainer.Trainer``: epochs of steps, the rate of each step, skipping a
non-finite step, validation, the end-of-epoch checkpoints and resume, the history and the
console. The other behaviours of a run (the learning-rate halving, early stopping, the
time budget, re-initialising after a NaN in the warm-up, checkpoints inside an epoch,
MemN2N's linear start) are :mod:`~tpr_keras.training.callbacks`. It imports no backend; a
subclass supplies the step, the batches and the checkpoint I/O through the hooks at the
top of the class. (``tpr_keras.training.Trainer`` is the TensorFlow trainer, the name it
has always had; this class is ``tpr_keras.training.EpochLoop`` there.)
"""

import os
import time

import keras

from tpr_keras.training.console import (epoch_line, read_history, seconds_left_at_pace,
                                        write_history)
from tpr_keras.training.callbacks import Callback, default_callbacks
from tpr_keras.training.loop_state import LoopState


class Trainer(LoopState):
    """The backend-neutral part of a trainer (see the module docstring).

    A subclass sets ``config`` (a :class:`~tpr_keras.training.config.TrainConfig`),
    ``model``, ``optimizer``, ``state`` (a
    :class:`~tpr_keras.training.trainer_state.TrainerState`), ``checkpoints`` (with
    ``write_best()``, ``restore_best()`` and ``save(step)``), ``chief``, ``write_dir``,
    ``model_dir`` and ``reinits``, and calls :meth:`_init_loop`; it implements the
    hooks below.
    """

    def _init_loop(self):
        scaling = self.config.loss_scale
        if scaling is None:
            scaling = keras.config.dtype_policy().name == "mixed_float16"
        self.loss_scaling = bool(scaling)
        self._counters = None  # Python mirrors of the per-step counters during fit()
        self._clock = None  # fit()'s start and the checkpointed seconds it adds to
        self._assigned_lr = None
        self.train_examples_per_second = None
        self.reinits = 0
        self.restored_from = None
        self.stop_reason = None
        self.callbacks = []  # fit()'s: default_callbacks(config) and the caller's
        self.history = []  # fit()'s per-epoch records, those of a resumed run's earlier epochs too

    # ------------------------------------------------------------------ hooks
    def _epoch_batches(self, train_dataset_fn, epoch, skip):
        """An iterator over the batches of ``epoch`` after the first ``skip``, as
        :meth:`_run_steps` takes it."""
        raise NotImplementedError

    def _run_steps(self, batches, count):
        """Up to ``count`` training steps on the next batches of ``batches``, in one
        compiled call where the backend can: a list of ``[loss, accuracy, grad_norm,
        applied, examples, loss_scale]`` rows (floats; ``loss_scale`` after the step),
        one per step, shorter than ``count`` (or empty) when ``batches`` runs out."""
        raise NotImplementedError

    def _run_step(self, batch):
        """One training step on a batch (the benchmark's): one row as :meth:`_run_steps`."""
        raise NotImplementedError

    def _eval_batches(self, dataset, group_key):
        """Yields ``(loss, correct, group)`` numpy arrays per batch of real examples
        (``group`` is ``labels[group_key]``, or None without ``group_key``)."""
        raise NotImplementedError

    def _set_learning_rate(self, value):
        """Makes ``value`` the learning rate of the next steps."""
        raise NotImplementedError

    def restore(self):
        """Restores the latest checkpoint; returns True if there was one."""
        raise NotImplementedError

    def _cache_batches(self, dataset, count):
        """Up to ``count`` batches of ``dataset`` in memory, as :meth:`_run_step` takes
        them (and the step built for them)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fit
    def fit(self, train_dataset_fn, valid_dataset=None, steps_per_epoch=None,
            callbacks=None):
        """Trains, validating after every epoch; returns the per-epoch history.

        Args:
            train_dataset_fn: ``epoch -> dataset`` of ``(features,
                labels)`` global batches; it must give the same order for the
                same epoch (seeded shuffling), so a resumed run can skip the
                batches it already saw.
            valid_dataset: evaluated after every epoch (early stopping, lr
                halving); optional.
            steps_per_epoch: only for the progress bar.
            callbacks: Keras callbacks (``keras.callbacks.Callback``: the loop calls
                them as ``model.fit`` does, see :mod:`~tpr_keras.training.callbacks`),
                run after :func:`~tpr_keras.training.callbacks.default_callbacks` (the
                learning-rate halving, early stopping, the time budget, and as
                ``config`` asks, the NaN re-initialisation and in-epoch checkpoints),
                e.g. MemN2N's ``LinearStart`` or Keras' ``CSVLogger``. State they change
                must live in model or trainer variables so that it is checkpointed.
        """
        start_epoch, history_path = self._begin_fit(callbacks, steps_per_epoch)
        rates = []  # (examples, seconds) of the epochs after the first (tracing) one
        epoch_walls = []  # (wall seconds, steps) per epoch of this call, validation included
        stop = self._should_stop()
        try:
            for epoch in range(start_epoch, self.config.epochs):
                if stop:
                    break
                epoch_started = time.monotonic()
                first_step = self.state.value("global_step")
                # examples trained in this call (a resumed epoch counts only its rest)
                examples, call_seconds = self._fit_epoch(
                    epoch, train_dataset_fn, valid_dataset, steps_per_epoch, history_path)
                if epoch > start_epoch and examples:
                    rates.append((examples, call_seconds))
                stop = self._should_stop()
                epoch_walls.append((time.monotonic() - epoch_started,
                                    self.state.value("global_step") - first_step))
                if self.config.verbose:
                    steps = self._steps_seen or steps_per_epoch
                    left = None if stop else self._seconds_left(epoch_walls, steps)
                    print(epoch_line(self.history[-1], self._total_epochs(steps), left),
                          flush=True)
        finally:
            self._sync_state()
            self._counters = None
            self._clock = None
        self._end_fit(rates, valid_dataset)
        return self.history

    def _begin_fit(self, callbacks, steps_per_epoch):
        """What :meth:`fit` does before its first epoch: restores the latest checkpoint
        and the history of the epochs it saved (said on the console), starts the clocks
        from the checkpoint's seconds, and sets up and begins the callbacks. Returns the
        first epoch to run and the path of ``history.json``."""
        resumed = self.restore()
        start_epoch = self.state.value("epoch")
        history_path = os.path.join(self.write_dir, "history.json")
        self.history = read_history(history_path, start_epoch) if resumed else []
        if resumed:  # always said: a silent resume is a surprise
            print(
                f"Resumed from {self.restored_from} at epoch "
                f"{start_epoch + 1}, step {self.state.value('global_step')}."
            )
        self._assigned_lr = float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))
        # The time counters continue from the checkpoint's (train_seconds, epoch_seconds).
        self._clock = {"fit_start": time.perf_counter(),
                       "train_base": self.state.value("train_seconds"),
                       "epoch_start": None, "epoch_base": 0.0}
        self.callbacks = default_callbacks(self.config) + list(callbacks or ())
        for callback in self.callbacks:
            if isinstance(callback, Callback):
                callback.set_trainer(self)
        self.model.stop_training = False
        self._callback_list = keras.callbacks.CallbackList(
            self.callbacks, model=self.model, epochs=self.config.epochs,
            steps=steps_per_epoch, verbose=0)
        self._callback_list.on_train_begin()
        self.stop_reason = None
        # The caller's steps_per_epoch is a hint (bucketed datasets give a few more
        # batches); after one whole epoch the counted number replaces it.
        self._steps_seen = None
        return start_epoch, history_path

    def _fit_epoch(self, epoch, train_dataset_fn, valid_dataset, steps_per_epoch,
                   history_path):
        """One epoch of :meth:`fit`: its steps, the validation, the record appended to the
        history and the callbacks' ``on_epoch_end``; then, if the epoch ran to its end, the
        counters of the next; then ``history.json`` (atomically) and the checkpoint, in
        that order, so that a crash in between redoes this epoch and :meth:`fit` drops its
        record. Returns the examples trained in this call and their seconds."""
        record = self._train_epoch(epoch, train_dataset_fn, self._steps_seen or steps_per_epoch)
        epoch_done = record.pop("epoch_done")
        examples = record.pop("examples")
        call_seconds = record.pop("call_seconds")
        self._sync_state()  # validation callbacks see the true state
        logs = {"loss": record["train_loss"], "accuracy": record["train_accuracy"],
                "learning_rate": record["learning_rate"]}
        if valid_dataset is not None:
            valid = self.evaluate(valid_dataset)
            logs.update(val_loss=valid["loss"], val_accuracy=valid["accuracy"],
                        val_error_percent=valid["error_percent"])
            record.update(valid_loss=valid["loss"], valid_error_percent=valid["error_percent"])
        # wall-clock time at the end of the epoch (validation included), so a curve
        # against wall time can be drawn across restarts
        record["finished_at"] = time.time()
        self.history.append(record)
        self._callback_list.on_epoch_end(epoch, logs)
        if epoch_done:
            self.state.epoch.assign(epoch + 1)
            self.state.epoch_seconds.assign(0.0)
            for name in ("step_in_epoch", "epoch_loss_sum", "epoch_accuracy_sum",
                         "epoch_steps"):
                self._counters[name] = 0
        if self.chief:
            write_history(history_path, self.history)
        self.save_checkpoint()
        return examples, call_seconds

    def _end_fit(self, rates, valid_dataset):
        """What :meth:`fit` does after its last epoch: the reason it stopped, the
        callbacks' ``on_train_end``, the steady-state examples/s (``rates``: the epochs
        after the first) and, with ``keep_best``, the best weights restored."""
        if self.stop_reason is None:
            self.stop_reason = self._stop_reason()
        self._callback_list.on_train_end()
        if rates:
            self.train_examples_per_second = (
                sum(e for e, _ in rates) / sum(t for _, t in rates)
            )
        if valid_dataset is not None and self.config.keep_best:
            self.restore_best()

    def _total_epochs(self, steps_per_epoch):
        """The epochs this run can reach: ``epochs``, or fewer when ``max_steps`` ends it."""
        cfg = self.config
        if cfg.max_steps and steps_per_epoch:
            return min(cfg.epochs, -(-cfg.max_steps // steps_per_epoch))
        return cfg.epochs

    def _seconds_left(self, epoch_walls, steps_per_epoch):
        """Seconds until ``epochs``/``max_steps`` at this call's pace
        (:func:`~tpr_keras.training.console.seconds_left_at_pace`); early stopping or
        the time budget may end the run sooner."""
        cfg = self.config
        steps_left = None
        if cfg.max_steps and steps_per_epoch:
            steps_left = cfg.max_steps - self.state.value("global_step")
        left = seconds_left_at_pace(epoch_walls, steps_per_epoch,
                                    cfg.epochs - self.state.value("epoch"), steps_left)
        if left is None:
            return None
        for callback in self.callbacks:
            limit = callback.seconds_left() if isinstance(callback, Callback) else None
            if limit is not None:
                left = min(left, limit)
        return max(left, 0.0)

    def _epoch_target(self, steps_per_epoch):
        """Steps this epoch will run in this call (None if unknown)."""
        cfg = self.config
        counters = self._counters
        target = None
        if steps_per_epoch:
            target = max(steps_per_epoch - counters["step_in_epoch"], 0)
        if cfg.max_steps:
            steps_left = max(cfg.max_steps - counters["global_step"], 0)
            target = steps_left if target is None else min(target, steps_left)
        return target

    def _train_epoch(self, epoch, train_dataset_fn, steps_per_epoch):
        """One pass over the training data; returns the epoch's record."""
        cfg = self.config
        self._load_counters()
        counters = self._counters
        started = time.perf_counter()
        if self._clock is not None:
            self._clock["epoch_start"] = started
            self._clock["epoch_base"] = self.state.value("epoch_seconds")
        skip = counters["step_in_epoch"]
        batches = self._epoch_batches(train_dataset_fn, epoch, skip)
        self.epoch_plan = {"total_epochs": self._total_epochs(steps_per_epoch),
                           "target": self._epoch_target(steps_per_epoch)}
        self._callback_list.on_epoch_begin(epoch)
        epoch_factor = self._epoch_lr_factor()
        policy = self.lr_policy
        epoch_done, examples = True, 0
        while True:
            lr = policy.rate(counters["warmup_done"], epoch_factor, counters["global_step"])
            self._set_learning_rate(lr)
            count = self._execution_size()
            rows = self._run_steps(batches, count)
            if not rows:
                break
            examples += self._count_steps(rows, policy)
            # Every callback sees the execution; any of them may end the epoch (and the run).
            self._step_logs(counters, rows, lr)
            step = counters["global_step"]
            if (cfg.max_steps and step >= cfg.max_steps) or self.model.stop_training:
                epoch_done = False
                break
            if len(rows) < count:  # the data ran out
                break
        if epoch_done and not skip:
            self._steps_seen = counters["step_in_epoch"]
        for callback in self.callbacks:
            if hasattr(callback, "on_epoch_steps_end"):  # a progress bar ends its line
                callback.on_epoch_steps_end()
        seconds = time.perf_counter() - started
        # A resumed epoch's record counts the seconds of the processes before (kept in the
        # checkpoint); its examples/s is this process's part alone.
        epoch_seconds = seconds
        if self._clock is not None:
            epoch_seconds += self._clock["epoch_base"]
            self.state.epoch_seconds.assign(epoch_seconds)
            self._clock["epoch_start"] = None
        steps = max(counters["epoch_steps"], 1)
        return {
            "epoch": epoch + 1,
            "step": counters["global_step"],
            "train_loss": counters["epoch_loss_sum"] / steps,
            "train_accuracy": counters["epoch_accuracy_sum"] / steps,
            "seconds": epoch_seconds,
            "call_seconds": seconds,
            "examples": examples,
            "examples_per_second": examples / seconds if seconds > 0 else 0.0,
            "learning_rate": policy.rate(counters["warmup_done"], epoch_factor,
                                         counters["global_step"]),
            "epoch_done": epoch_done,
        }

    def _execution_size(self):
        """The steps of the next compiled call: ``steps_per_execution``, cut so that the
        call ends at the end of the warm-up (the rate changes there), at ``max_steps``
        and at the next ``checkpoint_every_steps`` multiple. Skipped steps make a call
        end before them; the next call then goes on to them. With ``reinit_on_nan`` the
        warm-up runs one step per call, so a NaN re-initialises right after its step."""
        cfg, counters = self.config, self._counters
        step = counters["global_step"]
        size = max(int(cfg.steps_per_execution or 1), 1)
        if not counters["warmup_done"]:
            size = 1 if cfg.reinit_on_nan else min(size, max(cfg.warmup_steps - step, 1))
        if cfg.max_steps:
            size = min(size, max(cfg.max_steps - step, 1))
        if cfg.checkpoint_every_steps:
            size = min(size, cfg.checkpoint_every_steps - step % cfg.checkpoint_every_steps)
        return size

    def _count_steps(self, rows, policy):
        """Adds the steps of ``rows`` to the counters; returns their examples."""
        counters = self._counters
        examples = 0
        for loss, accuracy, _, applied, count, scale in rows:
            # the data position counts every batch consumed, skipped or not
            counters["step_in_epoch"] += 1
            examples += int(count)
            if not applied:
                counters["skipped_steps"] += 1
                if not self.loss_scaling:
                    print(f"Non-finite loss/gradient at step {counters['global_step']}: "
                          "step skipped.")
                elif scale < 1.0:  # the step halved the scale of an overflow below 1
                    raise FloatingPointError(
                        f"Non-finite loss or gradient at loss scale {scale * 2:g} (step "
                        f"{counters['global_step']}): not an overflow, the model diverged.")
                continue
            counters["global_step"] += 1
            if not counters["warmup_done"] and policy.warmup_done(counters["global_step"]):
                counters["warmup_done"] = True
            counters["epoch_loss_sum"] += loss
            counters["epoch_accuracy_sum"] += accuracy
            counters["epoch_steps"] += 1
        return examples

    def _step_logs(self, counters, rows, lr):
        """Calls every callback's ``on_train_batch_end`` once for the steps of one
        compiled call (as ``model.fit`` does with ``steps_per_execution``), with the last
        batch's index; the logs hold the loss, accuracy and norm of the call's last
        skipped step if it has one (so ``TerminateOnNaN`` sees a NaN), else of its last
        step, and the call's counts of applied and loss-scale-skipped steps, steps and
        examples."""
        skipped = [row for row in rows if not row[3]]
        loss, accuracy, norm = (skipped or rows)[-1][:3]
        applied = len(rows) - len(skipped)
        overflow = len(skipped) if self.loss_scaling else 0
        self._callback_list.on_train_batch_end(counters["step_in_epoch"] - 1, {
            "loss": loss, "accuracy": accuracy, "grad_norm": norm, "learning_rate": lr,
            "applied": applied, "overflow": overflow, "steps": len(rows),
            "examples": int(sum(row[4] for row in rows)),
            "global_step": counters["global_step"]})

    def _stop_reason(self):
        """The run's limits (``max_steps``, then ``epochs``), then the callbacks'
        reasons, in their order; ``"callback"`` when another callback set
        ``model.stop_training``."""
        cfg = self.config
        if cfg.max_steps and self.state.value("global_step") >= cfg.max_steps:
            return "steps"
        if self.state.value("epoch") >= cfg.epochs:
            return "epochs"
        for callback in self.callbacks:
            reason = callback.stop_reason() if isinstance(callback, Callback) else None
            if reason is not None:
                return reason
        if getattr(self.model, "stop_training", False):
            return "callback"
        return None

    def _should_stop(self):
        return self._stop_reason() is not None
