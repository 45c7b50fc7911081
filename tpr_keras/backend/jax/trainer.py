"""``JAXTrainer``: the training step on Keras' JAX backend, one ``jax.jit``-compiled step,
no TensorFlow.

:class:`JAXTrainer` runs the same epochs as the TensorFlow
:class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer` (the base
:class:`~tpr_keras.training.trainer.Trainer`:
the learning-rate policy, NaN guard and re-initialisation, validation, early stopping,
time budget, checkpoints and resume, history) with the step written the JAX way: the
model runs statelessly on arrays (``keras.StatelessScope``), ``jax.value_and_grad``
differentiates the summed per-example loss, and ``optimizer.stateless_apply`` updates.
The step computes what the TensorFlow step does on one replica — mean loss over the
batch's real examples, the gradient's global norm, clipping by it, an update skipped
when the loss or norm is not finite, dynamic loss scaling — and returns its numbers as one
array; :meth:`JAXTrainer._run_steps` dispatches ``steps_per_execution`` steps before it
waits for their numbers, in one host transfer.

Data parallelism: under a ``keras.distribution.DataParallel`` distribution (set before the
model is built; ``train.*`` set one where JAX has more than one device) the variables are
replicated, every batch is split over the devices along its first axis, and XLA
all-reduces the gradient sums, so a step equals the one-device step on the same global
batch.

Batches are numpy: ``(features, labels)`` dicts, ``labels["weight"]`` (optional) 0 for
filler rows (see :class:`~tpr_keras.data.babi.batches.NumpyBatches`), so every batch
can have one fixed shape and JAX compiles the step once per shape. Checkpoints are numpy
files (:class:`~tpr_keras.training.host_checkpoints.HostCheckpoints`).
"""

import itertools
import os

import keras
import numpy as np

from tpr_keras.training import trainer as base_trainer
from tpr_keras.training.host_checkpoints import HostCheckpoints
from tpr_keras.training.trainer_state import TrainerState


