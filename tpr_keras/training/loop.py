"""One strategy-agnostic custom training loop for every tpr-keras model.

Keras 3 ``Model.fit`` does not run under ``MultiWorkerMirroredStrategy``; this
loop does, and it behaves identically under the default strategy,
``OneDeviceStrategy`` and ``MirroredStrategy``:

* Loss scaling is replica-aware and exact: every replica returns the *sum* of
  its per-example losses and gradients; they are all-reduced and divided by the
  number of examples in the global batch (partial last batches included), so a
  step on N replicas equals a step on one device with the same global batch.
* Gradients are clipped by the global norm of the *all-reduced* gradient (Keras'
  ``global_clipnorm`` clips each replica's share before its own all-reduce).
* NaN guard: a step with a non-finite loss or gradient is not applied (the
  optimizer state is untouched) and is counted; during warm-up it triggers a
  full re-initialisation of model and optimizer (TPR-RNN Appendix A).
* Learning-rate policy: warm-up at ``lr * warmup_factor``, halved once when the
  validation loss first falls below ``halve_lr_below`` (TPR-RNN Appendix A;
  the authors' code assigned the halved rate and overwrote it every step).
  The policy is :class:`~tpr_keras.training.lr_policy.LearningRatePolicy`,
  early stopping :class:`~tpr_keras.training.early_stopping.EarlyStopping`,
  checkpoint I/O :class:`~tpr_keras.training.checkpoints.CheckpointIO` and the
  counters :class:`~tpr_keras.training.state.TrainerState`: each tested alone.
* Early stopping on the validation error, ties broken by the validation loss
  with a ``min_delta_loss`` margin (see :class:`TrainConfig`), with the best
  weights kept in ``<model_dir>/best`` and restored at the end; optionally a
  shorter ``patience_at_zero`` once the validation error is 0.
* One host sync per step: counters and the learning rate live in Python during
  an epoch and are written to their variables before every checkpoint; on one
  CPU replica the dataset is iterated directly (the ``tf.distribute`` input
  pipeline's multi-device iterator cost more than the step on 2 cores).
* Steady-state throughput: every epoch record holds its training examples/s
  (iteration and steps, validation excluded); :attr:`Trainer.train_examples_per_second`
  averages the epochs after the first (tracing) and
  :meth:`Trainer.benchmark_train_step` times the same compiled step on cached
  batches, for comparison.
* Checkpoints of model, optimizer, counters and data position in
  ``<model_dir>/checkpoints``; a restarted run resumes from the latest one
  (every worker reads the chief's), skipping the batches of the interrupted
  epoch it had already consumed and keeping that epoch's running loss sums.
* TensorBoard scalars in ``<model_dir>/tensorboard``; on the console a Keras
  progress bar (``verbose=1``) or plain lines for log files (``verbose=2``: one per
  epoch and one every ``progress_seconds`` inside an epoch), with examples/s and
  the time left.
* :attr:`Trainer.stop_reason` says why ``fit`` ended; :func:`finished_run` tells a
  command that its run already reached its stop condition (a run cut by the time
  budget or killed is not finished: the same command resumes it).
"""

import dataclasses
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

from tpr_keras.training.checkpoints import CheckpointIO
from tpr_keras.training.console import (
    Summaries,
    epoch_line,
    progress_line,
    read_history,
    write_history,
)
from tpr_keras.training.early_stopping import EarlyStopping, stop_reason
from tpr_keras.training.lr_policy import LearningRatePolicy
from tpr_keras.training.state import TrainerState


