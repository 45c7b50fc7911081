"""Training behaviours as callbacks of the epoch loop, the same on every backend.

:class:`~tpr_keras.training.epoch_loop.EpochLoop` runs the epochs and the steps, skips a
non-finite step, validates and checkpoints after every epoch, and resumes; what else
happens during a run is a :class:`Callback`:

- :class:`~tpr_keras.training.lr_policy.LearningRatePolicy`: the one-time halving of the
  learning rate on a low validation loss (and, in the loop, the rate of every step);
- :class:`~tpr_keras.training.early_stopping.EarlyStopping`: the best validation (its
  weights kept) and stopping without improvement or at a target error;
- :class:`TimeBudget`: a run's training minutes (``--max_train_minutes``);
- :class:`NanReinit`: a fresh start when the warm-up diverges;
- :class:`StepCheckpoints`: checkpoints inside epochs (``--checkpoint_every_steps``);
- :class:`LinearStart`: MemN2N's linear start (§4.2), which ``train.babi`` adds.

All but the last are every run's, as its
:class:`~tpr_keras.training.config.TrainConfig` sets them (:func:`default_callbacks`);
``fit(callbacks=...)`` adds more. A callback keeps what must survive a restart in the
trainer's checkpointed state or the model's variables, never in itself.
"""

import time


class Callback:
    """Hooks :meth:`EpochLoop.fit <tpr_keras.training.epoch_loop.EpochLoop.fit>` calls;
    each does nothing by default.

    Example:
    >>> class Announce(Callback):
    ...     def on_validation(self, loop, valid, history):
    ...         print(f"epoch {history[-1]['epoch']}: {valid['error_percent']:.1f} %")
    """

    def on_fit_start(self, loop):
        """``fit`` starts (after a resume restored the state)."""

    def on_validation(self, loop, valid, history):
        """After each validation: ``valid`` as :meth:`EpochLoop.evaluate` gives it,
        ``history`` the per-epoch records so far, this epoch's included."""

    def on_step_end(self, loop):
        """After each applied step (``loop.step_counter("global_step")`` counts it): True
        ends the epoch here, and the run then stops."""
        return False

    def on_step_skipped(self, loop):
        """After a step skipped for a non-finite loss or gradient."""

    def stop_reason(self, loop):
        """Before the first epoch and after each: a reason of
        :data:`~tpr_keras.training.early_stopping.STOP_REASONS` to stop, or None."""
        return None

    def seconds_left(self, loop):
        """At most how many seconds the run has left by this callback, or None."""
        return None


class TimeBudget(Callback):
    """Stops training after ``seconds`` of this process's ``fit`` (mid-epoch, after a
    step); the same command resumes from the checkpoint written on stopping.

    Args:
        seconds: the budget; None or 0: no limit.
        clock: the clock read (default ``time.monotonic``, looked up at each reading).
    """

    def __init__(self, seconds, clock=None):
        self.seconds = seconds or None
        self.clock = clock
        self.deadline = None

    def _now(self):
        return self.clock() if self.clock is not None else time.monotonic()

    def on_fit_start(self, loop):
        self.deadline = self._now() + self.seconds if self.seconds else None

    def _past(self):
        return self.deadline is not None and self._now() >= self.deadline

    def on_step_end(self, loop):
        if not self._past():
            return False
        print(f"Time budget of {self.seconds / 60:g} min reached at step "
              f"{loop.step_counter('global_step')}: stopping (the same command resumes "
              "from here).")
        return True

    def stop_reason(self, loop):
        return "time_budget" if self._past() else None

    def seconds_left(self, loop):
        return None if self.deadline is None else self.deadline - self._now()


class NanReinit(Callback):
    """A non-finite step during the warm-up re-initialises the model and the optimizer
    (TPR-RNN Appendix A's runs restart when the warm-up diverges); after
    ``max_reinits`` of them the run gives up (``FloatingPointError``).

    Args:
        max_reinits: re-initialisations allowed in one process.
    """

    def __init__(self, max_reinits):
        self.max_reinits = max_reinits

    def on_step_skipped(self, loop):
        if loop.step_counter("warmup_done"):
            return
        if loop.reinits >= self.max_reinits:
            raise FloatingPointError(f"Warm-up diverged {loop.reinits} times; giving up.")
        print("NaN during warm-up: re-initialising model and optimizer.")
        loop.reinitialize()


class StepCheckpoints(Callback):
    """A checkpoint every ``every`` applied steps, inside epochs too (the loop writes one
    at the end of every epoch anyway): a killed run loses at most that many steps.

    Args:
        every: applied steps between checkpoints.
    """

    def __init__(self, every):
        self.every = every

    def on_step_end(self, loop):
        if loop.step_counter("global_step") % self.every == 0:
            loop.save_checkpoint()
        return False


class LinearStart(Callback):
    """MemN2N §4.2: "when the validation loss stopped decreasing, the softmax layers were
    re-inserted" (and the lr goes from 0.005 to 0.01, paper scale). The switch is a model
    variable and the lr factor a trainer variable, so both are checkpointed."""

    def on_validation(self, loop, valid, history):
        model = loop.model
        if not model.linear_start or len(history) < 2:
            return
        if history[-1]["valid_loss"] >= history[-2]["valid_loss"]:
            model.set_linear_start(False)
            loop.set_lr_factor(1.0)
            print(f"Validation loss stopped falling at epoch {history[-1]['epoch']}: "
                  "linear start ends, the hop softmax is back.")


def default_callbacks(config):
    """Every run's callbacks for ``config``: the learning-rate policy, early stopping, the
    time budget, and where ``config`` asks for them, re-initialising after a NaN in the
    warm-up and checkpoints inside epochs (before the time budget, so that the step that
    spends the budget is saved by the checkpoint the stop writes anyway)."""
    from tpr_keras.training.early_stopping import EarlyStopping
    from tpr_keras.training.lr_policy import LearningRatePolicy

    callbacks = [LearningRatePolicy.from_config(config), EarlyStopping.from_config(config)]
    if config.reinit_on_nan:
        callbacks.append(NanReinit(config.max_reinits))
    if config.checkpoint_every_steps:
        callbacks.append(StepCheckpoints(config.checkpoint_every_steps))
    return callbacks + [TimeBudget(config.max_train_seconds)]
