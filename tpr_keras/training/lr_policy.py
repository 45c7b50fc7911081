"""The learning-rate policy of the training loop, as plain Python (no TensorFlow)."""

import dataclasses

from tpr_keras.training.callback_base import Callback


def check_cooldown(cooldown_steps, max_steps):
    """Raises ``ValueError`` unless a cool-down (if any) fits in ``max_steps``."""
    if cooldown_steps and not (max_steps and cooldown_steps <= max_steps):
        raise ValueError(f"cooldown_steps ({cooldown_steps}) needs max_steps at least as "
                         f"large, where the cool-down ends; got max_steps={max_steps}.")


@dataclasses.dataclass
class LearningRatePolicy(Callback):
    """Warm-up, a one-time halving on a low validation loss, step decay and a cool-down.

    The rate of a step is ``learning_rate * factor``, where the factor multiplies

    * ``warmup_factor`` until ``warmup_steps`` steps are done (the warm-up of
      TPR-RNN Appendix A);
    * ``0.5`` once the validation loss has fallen below ``halve_lr_below``
      (TPR-RNN Appendix A; the authors' code assigned the halved rate and
      overwrote it every step);
    * ``decay_factor ** ((epoch - schedule_start_epoch + decay_offset_epochs) //
      decay_every_epochs)`` from ``schedule_start_epoch`` on, 1 before it (MemN2N §4.2:
      halved every 25 epochs; TPRU: /10 every 30). The MemN2N authors' joint config
      trains a fixed-length linear start at the base rate, then runs its schedule from
      its epoch 1 again (``schedule_start_epoch`` = the linear start's epochs), and its
      MATLAB loop halves at the start of epoch N, 2N, ... (``decay_offset_epochs=1``);
    * a caller's phase factor (MemN2N linear start trains at half the rate);
    * ``(max_steps - step) / cooldown_steps`` over the last ``cooldown_steps`` of
      ``max_steps`` steps: a linear cool-down to zero after a constant rate (the
      "warmup-stable-decay" schedule, Hägele et al. 2024), so a run at a constant rate
      can be cooled down from any of its checkpoints by the same command with a larger
      ``max_steps``.

    The factors that change at most once per epoch are combined by
    :meth:`epoch_factor`, so the per-step work is one multiplication. As a loop
    :class:`Callback` it makes the halving (kept in the trainer's checkpointed state).

    Args:
        learning_rate: base learning rate.
        warmup_steps: steps trained at ``learning_rate * warmup_factor``.
        warmup_factor: learning-rate factor during warm-up.
        halve_lr_below: halve once when the validation loss falls below this;
            None disables it.
        decay_every_epochs: apply ``decay_factor`` every this many epochs; None
            disables it.
        decay_factor: the factor of that step decay.
        decay_offset_epochs: epochs added to the decay's count (see above).
        schedule_start_epoch: the epoch (0-based) the decay starts counting from.
        cooldown_steps: the last steps of ``max_steps`` whose rate falls linearly to
            zero; None disables it.
        max_steps: the run's optimizer steps (needed by ``cooldown_steps``).

    Example:
    >>> policy = LearningRatePolicy(0.01, warmup_steps=50, warmup_factor=0.1)
    >>> round(policy.rate(warmup_done=False, epoch_factor=1.0), 6)
    0.001
    """

    learning_rate: float
    warmup_steps: int = 0
    warmup_factor: float = 0.1
    halve_lr_below: float | None = None
    decay_every_epochs: int | None = None
    decay_factor: float = 0.5
    decay_offset_epochs: int = 0
    schedule_start_epoch: int = 0
    cooldown_steps: int | None = None
    max_steps: int | None = None

    def __post_init__(self):
        Callback.__init__(self)
        check_cooldown(self.cooldown_steps, self.max_steps)

    @classmethod
    def from_config(cls, config):
        """The policy of a :class:`~tpr_keras.training.TrainConfig`."""
        return cls(config.learning_rate, config.warmup_steps, config.warmup_factor,
                   config.halve_lr_below, config.decay_every_epochs, config.decay_factor,
                   config.decay_offset_epochs, config.schedule_start_epoch,
                   config.cooldown_steps, config.max_steps)

    def epoch_factor(self, epoch, lr_halved, phase_factor=1.0):
        """The product of the factors that change at most once per epoch."""
        factor = float(phase_factor)
        if lr_halved:
            factor *= 0.5
        counted = int(epoch) - self.schedule_start_epoch
        if self.decay_every_epochs and counted >= 0:
            factor *= self.decay_factor ** (
                (counted + self.decay_offset_epochs) // self.decay_every_epochs)
        return factor

    def step_factor(self, global_step):
        """The cool-down's factor of the step after ``global_step`` applied steps."""
        if not self.cooldown_steps:
            return 1.0
        left = self.max_steps - int(global_step)
        return min(max(left, 0) / self.cooldown_steps, 1.0)

    def rate(self, warmup_done, epoch_factor, global_step=0):
        """The rate of the next step (``global_step`` steps applied so far)."""
        lr = self.learning_rate * epoch_factor * self.step_factor(global_step)
        return lr if warmup_done else lr * self.warmup_factor

    def warmup_done(self, global_step):
        """Whether ``global_step`` applied steps end the warm-up."""
        return global_step >= self.warmup_steps

    def on_epoch_end(self, epoch, logs=None):
        if "val_loss" not in logs:
            return
        state = self.trainer.state
        if self.halves_now(logs["val_loss"], state.value("lr_halved")):
            state.lr_halved.assign(True)
            if self.trainer.config.verbose:
                print(f"Validation loss {logs['val_loss']:.4f} < {self.halve_lr_below}: "
                      "learning rate halved.")

    def halves_now(self, valid_loss, lr_halved):
        """Whether this validation loss triggers the one-time halving."""
        return (self.halve_lr_below is not None and not lr_halved
                and valid_loss < self.halve_lr_below)
