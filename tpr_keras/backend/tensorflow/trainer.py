"""``TensorFlowTrainer``: the training step of every tpr-keras model on TensorFlow, under
any ``tf.distribute`` strategy (the epochs are the base
:class:`~tpr_keras.training.trainer.Trainer`'s).

Keras 3 ``Model.fit`` does not run under ``MultiWorkerMirroredStrategy``; this
loop does, and it behaves identically under the default strategy,
``OneDeviceStrategy`` and ``MirroredStrategy``:

* Loss scaling is replica-aware and exact: every replica returns the *sum* of
  its per-example losses and gradients; they are all-reduced and divided by the
  number of examples in the global batch (partial last batches included), so a
  step on N replicas equals a step on one device with the same global batch.
* Gradients are clipped by the global norm of the *all-reduced* gradient (Keras'
  ``global_clipnorm`` clips each replica's share before its own all-reduce), or per
  weight matrix (``clip_per_matrix``, MemN2N §4.2); ``loss_reduction="sum"`` steps along
  the summed instead of the mean loss's gradient.
* NaN guard: a step with a non-finite loss or gradient is not applied (the
  optimizer state is untouched) and is counted; during warm-up it triggers a
  full re-initialisation of model and optimizer (TPR-RNN Appendix A).
* Learning-rate policy: warm-up at ``lr * warmup_factor``, halved once when the
  validation loss first falls below ``halve_lr_below`` (TPR-RNN Appendix A;
  the authors' code assigned the halved rate and overwrote it every step).
  The policy is :class:`~tpr_keras.training.lr_policy.LearningRatePolicy`,
  early stopping :class:`~tpr_keras.training.early_stopping.EarlyStopping`,
  checkpoint I/O :class:`~tpr_keras.training.checkpoints.CheckpointIO` and the
  counters :class:`~tpr_keras.training.trainer_state.TrainerState`: each tested alone.
* Early stopping on the validation error, ties broken by the validation loss
  with a ``min_delta_loss`` margin (see :class:`~tpr_keras.training.config.TrainConfig`), with the best
  weights kept in ``<model_dir>/best`` and restored at the end; optionally a
  shorter ``patience_at_zero`` once the validation error is 0.
* Steps run in-graph, ``steps_per_execution`` per compiled call (Keras' option of
  that name, default 1): the call reads its batches from the iterator itself and
  returns one row of numbers per step, so a call costs one Python dispatch and one
  host transfer. Dynamic loss scaling (``mixed_float16``) is part of the step: the
  scale and its count of good steps are variables that the step halves, doubles
  and resets. The other counters and the learning rate live in Python during an
  epoch and are written to their variables before every checkpoint; on one
  CPU replica the dataset is iterated directly (the ``tf.distribute`` input
  pipeline's multi-device iterator cost more than the step on 2 cores).
* Steady-state throughput: every epoch record holds its training examples/s
  (iteration and steps, validation excluded); :attr:`TensorFlowTrainer.train_examples_per_second`
  averages the epochs after the first (tracing) and
  :meth:`TensorFlowTrainer.benchmark_train_step` times the same compiled step on cached
  batches, for comparison.
* Checkpoints of model, optimizer, counters and data position in
  ``<model_dir>/checkpoints``; a restarted run resumes from the latest one
  (every worker reads the chief's), skipping the batches of the interrupted
  epoch it had already consumed and keeping that epoch's running loss sums.
* TensorBoard scalars in ``<model_dir>/tensorboard``; on the console a Keras
  progress bar (``verbose=1``) or plain lines for log files (``verbose=2``: one per
  epoch and one every ``progress_seconds`` inside an epoch), with examples/s and
  the time left.
* :attr:`TensorFlowTrainer.stop_reason` says why ``fit`` ended; :func:`finished_run` tells a
  command that its run already reached its stop condition (a run cut by the time
  budget or killed is not finished: the same command resumes it).
"""

import os
import tempfile

import tensorflow as tf

from tpr_keras.training import trainer as base_trainer
from tpr_keras.training.checkpoints import CheckpointIO
from tpr_keras.training.trainer_state import TrainerState


