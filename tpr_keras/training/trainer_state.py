"""The Trainer's checkpointed counters as one typed object."""

import dataclasses

import numpy as np

# (name, initial value, dtype): the order is the checkpoint's, and the names are its keys.
_FIELDS = (
    ("global_step", 0, "int64"),
    ("epoch", 0, "int64"),
    ("step_in_epoch", 0, "int64"),
    ("lr_halved", False, "bool"),
    ("warmup_done", False, "bool"),
    ("best_error", np.inf, "float64"),
    ("best_loss", np.inf, "float64"),
    ("bad_validations", 0, "int64"),
    ("skipped_steps", 0, "int64"),
    ("lr_factor", 1.0, "float64"),
    ("epoch_loss_sum", 0.0, "float64"),
    ("epoch_accuracy_sum", 0.0, "float64"),
    ("epoch_steps", 0, "int64"),
    ("train_seconds", 0.0, "float64"),
    ("epoch_seconds", 0.0, "float64"),
    ("loss_scale", 2.0 ** 15, "float64"),
    ("loss_scale_good_steps", 0, "int64"),
)

#: Fields added after checkpoints of long runs existed: a checkpoint without them restores
#: with their initial values instead of failing (they count time or hold the loss scale).
OPTIONAL_FIELDS = frozenset({"train_seconds", "epoch_seconds", "loss_scale",
                             "loss_scale_good_steps"})


@dataclasses.dataclass
class TrainerState:
    """The training counters that a checkpoint holds next to model and optimizer.

    Every field is a non-trainable ``tf.Variable`` created in the strategy's scope
    (:meth:`create`, for the TensorFlow trainer) or a :class:`HostScalar`
    (:meth:`create_host`, for the JAX trainer, which writes them into its own
    checkpoints); :meth:`variables` gives them by name, the keys of the
    checkpoint. During an epoch the :class:`~tpr_keras.training.Trainer` keeps
    the per-step ones in Python and writes them back before every checkpoint, except
    the loss scale and its good steps, which the compiled step itself updates.

    Attributes:
        global_step: optimizer steps applied.
        epoch: epochs completed.
        step_in_epoch: batches of the current epoch consumed (the data position).
        lr_halved: the one-time halving on a low validation loss has happened.
        warmup_done: the warm-up steps are over.
        best_error: lowest validation error (%) so far.
        best_loss: validation loss of that best validation.
        bad_validations: validations since the last improvement.
        skipped_steps: steps not applied for a non-finite loss or gradient.
        lr_factor: a phase-dependent learning-rate multiplier set by the caller
            (MemN2N linear start, see :meth:`Trainer.set_lr_factor`).
        epoch_loss_sum: running loss sum of the current epoch, so that a resumed
            epoch reports the same mean train loss as an unbroken one.
        epoch_accuracy_sum: the same for the accuracy.
        epoch_steps: steps summed in those two.
        train_seconds: wall seconds spent in ``fit`` (training steps and validations)
            up to the checkpoint, summed over every process of the run: a resumed run
            adds to it, and the time after a process's last checkpoint, redone by the
            next, is not counted twice.
        loss_scale: the current scale of dynamic loss scaling (used only when the
            trainer scales, see :class:`~tpr_keras.training.config.TrainConfig`).
        loss_scale_good_steps: applied steps since the loss scale last changed (it
            doubles after ``loss_scale_period`` of them), so a resumed run doubles it
            at the same step as an unbroken one.
        epoch_seconds: wall seconds of the current epoch's training steps up to the
            checkpoint, summed the same way (0 between epochs). Under multi-worker
            training each worker counts its own time; the chief's is the one reported.

    Example:
    >>> state = TrainerState.create()
    >>> int(state.global_step.numpy()), sorted(state.variables())[:2]
    (0, ['bad_validations', 'best_error'])
    """

    global_step: object
    epoch: object
    step_in_epoch: object
    lr_halved: object
    warmup_done: object
    best_error: object
    best_loss: object
    bad_validations: object
    skipped_steps: object
    lr_factor: object
    epoch_loss_sum: object
    epoch_accuracy_sum: object
    epoch_steps: object
    train_seconds: object
    epoch_seconds: object
    loss_scale: object
    loss_scale_good_steps: object

    @classmethod
    def create(cls):
        """Fresh counters as ``tf.Variable`` (call inside the strategy's scope)."""
        import tensorflow as tf

        return cls(**{
            name: tf.Variable(value, trainable=False, name=name, dtype=dtype)
            for name, value, dtype in _FIELDS
        })

    @classmethod
    def create_host(cls):
        """Fresh counters as :class:`HostScalar` (no TensorFlow)."""
        return cls(**{name: HostScalar(value, dtype) for name, value, dtype in _FIELDS})

    def variables(self):
        """``{name: variable}`` in a fixed order: what checkpoints store."""
        return {name: getattr(self, name) for name, _, _ in _FIELDS}

    def value(self, name):
        """The Python value (int, float or bool) of one counter."""
        return getattr(self, name).numpy().item()


class HostScalar:
    """A counter held in Python with the part of ``tf.Variable``'s interface the
    trainers use (``assign``, ``assign_add``, ``numpy``)."""

    def __init__(self, value, dtype):
        self.dtype = dtype
        self._value = np.asarray(value, dtype)

    def assign(self, value):
        self._value = np.asarray(value, self.dtype)

    def assign_add(self, value):
        self.assign(self._value + value)

    def numpy(self):
        return self._value