class JAXTrainer(base_trainer.Trainer):
    """Trains a Keras model on the JAX backend with a jit-compiled step.

    Args:
        model_fn: zero-argument callable returning a built Keras model.
        optimizer_fn: zero-argument callable returning a Keras optimizer.
        compute_fn: ``(model, features, labels, training) -> {"loss": [B],
            "correct": [B]}`` per-example values (``tpr_keras.training.losses``).
        config: a :class:`~tpr_keras.training.config.TrainConfig` (``jit_compile``
            is ignored: the step is always compiled).
        model_dir: where checkpoints and ``best`` go.

    Example:
    >>> trainer = JAXTrainer(model_fn, optimizer_fn, sparse_classification("answer"),
    ...                      TrainConfig(epochs=5), model_dir="/tmp/run")
    >>> history = trainer.fit(lambda epoch: train_batches.batches(epoch), valid_batches)
    """

    def __init__(self, model_fn, optimizer_fn, compute_fn, config, model_dir):
        if keras.backend.backend() != "jax":
            raise ValueError(f"JAXTrainer needs KERAS_BACKEND=jax; Keras runs on "
                             f"{keras.backend.backend()!r} (use tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer).")
        self.model_fn = model_fn
        self.optimizer_fn = optimizer_fn
        self.compute_fn = compute_fn
        self.config = config
        self.model_dir = self.write_dir = model_dir
        self.chief = True
        os.makedirs(model_dir, exist_ok=True)
        self.model = model_fn()
        self.optimizer = optimizer_fn()
        self.optimizer.build(self.model.trainable_variables)
        self.state = TrainerState.create_host()
        self.checkpoints = HostCheckpoints(self.model, self.optimizer, self.state, model_dir)
        lr_index = [i for i, v in enumerate(self.optimizer.variables)
                    if "learning_rate" in v.path]
        self._lr_index = lr_index[0] if lr_index else None
        self._lr = float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))
        self._values = None  # (trainable, non_trainable, optimizer) arrays during fit
        self._scaling = None  # (loss-scale exponent, good steps) arrays during fit
        self._train_step = None
        self._eval_step = None
        self._init_loop()

    host_only = True  # batches are host arrays, iterated directly

    # ------------------------------------------------------------- variables
    def _pull(self):
        """The variables' values and the loss scale's state (exponent, good steps) as
        the arrays the compiled step takes."""
        if self._values is None:
            self._values = tuple([v.value for v in variables] for variables in (
                self.model.trainable_variables, self.model.non_trainable_variables,
                self.optimizer.variables))
            scale = self.state.value("loss_scale")
            exponent = int(np.round(np.log2(scale)))
            if self.loss_scaling and 2.0 ** exponent != scale:
                raise ValueError(f"JAXTrainer's loss scale is a power of two, not {scale}.")
            self._scaling = (np.int32(exponent),
                             np.int32(self.state.value("loss_scale_good_steps")))
        return self._values, self._scaling

    def _push(self):
        """Writes the step's arrays back into the Keras variables and the loss scale's
        state (which then lead)."""
        if self._values is None:
            return
        for variables, values in zip((self.model.trainable_variables,
                                      self.model.non_trainable_variables,
                                      self.optimizer.variables), self._values):
            for variable, value in zip(variables, values):
                variable.assign(value)
        if self.loss_scaling:
            exponent, good = (int(np.asarray(a)) for a in self._scaling)
            self.state.loss_scale.assign(2.0 ** exponent)
            self.state.loss_scale_good_steps.assign(good)
        self._values = self._scaling = None

    # ----------------------------------------------------------------- steps
    def _forward(self, trainable, non_trainable, features, labels, training):
        """Weighted sums of one batch, computed statelessly:
        ``(loss_sum, (correct_sum, count, non_trainable, loss, correct, weight))``."""
        from keras import ops

        model = self.model
        mapping = list(zip(model.trainable_variables, trainable)) + list(
            zip(model.non_trainable_variables, non_trainable))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            out = self.compute_fn(model, features, labels, training)
        updated = [scope.get_current_value(v) for v in model.non_trainable_variables]
        non_trainable = [old if new is None else new
                         for old, new in zip(non_trainable, updated)]
        loss = ops.cast(out["loss"], "float32")
        correct = ops.cast(out["correct"], "float32")
        weight = labels.get("weight") if isinstance(labels, dict) else None
        weight = ops.ones_like(loss) if weight is None else ops.cast(weight, "float32")
        return ops.sum(loss * weight), (ops.sum(correct * weight), ops.sum(weight),
                                        non_trainable, loss, correct, weight)

    def _make_train_step(self):
        import jax
        import jax.numpy as jnp

        clip = self.config.clip_norm
        period = self.config.loss_scale_period
        summed = self.config.loss_reduction == "sum"
        clip_matrices = self.matrix_clipping()
        optimizer = self.optimizer
        lr_index = self._lr_index

        scaling = self.loss_scaling

        def scaled_forward(trainable, non_trainable, scale, features, labels):
            loss_sum, aux = self._forward(trainable, non_trainable, features, labels, True)
            return (loss_sum * scale if scaling else loss_sum), (loss_sum, aux)

        def step(values, lr, scaling_state, features, labels):
            trainable, non_trainable, optimizer_values = values
            # The scale is 2 ** exponent: exact in float32, inf past 2 ** 127 (an
            # overflow, halved like any other), and the exponent survives that.
            exponent, good = scaling_state
            scale = jnp.ldexp(jnp.float32(1.0), exponent)
            optimizer_values = list(optimizer_values)
            if lr_index is not None:
                optimizer_values[lr_index] = lr.astype(optimizer_values[lr_index].dtype)
            (_, (loss_sum, aux)), grads = jax.value_and_grad(
                scaled_forward, has_aux=True)(trainable, non_trainable, scale, features,
                                              labels)
            correct_sum, count, new_non_trainable = aux[:3]
            total = jnp.maximum(count, 1.0)
            divisor = 1.0 if summed else total  # the mean's or the sum's gradient
            divisor = divisor * scale if scaling else divisor  # unscaled
            grads = [g / jnp.asarray(divisor, g.dtype) for g in grads]
            norm = jnp.sqrt(sum(jnp.sum(jnp.square(g.astype("float32"))) for g in grads))
            loss = loss_sum / total
            finite = jnp.isfinite(loss) & jnp.isfinite(norm)
            if clip:  # tf.clip_by_global_norm: t * clip / max(norm, clip)
                factor = clip / jnp.maximum(norm, clip)
                grads = [g * factor.astype(g.dtype) for g in grads]
            if clip_matrices:
                grads = clip_matrices(grads)
            new_trainable, new_optimizer = optimizer.stateless_apply(
                optimizer_values, grads, trainable)

            def keep_if_finite(new, old):
                return [jnp.where(finite, n, o) for n, o in zip(new, old)]

            values = (keep_if_finite(new_trainable, trainable), new_non_trainable,
                      keep_if_finite(new_optimizer, optimizer_values))
            if scaling:  # halve on a non-finite step, double after `period` good ones
                good = jnp.where(finite, good + 1, 0)
                grow = good >= period
                exponent = jnp.where(finite, exponent + grow.astype(exponent.dtype),
                                     exponent - 1)
                good = jnp.where(grow, 0, good)
                scale = jnp.ldexp(jnp.float32(1.0), exponent)
            metrics = jnp.stack([loss, correct_sum / total, norm,
                                 finite.astype("float32"), count, scale])
            return values, (exponent, good), metrics

        return jax.jit(step)

    def _make_eval_step(self):
        import jax

        def step(trainable, non_trainable, features, labels):
            _, aux = self._forward(trainable, non_trainable, features, labels, False)
            return aux[3], aux[4], aux[5]

        return jax.jit(step)

    # ----------------------------------------------------------- loop hooks
    def _epoch_batches(self, train_dataset_fn, epoch, skip):
        batches = iter(train_dataset_fn(epoch))
        return itertools.islice(batches, skip, None) if skip else batches

    def train_step(self, batch):
        """One compiled training step on ``batch`` (numpy ``(features, labels)``): ``[loss,
        accuracy, grad_norm, applied, examples, loss_scale]``, what :meth:`fit` runs;
        the benchmarks time it."""
        return self._run_step(batch)

    def _shard(self, batch):
        """``batch`` split over the devices along its first axis under a
        ``keras.distribution.DataParallel`` distribution (else as it is)."""
        distribution = keras.distribution.distribution()
        if distribution is None:
            return batch
        import jax

        def shard(array):
            array = np.asarray(array)
            layout = distribution.get_data_layout(array.shape)
            return keras.distribution.distribute_tensor(array, layout)

        return jax.tree_util.tree_map(shard, batch)

    def _dispatch(self, batch):
        """Starts one step on ``batch``; returns its metrics (a device array, not awaited)."""
        if self._train_step is None:
            self._train_step = self._make_train_step()
        features, labels = self._shard(batch)
        values, scaling = self._pull()
        self._values, self._scaling, metrics = self._train_step(
            values, np.float32(self._lr), scaling, features, labels)
        return metrics

    def _run_step(self, batch):
        return np.asarray(self._dispatch(batch), np.float64).tolist()

    def _run_steps(self, batches, count):
        """Dispatches up to ``count`` steps (JAX runs them asynchronously, overlapping
        the host's next batches) and waits once, for all their metrics."""
        import jax

        metrics = [self._dispatch(batch) for batch in itertools.islice(batches, count)]
        return np.asarray(jax.device_get(metrics), np.float64).reshape(-1, 6).tolist()

    def _eval_batches(self, dataset, group_key):
        if self._eval_step is None:
            self._eval_step = self._make_eval_step()
        self._push()
        trainable = [v.value for v in self.model.trainable_variables]
        non_trainable = [v.value for v in self.model.non_trainable_variables]
        for batch in dataset:
            features, labels = self._shard(batch)
            loss, correct, weight = (np.asarray(a) for a in self._eval_step(
                trainable, non_trainable, features, labels))
            real = weight > 0
            group = None if group_key is None else np.asarray(labels[group_key])[real]
            yield loss[real], correct[real], group

    def _set_learning_rate(self, value):
        self._lr = float(value)
        self._assigned_lr = value

    # ------------------------------------------------------------ lifecycle
    def restore(self):
        self._push()
        latest = self.checkpoints.restore_latest()
        self.restored_from = latest
        return latest is not None

    def restore_best(self):
        self._push()
        return self.checkpoints.restore_best()

    def save_checkpoint(self):
        self._push()
        return super().save_checkpoint()

    def reinitialize(self):
        self._push()
        super().reinitialize()

    def fit(self, *args, **kwargs):
        try:
            return super().fit(*args, **kwargs)
        finally:
            self._push()

    def _cache_batches(self, dataset, count):
        self._push()  # the variables lead while the benchmark saves and restores them
        return list(itertools.islice(dataset, count))

    def _after_benchmark(self):
        self._values = self._scaling = None  # the saved values go back into the variables
