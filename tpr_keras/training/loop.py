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
  the reference code overwrote this every step, see NOTES.md).
* Early stopping on the validation error (ties broken by loss) with the best
  weights kept in ``<model_dir>/best`` and restored at the end.
* Checkpoints of model, optimizer, counters and data position in
  ``<model_dir>/checkpoints``; a restarted run resumes from the latest one
  (every worker reads the chief's), skipping the batches of the interrupted
  epoch it had already consumed and keeping that epoch's running loss sums.
* TensorBoard scalars in ``<model_dir>/tensorboard`` and a Keras progress bar.
"""

import dataclasses
import json
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf


@dataclasses.dataclass
class TrainConfig:
    """Hyper-parameters of :class:`Trainer` (defaults: TPR-RNN Appendix A).

    Attributes:
        learning_rate: base learning rate.
        epochs: maximum number of epochs.
        max_steps: optional cap on optimizer steps (overrides ``epochs``).
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
        target_error: also stop once the validation error (%) is at or
            below this value.
        checkpoint_every_steps: also checkpoint inside an epoch this often.
        log_every_steps: TensorBoard logging interval.
        verbose: 0 silent, 1 progress bar, 2 one line per epoch.
    """

    learning_rate: float = 0.008
    epochs: int = 100
    max_steps: int | None = None
    clip_norm: float | None = 5.0
    warmup_steps: int = 50
    warmup_factor: float = 0.1
    reinit_on_nan: bool = True
    max_reinits: int = 10
    halve_lr_below: float | None = 0.1
    decay_every_epochs: int | None = None
    decay_factor: float = 0.5
    patience: int | None = 20
    target_error: float | None = None
    checkpoint_every_steps: int | None = None
    log_every_steps: int = 10
    verbose: int = 1


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


def variables_by_position(variables):
    """``{"v00012": variable}``: variables keyed by their position.

    The variable order of a model (and of its optimizer) is fixed by its
    architecture, while Keras' auto-generated names (``dense_16``,
    ``adam_7``) change from one instance to the next; TF still refuses a
    restore whose shapes do not match.
    """
    return {f"v{i:05d}": variable for i, variable in enumerate(variables)}


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
            self.state = {
                name: tf.Variable(value, trainable=False, name=name, dtype=dtype)
                for name, value, dtype in [
                    ("global_step", 0, tf.int64),
                    ("epoch", 0, tf.int64),
                    ("step_in_epoch", 0, tf.int64),
                    ("lr_halved", False, tf.bool),
                    ("warmup_done", False, tf.bool),
                    ("best_error", np.inf, tf.float64),
                    ("best_loss", np.inf, tf.float64),
                    ("bad_validations", 0, tf.int64),
                    ("skipped_steps", 0, tf.int64),
                    # a phase-dependent lr multiplier set by the caller (MemN2N
                    # linear start); checkpointed so a resumed run keeps it
                    ("lr_factor", 1.0, tf.float64),
                    # running sums of the current epoch, so that a resumed
                    # epoch reports the same mean train loss as an unbroken one
                    ("epoch_loss_sum", 0.0, tf.float64),
                    ("epoch_accuracy_sum", 0.0, tf.float64),
                    ("epoch_steps", 0, tf.int64),
                ]
            }
        # Variables are checkpointed by position rather than through the
        # model's object graph: tf.train.Checkpoint silently skips sub-layers that
        # Keras keeps in Python lists, which would make resume and
        # restore_best mix old and new weights.
        model_variables = variables_by_position(self.model.variables)
        self.checkpoint = tf.train.Checkpoint(
            model_variables=model_variables,
            optimizer_variables=variables_by_position(self.optimizer.variables),
            **self.state,
        )
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, os.path.join(self.write_dir, "checkpoints"), max_to_keep=3
        )
        self.best_checkpoint = tf.train.Checkpoint(model_variables=model_variables)
        self.best_prefix = os.path.join(self.write_dir, "best", "weights")
        self._train_step = None
        self._eval_step = None
        self.reinits = 0
        self.restored_from = None

    # ----------------------------------------------------------------- steps
    def _replica_train(self, features, labels):
        with tf.GradientTape() as tape:
            out = self.compute_fn(self.model, features, labels, True)
            loss_sum = tf.reduce_sum(out["loss"])
        grads = tape.gradient(loss_sum, self.model.trainable_variables)
        grads = [tf.convert_to_tensor(g) for g in grads]
        count = tf.cast(tf.shape(out["loss"])[0], tf.float32)
        return loss_sum, grads, tf.reduce_sum(out["correct"]), count

    def _build_train_step(self, element_spec):
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
            return {
                "loss": loss,
                "accuracy": accuracy,
                "grad_norm": norm,
                "applied": applied,
            }

        return tf.function(step, input_signature=[element_spec])

    def _build_eval_step(self, element_spec):
        def step(features, labels):
            out = self.compute_fn(self.model, features, labels, False)
            return out["loss"], out["correct"]

        return tf.function(step, input_signature=list(element_spec))

    # --------------------------------------------------------------- helpers
    def _set_learning_rate(self, value):
        if float(self.optimizer.learning_rate.numpy()) != value:
            self.optimizer.learning_rate.assign(value)

    def current_learning_rate(self):
        lr = self.config.learning_rate * float(self.state["lr_factor"].numpy())
        if not bool(self.state["warmup_done"].numpy()):
            lr *= self.config.warmup_factor
        if bool(self.state["lr_halved"].numpy()):
            lr *= 0.5
        if self.config.decay_every_epochs:
            decays = int(self.state["epoch"].numpy()) // self.config.decay_every_epochs
            lr *= self.config.decay_factor**decays
        return lr

    def reinitialize(self):
        """Fresh weights for the model and a zeroed optimizer state."""
        fresh = self.model_fn()
        for variable, value in zip(self.model.weights, fresh.weights):
            variable.assign(value)
        for variable in self.optimizer.variables:
            if "learning_rate" not in variable.path:
                variable.assign(tf.zeros_like(variable))
        self.state["global_step"].assign(0)
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
        for features, labels in dataset:
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
        latest = tf.train.latest_checkpoint(os.path.join(self.model_dir, "checkpoints"))
        if latest is not None:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
        self.restored_from = latest
        self._check_workers_agree()
        return latest is not None

    def _check_workers_agree(self):
        """Raises if the workers of a multi-worker cluster hold different steps."""
        resolver = getattr(self.strategy, "cluster_resolver", None)
        spec = resolver.cluster_spec() if resolver is not None else None
        if not spec or sum(spec.num_tasks(job) for job in spec.jobs) <= 1:
            return
        step = self.state["global_step"]

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
        if not tf.io.gfile.exists(self.best_prefix + ".index"):
            return False
        self.best_checkpoint.read(self.best_prefix).expect_partial()
        return True

    def _save(self):
        self.manager.save(checkpoint_number=int(self.state["global_step"].numpy()))

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
        start_epoch = int(self.state["epoch"].numpy())
        history_path = os.path.join(self.write_dir, "history.json")
        history = []
        if resumed and os.path.exists(history_path):
            with open(history_path) as f:  # epochs after the checkpoint are redone
                history = [h for h in json.load(f) if h["epoch"] <= start_epoch]
        writer = tf.summary.create_file_writer(
            os.path.join(self.write_dir, "tensorboard", "train")
        )
        if resumed:  # always said: a silent resume is a surprise
            print(
                f"Resumed from {self.restored_from} at epoch "
                f"{start_epoch + 1}, step {int(self.state['global_step'].numpy())}."
            )
        stop = self._should_stop()
        for epoch in range(start_epoch, cfg.epochs):
            if stop:
                break
            skip = int(self.state["step_in_epoch"].numpy())
            dataset = train_dataset_fn(epoch)
            if skip:
                dataset = dataset.skip(skip)
            distributed = self.strategy.experimental_distribute_dataset(dataset)
            if self._train_step is None:
                self._train_step = self._build_train_step(distributed.element_spec)
            progbar = keras.utils.Progbar(
                steps_per_epoch, verbose=1 if cfg.verbose == 1 else 0,
                stateful_metrics=["lr"],
            )
            if cfg.verbose:
                print(f"Epoch {epoch + 1}/{cfg.epochs}")
            started = time.time()
            epoch_done = True
            for batch in distributed:
                self._set_learning_rate(self.current_learning_rate())
                out = self._train_step(batch)
                # the data position counts every batch consumed, skipped or not
                self.state["step_in_epoch"].assign_add(1)
                loss = float(out["loss"].numpy())
                if not bool(out["applied"].numpy()):
                    self.state["skipped_steps"].assign_add(1)
                    in_warmup = not bool(self.state["warmup_done"].numpy())
                    print(
                        f"Non-finite loss/gradient at step "
                        f"{int(self.state['global_step'].numpy())}: step skipped."
                    )
                    if in_warmup and cfg.reinit_on_nan:
                        if self.reinits >= cfg.max_reinits:
                            raise FloatingPointError(
                                f"Warm-up diverged {self.reinits} times; giving up."
                            )
                        print("NaN during warm-up: re-initialising model and optimizer.")
                        self.reinitialize()
                    continue
                step = int(self.state["global_step"].assign_add(1).numpy())
                if step >= cfg.warmup_steps and not bool(
                    self.state["warmup_done"].numpy()
                ):
                    self.state["warmup_done"].assign(True)
                accuracy = float(out["accuracy"].numpy())
                self.state["epoch_loss_sum"].assign_add(loss)
                self.state["epoch_accuracy_sum"].assign_add(accuracy)
                self.state["epoch_steps"].assign_add(1)
                progbar.add(
                    1,
                    [("loss", loss), ("acc", accuracy),
                     ("lr", self.current_learning_rate())],
                )
                if step % cfg.log_every_steps == 0:
                    with writer.as_default(step=step):
                        tf.summary.scalar("loss", loss)
                        tf.summary.scalar("accuracy", accuracy)
                        tf.summary.scalar("grad_norm", out["grad_norm"])
                        tf.summary.scalar("learning_rate", self.current_learning_rate())
                if cfg.checkpoint_every_steps and step % cfg.checkpoint_every_steps == 0:
                    self._save()
                if cfg.max_steps and step >= cfg.max_steps:
                    epoch_done = False
                    break
            steps = max(int(self.state["epoch_steps"].numpy()), 1)
            record = {
                "epoch": epoch + 1,
                "step": int(self.state["global_step"].numpy()),
                "train_loss": float(self.state["epoch_loss_sum"].numpy()) / steps,
                "train_accuracy": float(self.state["epoch_accuracy_sum"].numpy()) / steps,
                "seconds": time.time() - started,
                "learning_rate": self.current_learning_rate(),
            }
            if valid_dataset is not None:
                valid = self.evaluate(valid_dataset)
                record.update(
                    valid_loss=valid["loss"], valid_error_percent=valid["error_percent"]
                )
                self._after_validation(valid)
                with writer.as_default(step=record["step"]):
                    tf.summary.scalar("valid_loss", valid["loss"])
                    tf.summary.scalar("valid_error_percent", valid["error_percent"])
            history.append(record)
            if valid_dataset is not None and after_validation is not None:
                after_validation(self, history)
            if epoch_done:
                self.state["epoch"].assign(epoch + 1)
                for name in ("step_in_epoch", "epoch_loss_sum", "epoch_accuracy_sum",
                             "epoch_steps"):
                    self.state[name].assign(tf.zeros_like(self.state[name]))
            # History first (atomically), then the checkpoint: a crash in between
            # redoes this epoch, and fit() then drops the record it had written.
            if self.chief:
                with open(history_path + ".tmp", "w") as f:
                    json.dump(history, f, indent=1)
                os.replace(history_path + ".tmp", history_path)
            self._save()
            if cfg.verbose:
                line = (
                    f"epoch {epoch + 1}: loss {record['train_loss']:.4f} "
                    f"acc {record['train_accuracy']:.4f}"
                )
                if "valid_loss" in record:
                    line += (
                        f" | valid loss {record['valid_loss']:.4f} "
                        f"error {record['valid_error_percent']:.2f}%"
                    )
                print(line + f" | {record['seconds']:.1f}s")
            stop = self._should_stop()
        writer.flush()
        if valid_dataset is not None:
            self.restore_best()
        return history

    def _after_validation(self, valid):
        cfg = self.config
        if (
            cfg.halve_lr_below is not None
            and not bool(self.state["lr_halved"].numpy())
            and valid["loss"] < cfg.halve_lr_below
        ):
            self.state["lr_halved"].assign(True)
            if cfg.verbose:
                print(f"Validation loss {valid['loss']:.4f} < {cfg.halve_lr_below}: "
                      "learning rate halved.")
        best_error = float(self.state["best_error"].numpy())
        best_loss = float(self.state["best_loss"].numpy())
        improved = valid["error_percent"] < best_error or (
            valid["error_percent"] == best_error and valid["loss"] < best_loss
        )
        if improved:
            self.state["best_error"].assign(valid["error_percent"])
            self.state["best_loss"].assign(valid["loss"])
            self.state["bad_validations"].assign(0)
            self.best_checkpoint.write(self.best_prefix)
        else:
            self.state["bad_validations"].assign_add(1)

    def _should_stop(self):
        cfg = self.config
        if cfg.max_steps and int(self.state["global_step"].numpy()) >= cfg.max_steps:
            return True
        if cfg.target_error is not None and (
            float(self.state["best_error"].numpy()) <= cfg.target_error
        ):
            return True
        return (
            cfg.patience is not None
            and int(self.state["bad_validations"].numpy()) >= cfg.patience
        )