@dataclasses.dataclass
class TrainConfig:
    """Hyper-parameters of :class:`Trainer` (defaults: TPR-RNN Appendix A).

    Attributes:
        learning_rate: base learning rate.
        epochs: maximum number of epochs.
        max_steps: optional cap on optimizer steps (overrides ``epochs``).
        max_train_seconds: optional time budget of one ``fit`` call: training
            stops at the first step past it (mid-epoch: that partial epoch is
            validated and checkpointed like one cut by ``max_steps``), and
            ``fit`` returns with the best weights. A later ``fit`` (the same
            command again) resumes with a fresh budget.
        clip_norm: global-norm gradient clipping; ``None`` disables it.
        warmup_steps: steps trained at ``learning_rate * warmup_factor``.
        warmup_factor: learning-rate factor during warm-up.
        reinit_on_nan: re-initialise everything when warm-up hits a NaN.
        max_reinits: give up after this many re-initialisations.
        halve_lr_below: halve the learning rate once when the validation loss
            falls below this value; ``None`` disables it.
        decay_every_epochs: multiply the learning rate by ``decay_factor``
            every this many epochs (MemN2N: halve every 25; TPRU: /10 every
            30); ``None`` disables it.
        decay_factor: the factor of that step decay.
        patience: early stopping after this many validations without
            improvement; ``None`` trains for all epochs.
        min_delta_loss: at an equal validation error, the validation loss must
            fall by more than this (absolute, in nats per example) to count as
            an improvement; a lower error always counts. With 0 errors the
            error cannot improve, and loss changes of 1e-4 are noise that used
            to reset the patience counter for dozens of epochs.
        patience_at_zero: once the best validation error is 0 %, stop after
            this many validations without improvement (``None``: ``patience``
            applies throughout).
        target_error: also stop once the validation error (%) is at or
            below this value.
        checkpoint_every_steps: also checkpoint inside an epoch this often.
        log_every_steps: TensorBoard logging interval.
        verbose: 0 silent, 1 progress bar, 2 plain lines (log files): one per
            epoch, and one every ``progress_seconds`` inside an epoch.
        progress_seconds: with ``verbose=2``, the interval of in-epoch lines.
        jit_compile: compile the training step with XLA, which fuses its many
            small ops. Small recurrent models on a CPU, whose steps are
            dominated by per-op overhead, gain the most (measured in
            ``results/entailment.md``); each new batch shape is compiled once,
            so it pays off for long runs with few distinct shapes.
    """

    learning_rate: float = 0.008
    epochs: int = 100
    max_steps: int | None = None
    max_train_seconds: float | None = None
    clip_norm: float | None = 5.0
    warmup_steps: int = 50
    warmup_factor: float = 0.1
    reinit_on_nan: bool = True
    max_reinits: int = 10
    halve_lr_below: float | None = 0.1
    decay_every_epochs: int | None = None
    decay_factor: float = 0.5
    patience: int | None = 20
    min_delta_loss: float = 1e-3
    patience_at_zero: int | None = None
    target_error: float | None = None
    checkpoint_every_steps: int | None = None
    log_every_steps: int = 10
    verbose: int = 1
    progress_seconds: float = 60.0
    jit_compile: bool = False


def sparse_classification(label_key):
    """A ``compute_fn`` for single-label classification from logits.

    Returns per-example ``loss`` (softmax cross-entropy) and ``correct``.
    """

    def compute(model, features, labels, training):
        logits = model(features, training=training)
        target = labels[label_key]
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(target, tf.int32), logits=tf.cast(logits, tf.float32)
        )
        prediction = tf.argmax(logits, axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(prediction, tf.cast(target, tf.int32)), tf.float32)
        return {"loss": loss, "correct": correct}

    return compute


def binary_classification(label_key=None):
    """A ``compute_fn`` for one-logit binary classification.

    Labels are 0/1 (``labels[label_key]``, or ``labels`` itself when
    ``label_key`` is None); the loss is sigmoid cross-entropy.
    """

    def compute(model, features, labels, training):
        logits = tf.reshape(tf.cast(model(features, training=training), tf.float32), [-1])
        target = labels if label_key is None else labels[label_key]
        target = tf.reshape(tf.cast(target, tf.float32), [-1])
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=logits)
        correct = tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), target), tf.float32)
        return {"loss": loss, "correct": correct}

    return compute