def without_autotune(dataset):
    """``dataset`` with tf.data autotuning disabled, unless its options set it.

    Deleting an autotuned iterator waits for the autotuning thread, whose
    wake-ups double from 10 ms: under CPU contention (the training step uses
    every core) an autotuned per-epoch iterator is intermittently released only
    at the next wake-up, 10 ms * (2^k - 1) after its creation, so epochs of
    3-7 s end at 10.2 or 20.5 s. Fixed buffer and parallelism values have
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


class TensorFlowTrainer(base_trainer.Trainer):
    """Trains a Keras model with a custom loop under any ``tf.distribute`` strategy.

    Args:
        model_fn: zero-argument callable returning a built Keras model.
        optimizer_fn: zero-argument callable returning a Keras optimizer.
        compute_fn: ``(model, features, labels, training) -> {"loss": [B],
            "correct": [B]}`` per-example values.
        config: a :class:`~tpr_keras.training.config.TrainConfig`.
        model_dir: where checkpoints, TensorBoard logs and ``best`` go; only
            the chief writes there, other workers write to a temporary folder.
        strategy: a ``tf.distribute.Strategy``; default: the default strategy.

    Example:
    >>> trainer = TensorFlowTrainer(model_fn, optimizer_fn, sparse_classification("y"),
    ...                             TrainConfig(epochs=5), model_dir="/tmp/run")
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
        self._train_step = None  # one step (the benchmarks')
        self._train_steps = None  # up to steps_per_execution steps (fit's)
        self._eval_step = None
        self._init_loop()

    # ----------------------------------------------------------------- steps
    def _replica_train(self, features, labels):
        with tf.GradientTape() as tape:
            out = self.compute_fn(self.model, features, labels, True)
            loss_sum = tf.reduce_sum(out["loss"])
            if self.loss_scaling:
                scale = tf.cast(self.state.loss_scale, loss_sum.dtype)
                scaled = loss_sum * scale
        grads = tape.gradient(scaled if self.loss_scaling else loss_sum,
                              self.model.trainable_variables)
        grads = [tf.convert_to_tensor(g) for g in grads]
        if self.loss_scaling:
            grads = [g / tf.cast(scale, g.dtype) for g in grads]
        count = tf.cast(tf.shape(out["loss"])[0], tf.float32)
        return loss_sum, grads, tf.reduce_sum(out["correct"]), count

    def _step_body(self):
        """The training step as a Python function of one (distributed) batch, to trace."""
        strategy, state = self.strategy, self.state
        clip = self.config.clip_norm
        period = self.config.loss_scale_period
        variables = self.model.trainable_variables
        summed = self.config.loss_reduction == "sum"
        clip_matrices = self.matrix_clipping()

        def step(batch):
            features, labels = batch
            loss_sum, grads, correct, count = strategy.run(
                self._replica_train, args=(features, labels)
            )
            total = strategy.reduce("SUM", count, axis=None)
            loss = strategy.reduce("SUM", loss_sum, axis=None) / total
            accuracy = strategy.reduce("SUM", correct, axis=None) / total
            grads = [strategy.reduce("SUM", g, axis=None) for g in grads]
            if not summed:
                grads = [g / total for g in grads]
            norm = tf.linalg.global_norm(grads)
            finite = tf.math.logical_and(
                tf.math.is_finite(loss), tf.math.is_finite(norm)
            )
            if clip:
                grads, _ = tf.clip_by_global_norm(grads, clip, use_norm=norm)
            if clip_matrices:
                grads = clip_matrices(grads)

            def apply():
                self.optimizer.apply(grads, variables)
                return tf.constant(True)

            applied = tf.cond(finite, apply, lambda: tf.constant(False))
            scale = state.loss_scale.read_value()
            if self.loss_scaling:  # dynamic loss scaling, as variable updates of the step
                good = state.loss_scale_good_steps.read_value()
                good = tf.where(finite, good + 1, tf.zeros_like(good))
                grow = good >= period
                scale = tf.where(finite, tf.where(grow, scale * 2.0, scale), scale / 2.0)
                state.loss_scale.assign(scale)
                state.loss_scale_good_steps.assign(tf.where(grow, tf.zeros_like(good), good))
            metrics = tf.stack([tf.cast(v, tf.float64) for v in
                                (loss, accuracy, norm, applied, total, scale)])
            return {
                "loss": loss,
                "accuracy": accuracy,
                "grad_norm": norm,
                "applied": applied,
                "examples": total,
                "metrics": metrics,
            }

        return step

    def make_train_function(self, element_spec):
        """The compiled, strategy-wrapped training step for batches of ``element_spec``.

        ``step(batch) -> {"loss", "accuracy", "grad_norm", "applied",
        "examples", "metrics"}``: the global mean loss and accuracy, the
        all-reduced gradient norm, whether the update was applied (False for a
        non-finite loss or gradient), the number of examples, and those five and
        the loss scale after the step as one float64 vector (one host transfer).
        With loss scaling the step also updates ``state.loss_scale`` and
        ``state.loss_scale_good_steps`` (halved on a non-finite step, doubled
        after ``loss_scale_period`` applied ones). ``element_spec`` is
        that of :meth:`distribute_dataset`'s result (or of a distributed
        dataset). The benchmarks time this step; ``fit`` runs it through
        :meth:`make_steps_function`.
        """
        return tf.function(self._step_body(), input_signature=[element_spec],
                           jit_compile=self.config.jit_compile or None, autograph=False)

    def make_steps_function(self):
        """Up to ``count`` training steps in one compiled call (Keras' ``steps_per_execution``).

        ``steps(iterator, count) -> float64[n, 6]``: the ``metrics`` rows of the
        ``n <= count`` steps run on the next batches of ``iterator`` (fewer when it
        runs out; 0 rows at its end). The batches are read in-graph, so a call costs
        one Python dispatch and one host transfer however many steps it runs.
        Autograph converts this loop only, not the step: the step's control flow is
        ``tf.cond`` and the models' ``keras.ops`` already, and converting every function the
        step's trace reaches took a third of a ``tiny`` TP-Transformer's trace.
        """
        body = tf.autograph.experimental.do_not_convert(self._step_body())
        if self.config.jit_compile:  # XLA compiles the step; the iterator stays outside
            body = tf.function(body, jit_compile=True)

        def steps(iterator, count):
            rows = tf.TensorArray(tf.float64, size=0, dynamic_size=True,
                                  element_shape=tf.TensorShape([6]))
            for i in tf.range(count):
                optional = iterator.get_next_as_optional()
                if not optional.has_value():
                    break
                rows = rows.write(i, body(optional.get_value())["metrics"])
            return rows.stack()

        return tf.function(steps)

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

    def _cache_batches(self, dataset, count):
        cached = list(self.distribute_dataset(dataset).take(count))
        if self._train_step is None:
            self._train_step = self.make_train_function(
                self.distribute_dataset(dataset).element_spec
            )
        return cached

    def _epoch_batches(self, train_dataset_fn, epoch, skip):
        dataset = train_dataset_fn(epoch)
        if skip:
            dataset = dataset.skip(skip)
        if self._train_steps is None:
            self._train_steps = self.make_steps_function()
        return iter(self.distribute_dataset(dataset))

    def _run_steps(self, batches, count):
        return self._train_steps(batches, tf.constant(count, tf.int32)).numpy().tolist()

    def _run_step(self, batch):
        return self._train_step(batch)["metrics"].numpy().tolist()

    def _eval_batches(self, dataset, group_key):
        if self._eval_step is None:
            self._eval_step = self._build_eval_step(dataset.element_spec)
        for features, labels in without_autotune(dataset):
            loss, correct = self._eval_step(features, labels)
            group = None if group_key is None else labels[group_key].numpy()
            yield loss.numpy(), correct.numpy(), group

    def _build_eval_step(self, element_spec):
        def step(features, labels):
            out = self.compute_fn(self.model, features, labels, False)
            return out["loss"], out["correct"]

        return tf.function(step, input_signature=list(element_spec), autograph=False)

    # --------------------------------------------------------------- helpers
    def _set_learning_rate(self, value):
        """Assigns the optimizer's lr when it changed (a Python-side mirror, no sync)."""
        if value != self._assigned_lr:
            self.optimizer.learning_rate.assign(value)
            self._assigned_lr = value

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

