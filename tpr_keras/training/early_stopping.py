"""When training stops: early stopping on the validation error, and the run's limits."""

import dataclasses

from tpr_keras.training.callback_base import Callback


@dataclasses.dataclass
class EarlyStopping(Callback):
    """Early stopping on the validation error, ties broken by the validation loss.

    A validation improves on the best one with a strictly lower error, or with an
    equal error and a loss lower by more than ``min_delta_loss`` (with 0 errors the
    error cannot improve, and loss changes of 1e-4 are noise that would reset the
    patience for dozens of epochs). As a loop :class:`Callback` it keeps the best
    validation (error, loss, and its weights through the trainer's checkpoints) and the
    count of validations since, in the trainer's checkpointed state.

    Args:
        patience: stop after this many validations without improvement; None
            never stops early.
        min_delta_loss: the loss margin of an improvement at an equal error
            (absolute, nats per example).
        patience_at_zero: once the best error is 0 %, stop after this many
            validations without improvement; None keeps ``patience``.
        target_error: also stop once the best validation error (%) is at or
            below this.

    Example:
    >>> stopping = EarlyStopping(patience=3)
    >>> stopping.improves(1.0, 0.5, best_error=2.0, best_loss=0.1)
    True
    >>> stopping.reason(best_error=5.0, bad_validations=3)
    'early_stopping'
    """

    patience: int | None = 20
    min_delta_loss: float = 1e-3
    patience_at_zero: int | None = None
    target_error: float | None = None

    def __post_init__(self):
        Callback.__init__(self)

    @classmethod
    def from_config(cls, config):
        """The early stopping of a :class:`~tpr_keras.training.TrainConfig`."""
        return cls(config.patience, config.min_delta_loss, config.patience_at_zero,
                   config.target_error)

    def improves(self, error, loss, best_error, best_loss):
        """A strictly lower error, or an equal one and a loss lower by the margin."""
        return error < best_error or (
            error == best_error and loss < best_loss - self.min_delta_loss)

    def on_epoch_end(self, epoch, logs=None):
        if "val_error_percent" not in logs:
            return
        state = self.trainer.state
        if self.improves(logs["val_error_percent"], logs["val_loss"],
                         state.value("best_error"), state.value("best_loss")):
            state.best_error.assign(logs["val_error_percent"])
            state.best_loss.assign(logs["val_loss"])
            state.bad_validations.assign(0)
            self.trainer.checkpoints.write_best()
        else:
            state.bad_validations.assign_add(1)

    def stop_reason(self):
        return self.reason(self.trainer.state.value("best_error"),
                           self.trainer.state.value("bad_validations"))

    def reason(self, best_error, bad_validations):
        """``"target_error"``, ``"early_stopping"`` or None for this record."""
        if self.target_error is not None and best_error <= self.target_error:
            return "target_error"
        if (self.patience_at_zero is not None and best_error == 0.0
                and bad_validations >= self.patience_at_zero):
            return "early_stopping"
        if self.patience is not None and bad_validations >= self.patience:
            return "early_stopping"
        return None


def stop_reason(config, global_step, epoch, best_error, bad_validations):
    """The stop condition ``config`` has reached in this state, or None (time budget aside).

    The limits come first (``max_steps``, then ``epochs``), then
    :meth:`EarlyStopping.reason`.
    """
    if config.max_steps and global_step >= config.max_steps:
        return "steps"
    if epoch >= config.epochs:
        return "epochs"
    return EarlyStopping.from_config(config).reason(best_error, bad_validations)