def without_autotune(dataset):
    """``dataset`` with tf.data autotuning disabled, unless its options set it.

    Deleting an autotuned iterator waits for the autotuning thread, whose
    wake-ups double from 10 ms: under CPU contention (the training step uses
    every core) the loop's per-epoch iterator was intermittently only released
    at the next wake-up, 10 ms * (2^k - 1) after its creation, so epochs of
    3-7 s ended at 10.2 or 20.5 s. Fixed buffer and parallelism values have
    nothing to tune; ``AUTOTUNE`` ones fall back to tf.data's static defaults.
    """
    if dataset.options().autotune.enabled is not None:
        return dataset
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def is_chief(strategy):
    """True on the worker that writes checkpoints and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type in (None, "chief") or (
        task_type == "worker"
        and task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )


class Trainer:
    """Trains a Keras model with a custom loop under any ``tf.distribute`` strategy.

    Args:
        model_fn: zero-argument callable returning a built Keras model.
        optimizer_fn: zero-argument callable returning a Keras optimizer.
        compute_fn: ``(model, features, labels, training) -> {"loss": [B],
            "correct": [B]}`` per-example values.
        config: a :class:`TrainConfig`.
        model_dir: where checkpoints, TensorBoard logs and ``best`` go; only
            the chief writes there, other workers write to a temporary folder.
        strategy: a ``tf.distribute.Strategy``; default: the default strategy.

    Example:
    >>> trainer = Trainer(model_fn, optimizer_fn, sparse_classification("y"),
    ...                   TrainConfig(epochs=5), model_dir="/tmp/run")
    >>> history = trainer.fit(lambda epoch: train_ds, valid_ds)
    """

    def __init__(
        self, model_fn, optimizer_fn, compute_fn, config, model_dir, strategy=None
    ):
        self.model_fn = model_fn
        self.optimizer_fn = optimizer_fn
        self.compute_fn = compute_fn
        self.config = config
        self.strategy = strategy or tf.distribute.get_strategy()
        self.chief = is_chief(self.strategy)
        self.model_dir = model_dir
        self.write_dir = (
            model_dir if self.chief else tempfile.mkdtemp(prefix="tpr_keras_worker_")
        )
        os.makedirs(self.write_dir, exist_ok=True)
        with self.strategy.scope():
            self.model = model_fn()
            self.optimizer = optimizer_fn()
            self.optimizer.build(self.model.trainable_variables)
            self.state = TrainerState.create()
        # Every worker restores the chief's checkpoints (model_dir) and writes its own.
        self.checkpoints = CheckpointIO(self.model, self.optimizer, self.state.variables(),
                                        self.write_dir, read_dir=model_dir)
        self._train_step = None
        self._eval_step = None
        self._counters = None  # Python mirrors of the per-step counters during fit()
        self._clock = None  # fit()'s start and the checkpointed seconds it adds to
        self._assigned_lr = None
        self.train_examples_per_second = None
        self.reinits = 0
        self.restored_from = None
        self.stop_reason = None

    # ----------------------------------------------------------------- steps
    def _replica_train(self, features, labels):
        with tf.GradientTape() as tape:
            out = self.compute_fn(self.model, features, labels, True)
            loss_sum = tf.reduce_sum(out["loss"])
        grads = tape.gradient(loss_sum, self.model.trainable_variables)
        grads = [tf.convert_to_tensor(g) for g in grads]
        count = tf.cast(tf.shape(out["loss"])[0], tf.float32)
        return loss_sum, grads, tf.reduce_sum(out["correct"]), count

    def make_train_function(self, element_spec):
        """The compiled, strategy-wrapped training step for batches of ``element_spec``.

        ``step(batch) -> {"loss", "accuracy", "grad_norm", "applied",
        "examples", "metrics"}``: the global mean loss and accuracy, the
        all-reduced gradient norm, whether the update was applied (False for a
        non-finite loss or gradient), the number of examples, and all five as
        one float64 vector (one host transfer per step). ``element_spec`` is
        that of :meth:`distribute_dataset`'s result (or of a distributed
        dataset). ``fit`` builds its step here; so do the benchmarks.
        """
        strategy = self.strategy
        clip = self.config.clip_norm
        variables = self.model.trainable_variables

        def step(batch):
            features, labels = batch
            loss_sum, grads, correct, count = strategy.run(
                self._replica_train, args=(features, labels)
            )
            total = strategy.reduce("SUM", count, axis=None)
            loss = strategy.reduce("SUM", loss_sum, axis=None) / total
            accuracy = strategy.reduce("SUM", correct, axis=None) / total
            grads = [strategy.reduce("SUM", g, axis=None) / total for g in grads]
            norm = tf.linalg.global_norm(grads)
            finite = tf.math.logical_and(
                tf.math.is_finite(loss), tf.math.is_finite(norm)
            )
            if clip:
                grads, _ = tf.clip_by_global_norm(grads, clip, use_norm=norm)

            def apply():
                self.optimizer.apply(grads, variables)
                return tf.constant(True)

            applied = tf.cond(finite, apply, lambda: tf.constant(False))
            metrics = tf.stack([tf.cast(v, tf.float64) for v in
                                (loss, accuracy, norm, applied, total)])
            return {
                "loss": loss,
                "accuracy": accuracy,
                "grad_norm": norm,
                "applied": applied,
                "examples": total,
                "metrics": metrics,
            }

        return tf.function(step, input_signature=[element_spec],
                           jit_compile=self.config.jit_compile or None)

    def distribute_dataset(self, dataset):
        """``dataset`` as the training step consumes it.

        On a single replica on the host CPU (the default strategy, or
        ``OneDeviceStrategy("/cpu:0")``) that is the dataset itself (with
        tf.data autotuning off unless the dataset asked for it, see
        :func:`without_autotune`): the
        ``tf.distribute`` input pipeline would only add a multi-device
        iterator, whose background threads and per-epoch set-up competed with
        the step for the cores (on 2 CPUs its epochs took 1.5-2.4x the step
        time, with stalls of seconds). Otherwise
        ``strategy.experimental_distribute_dataset(dataset)``.
        """
        dataset = without_autotune(dataset)
        if self.host_only:
            return dataset
        return self.strategy.experimental_distribute_dataset(dataset)

    @property
    def host_only(self):
        """True on one replica on the host CPU: datasets are iterated directly."""
        if self.strategy.num_replicas_in_sync != 1:
            return False
        try:
            devices = self.strategy.extended.worker_devices
        except RuntimeError:  # the default strategy: no distribution at all
            return True
        return all(tf.DeviceSpec.from_string(d).device_type == "CPU" for d in devices)

    def benchmark_train_step(self, dataset, seconds=10.0, batches=40, warmup=3):
        """Examples/s of the compiled training step alone, on cached batches.

        Takes up to ``batches`` batches of ``dataset`` into memory, runs
        ``warmup`` steps (tracing, if the step is new), then cycles through
        them for ``seconds``: the rate :meth:`fit` would reach with a free
        input pipeline and no loop overhead. Model, optimizer and learning
        rate are restored afterwards, so it can run before, during or after
        training.
        """
        cached = list(self.distribute_dataset(dataset).take(batches))
        if not cached:
            raise ValueError("benchmark_train_step needs a non-empty dataset")
        if self._train_step is None:
            self._train_step = self.make_train_function(
                self.distribute_dataset(dataset).element_spec
            )
        saved = [v.numpy() for v in self.model.variables + self.optimizer.variables]
        try:
            for batch in cached[:warmup]:
                self._train_step(batch)["metrics"].numpy()
            examples, i = 0, 0
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                examples += int(self._train_step(cached[i % len(cached)])["metrics"].numpy()[4])
                i += 1
            return examples / (time.perf_counter() - start)
        finally:
            for variable, value in zip(self.model.variables + self.optimizer.variables, saved):
                variable.assign(value)

    def _build_eval_step(self, element_spec):
        def step(features, labels):
            out = self.compute_fn(self.model, features, labels, False)
            return out["loss"], out["correct"]

        return tf.function(step, input_signature=list(element_spec))

    # --------------------------------------------------------------- helpers
    def _set_learning_rate(self, value):
        """Assigns the optimizer's lr when it changed (a Python-side mirror, no sync)."""
        if value != self._assigned_lr:
            self.optimizer.learning_rate.assign(value)
            self._assigned_lr = value

    @property
    def lr_policy(self):
        """The :class:`LearningRatePolicy` of ``config``."""
        return LearningRatePolicy.from_config(self.config)

    @property
    def early_stopping(self):
        """The :class:`EarlyStopping` of ``config``."""
        return EarlyStopping.from_config(self.config)

    @property
    def train_seconds(self):
        """Seconds spent in :meth:`fit` over every process of this run, up to now.

        Training steps and validations, continued from the checkpoint's count when
        the run resumed (so a schedule spread over several sittings reports its whole
        cost, without the work redone after an interruption counted twice).
        """
        self._sync_state()
        return self.state.value("train_seconds")

    def current_learning_rate(self):
        """The learning rate of the next step, from the checkpointed state."""
        self._sync_state()
        return self.lr_policy.rate(self.state.value("warmup_done"), self._epoch_lr_factor())

    def set_lr_factor(self, factor):
        """Sets the caller's phase factor of the learning rate (MemN2N linear start).

        It is a state variable, so it is checkpointed and a resumed run keeps it;
        the loop reads it at the start of every epoch.
        """
        self.state.lr_factor.assign(float(factor))

    def _epoch_lr_factor(self):
        """The lr factors that change at most once per epoch (read from variables)."""
        return self.lr_policy.epoch_factor(self.state.value("epoch"),
                                           self.state.value("lr_halved"),
                                           self.state.value("lr_factor"))

    # During fit() the per-step counters live in self._counters (Python ints and
    # floats) and are written to their variables by _sync_state() before every
    # checkpoint and whenever the loop hands control to other code.
    _STEP_COUNTERS = ("global_step", "step_in_epoch", "skipped_steps", "warmup_done",
                      "epoch_loss_sum", "epoch_accuracy_sum", "epoch_steps")

    def _load_counters(self):
        self._counters = {
            name: self.state.value(name) for name in self._STEP_COUNTERS
        }

    def _sync_state(self):
        clock = self._clock
        if clock is not None:  # inside fit(): the time counters run
            now = time.perf_counter()
            self.state.train_seconds.assign(clock["train_base"] + now - clock["fit_start"])
            if clock["epoch_start"] is not None:
                self.state.epoch_seconds.assign(
                    clock["epoch_base"] + now - clock["epoch_start"])
        if self._counters is None:
            return
        for name, value in self._counters.items():
            if self.state.value(name) != value:
                getattr(self.state, name).assign(value)

    def reinitialize(self):
        """Fresh weights for the model and a zeroed optimizer state."""
        fresh = self.model_fn()
        for variable, value in zip(self.model.weights, fresh.weights):
            variable.assign(value)
        for variable in self.optimizer.variables:
            if "learning_rate" not in variable.path:
                variable.assign(tf.zeros_like(variable))
        self.state.global_step.assign(0)
        if self._counters is not None:
            self._counters["global_step"] = 0
        self.reinits += 1

    def evaluate(self, dataset, group_key=None):
        """Loss and accuracy of the current weights on ``dataset``.

        Runs on the current device in cross-replica context (every worker
        computes the same numbers; no collectives). With ``group_key`` the
        result also holds accuracy per value of ``labels[group_key]``.
        """
        if self._eval_step is None:
            self._eval_step = self._build_eval_step(dataset.element_spec)
        losses, corrects, groups = [], [], []
        for features, labels in without_autotune(dataset):
            loss, correct = self._eval_step(features, labels)
            losses.append(loss.numpy())
            corrects.append(correct.numpy())
            if group_key is not None:
                groups.append(labels[group_key].numpy())
        loss = np.concatenate(losses)
        correct = np.concatenate(corrects)
        result = {
            "loss": float(loss.mean()),
            "accuracy": float(correct.mean()),
            "error_percent": float(100.0 * (1.0 - correct.mean())),
            "count": int(correct.size),
        }
        if group_key is not None:
            group = np.concatenate(groups)
            result["error_percent_by_group"] = {
                int(g): float(100.0 * (1.0 - correct[group == g].mean()))
                for g in np.unique(group)
            }
        return result

    def restore(self):
        """Restores the latest checkpoint; returns True if there was one.

        Every worker reads the chief's ``<model_dir>/checkpoints`` (non-chief
        workers only *write* to their temporary folder), so a restarted
        multi-worker job resumes in step; ``model_dir`` must therefore be on a
        filesystem all workers can read. Under multi-worker training the
        workers then check that they restored the same step.
        """
        latest = self.checkpoints.restore_latest()
        self.restored_from = latest
        self._check_workers_agree()
        return latest is not None

    def _check_workers_agree(self):
        """Raises if the workers of a multi-worker cluster hold different steps."""
        resolver = getattr(self.strategy, "cluster_resolver", None)
        spec = resolver.cluster_spec() if resolver is not None else None
        if not spec or sum(spec.num_tasks(job) for job in spec.jobs) <= 1:
            return
        step = self.state.global_step

        @tf.function
        def moments():
            def local():
                value = tf.cast(step, tf.float64)
                return tf.stack([value, value * value])

            return self.strategy.reduce("SUM", self.strategy.run(local), axis=None)

        mean, mean_square = moments().numpy() / self.strategy.num_replicas_in_sync
        if mean_square != mean * mean:
            raise RuntimeError(
                f"Workers restored different training steps (mean {mean:g}; this worker "
                f"{int(step.numpy())} from {self.model_dir}/checkpoints): give every "
                f"worker the same model_dir, on a filesystem they can all read."
            )

    def restore_best(self):
        """Loads the best validation weights, if any were saved."""
        return self.checkpoints.restore_best()

    def save_checkpoint(self):
        """Writes the counters back to the state and checkpoints everything."""
        self._sync_state()
        return self.checkpoints.save(self.state.value("global_step"))

    # ------------------------------------------------------------------ fit
    def fit(self, train_dataset_fn, valid_dataset=None, steps_per_epoch=None,
            after_validation=None):
        """Trains, validating after every epoch; returns the per-epoch history.

        Args:
            train_dataset_fn: ``epoch -> tf.data.Dataset`` of ``(features,
                labels)`` global batches; it must give the same order for the
                same epoch (seeded shuffling), so a resumed run can skip the
                batches it already saw.
            valid_dataset: evaluated after every epoch (early stopping, lr
                halving); optional.
            steps_per_epoch: only for the progress bar.
            after_validation: optional ``(trainer, history) -> None`` called
                after each validation, with the history so far including this
                epoch's record (e.g. MemN2N leaves linear start here). State it
                changes must live in model or trainer variables so that it is
                checkpointed.
        """
        cfg = self.config
        resumed = self.restore()
        start_epoch = self.state.value("epoch")
        history_path = os.path.join(self.write_dir, "history.json")
        history = read_history(history_path, start_epoch) if resumed else []
        summaries = Summaries(self.write_dir)
        if resumed:  # always said: a silent resume is a surprise
            print(
                f"Resumed from {self.restored_from} at epoch "
                f"{start_epoch + 1}, step {self.state.value('global_step')}."
            )
        self._assigned_lr = float(self.optimizer.learning_rate.numpy())
        # The time counters continue from the checkpoint's (train_seconds, epoch_seconds).
        self._clock = {"fit_start": time.perf_counter(),
                       "train_base": self.state.value("train_seconds"),
                       "epoch_start": None, "epoch_base": 0.0}
        self._deadline = (
            time.monotonic() + cfg.max_train_seconds if cfg.max_train_seconds else None
        )
        rates = []  # examples/s of the epochs after the first (tracing) one
        self.stop_reason = None
        # The caller's steps_per_epoch is a hint (bucketed datasets give a few more
        # batches); after one whole epoch the counted number replaces it.
        self._steps_seen = None
        epoch_walls = []  # wall seconds per epoch of this call, validation included
        stop = self._should_stop()
        try:
            for epoch in range(start_epoch, cfg.epochs):
                if stop:
                    break
                epoch_started = time.monotonic()
                record = self._train_epoch(
                    epoch, train_dataset_fn, self._steps_seen or steps_per_epoch, summaries
                )
                epoch_done = record.pop("epoch_done")
                # examples trained in this call (a resumed epoch counts only its rest)
                examples = record.pop("examples")
                call_seconds = record.pop("call_seconds")
                if epoch > start_epoch and examples:
                    rates.append((examples, call_seconds))
                self._sync_state()  # validation callbacks see the true state
                if valid_dataset is not None:
                    valid = self.evaluate(valid_dataset)
                    record.update(
                        valid_loss=valid["loss"],
                        valid_error_percent=valid["error_percent"],
                    )
                    self._after_validation(valid)
                    summaries.validation(record["step"], valid["loss"], valid["error_percent"])
                # wall-clock time at the end of the epoch (validation included), so a
                # curve against wall time can be drawn across restarts
                record["finished_at"] = time.time()
                history.append(record)
                if valid_dataset is not None and after_validation is not None:
                    after_validation(self, history)
                if epoch_done:
                    self.state.epoch.assign(epoch + 1)
                    self.state.epoch_seconds.assign(0.0)
                    for name in ("step_in_epoch", "epoch_loss_sum",
                                 "epoch_accuracy_sum", "epoch_steps"):
                        self._counters[name] = 0
                # History first (atomically), then the checkpoint: a crash in
                # between redoes this epoch, and fit() then drops the record.
                if self.chief:
                    write_history(history_path, history)
                self.save_checkpoint()
                stop = self._should_stop()
                epoch_walls.append(time.monotonic() - epoch_started)
                if cfg.verbose:
                    steps = self._steps_seen or steps_per_epoch
                    left = None if stop else self._seconds_left(epoch_walls, steps)
                    print(epoch_line(record, self._total_epochs(steps), left), flush=True)
        finally:
            self._sync_state()
            self._counters = None
            self._clock = None
        if self.stop_reason is None:
            self.stop_reason = self._stop_reason() or (
                "time_budget" if self._past_deadline() else None)
        if rates:
            self.train_examples_per_second = (
                sum(e for e, _ in rates) / sum(t for _, t in rates)
            )
        summaries.flush()
        if valid_dataset is not None:
            self.restore_best()
        return history

    def _total_epochs(self, steps_per_epoch):
        """The epochs this run can reach: ``epochs``, or fewer when ``max_steps`` ends it."""
        cfg = self.config
        if cfg.max_steps and steps_per_epoch:
            return min(cfg.epochs, -(-cfg.max_steps // steps_per_epoch))
        return cfg.epochs

    def _seconds_left(self, epoch_walls, steps_per_epoch):
        """Seconds until ``epochs``/``max_steps`` at this call's pace (early stopping
        or the time budget may end the run sooner). The first epoch of a call traces
        the step, so it only counts while it is the only one."""
        paced = epoch_walls[1:] or epoch_walls
        if not paced:
            return None
        cfg = self.config
        per_epoch = sum(paced) / len(paced)
        left = (cfg.epochs - self.state.value("epoch")) * per_epoch
        if cfg.max_steps and steps_per_epoch:
            steps_left = cfg.max_steps - self.state.value("global_step")
            left = min(left, steps_left / steps_per_epoch * per_epoch)
        if self._deadline is not None:
            left = min(left, self._deadline - time.monotonic())
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

    def _train_epoch(self, epoch, train_dataset_fn, steps_per_epoch, summaries):
        """One pass over the training data; returns the epoch's record."""
        cfg = self.config
        self._load_counters()
        counters = self._counters
        started = time.perf_counter()
        if self._clock is not None:
            self._clock["epoch_start"] = started
            self._clock["epoch_base"] = self.state.value("epoch_seconds")
        skip = counters["step_in_epoch"]
        dataset = train_dataset_fn(epoch)
        if skip:
            dataset = dataset.skip(skip)
        batches = self.distribute_dataset(dataset)
        if self._train_step is None:
            self._train_step = self.make_train_function(batches.element_spec)
        progbar = None
        target = self._epoch_target(steps_per_epoch)
        total_epochs = self._total_epochs(steps_per_epoch)
        if cfg.verbose == 1:
            print(f"Epoch {epoch + 1}/{total_epochs}", flush=True)
            progbar = keras.utils.Progbar(target or None, stateful_metrics=["lr"])
        epoch_factor = self._epoch_lr_factor()
        policy = self.lr_policy
        epoch_done, examples, done_steps = True, 0, 0
        # The in-epoch lines of verbose=2: the rate leaves out the epoch's first step
        # (tracing, iterator start-up), so the time left is right from the first line.
        paced_from, paced_examples = None, 0
        next_line = time.perf_counter() + cfg.progress_seconds
        for batch in batches:
            lr = policy.rate(counters["warmup_done"], epoch_factor)
            self._set_learning_rate(lr)
            out = self._train_step(batch)
            loss, accuracy, norm, applied, count = out["metrics"].numpy().tolist()
            # the data position counts every batch consumed, skipped or not
            counters["step_in_epoch"] += 1
            examples += int(count)
            if not applied:
                counters["skipped_steps"] += 1
                print(f"Non-finite loss/gradient at step {counters['global_step']}: "
                      "step skipped.")
                if not counters["warmup_done"] and cfg.reinit_on_nan:
                    if self.reinits >= cfg.max_reinits:
                        raise FloatingPointError(
                            f"Warm-up diverged {self.reinits} times; giving up."
                        )
                    print("NaN during warm-up: re-initialising model and optimizer.")
                    self.reinitialize()
                continue
            counters["global_step"] += 1
            step = counters["global_step"]
            if not counters["warmup_done"] and policy.warmup_done(step):
                counters["warmup_done"] = True
            counters["epoch_loss_sum"] += loss
            counters["epoch_accuracy_sum"] += accuracy
            counters["epoch_steps"] += 1
            done_steps += 1
            if progbar is not None:
                progbar.add(1, [("loss", loss), ("acc", accuracy), ("lr", lr)])
            elif cfg.verbose == 2:
                now = time.perf_counter()
                if paced_from is None:
                    paced_from = now
                else:
                    paced_examples += int(count)
                if now >= next_line and paced_examples:
                    next_line = now + cfg.progress_seconds
                    print(progress_line(
                        epoch + 1, total_epochs, done_steps, target,
                        counters["epoch_loss_sum"] / counters["epoch_steps"],
                        counters["epoch_accuracy_sum"] / counters["epoch_steps"],
                        paced_examples / (now - paced_from),
                        (done_steps - 1) / (now - paced_from)), flush=True)
            if step % cfg.log_every_steps == 0:
                summaries.train_step(step, loss, accuracy, norm, lr)
            if cfg.checkpoint_every_steps and step % cfg.checkpoint_every_steps == 0:
                self.save_checkpoint()
            if cfg.max_steps and step >= cfg.max_steps:
                epoch_done = False
                break
            if self._past_deadline():
                epoch_done = False
                print(f"Time budget of {cfg.max_train_seconds / 60:g} min reached at step "
                      f"{step}: stopping (the same command resumes from here).")
                break
        if epoch_done and not skip:
            self._steps_seen = counters["step_in_epoch"]
        if progbar is not None and (target is None or done_steps < target):
            progbar.update(done_steps, finalize=True)  # end the bar's line: epoch cut short
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
            "learning_rate": policy.rate(counters["warmup_done"], epoch_factor),
            "epoch_done": epoch_done,
        }

    def _after_validation(self, valid):
        state = self.state
        if self.lr_policy.halves_now(valid["loss"], state.value("lr_halved")):
            state.lr_halved.assign(True)
            if self.config.verbose:
                print(f"Validation loss {valid['loss']:.4f} < {self.config.halve_lr_below}: "
                      "learning rate halved.")
        if self.early_stopping.improves(valid["error_percent"], valid["loss"],
                                        state.value("best_error"), state.value("best_loss")):
            state.best_error.assign(valid["error_percent"])
            state.best_loss.assign(valid["loss"])
            state.bad_validations.assign(0)
            self.checkpoints.write_best()
        else:
            state.bad_validations.assign_add(1)

    def _past_deadline(self):
        deadline = getattr(self, "_deadline", None)
        return deadline is not None and time.monotonic() >= deadline

    def _stop_reason(self):
        return stop_reason(
            self.config, self.state.value("global_step"), self.state.value("epoch"),
            self.state.value("best_error"), self.state.value("bad_validations"))

    def _should_stop(self):
        return self._past_deadline() or self._stop_reason() is not None
