"""Training behaviours as callbacks of the epoch loop: Keras' callback protocol.

:class:`~tpr_keras.training.trainer.Trainer` runs the epochs and the steps, skips a
non-finite step, validates and checkpoints after every epoch, and resumes. Everything else
is a callback, called as ``model.fit`` calls Keras callbacks (``keras.callbacks.CallbackList``):
``on_train_begin``, ``on_epoch_begin(epoch)``, ``on_train_batch_end(batch, logs)`` after
every compiled call of ``steps_per_execution`` steps (every step by default; ``batch`` is
the call's last batch index, as in ``model.fit``), ``on_epoch_end(epoch, logs)`` after the
validation and ``on_train_end``; a callback stops the run with
``self.model.stop_training = True``. The call's ``logs`` hold ``loss``, ``accuracy`` and
``grad_norm`` of its last skipped step if it has one (its ``loss`` is then not finite,
unless the loss scale skipped it), else of its last step, ``learning_rate``,
``global_step``, and counts over the call: ``steps``,
``examples``, ``applied`` (steps applied; 0 or 1 for one step per call) and ``overflow``
(mixed-float16 steps skipped by the loss scale; the other skipped steps had a non-finite
loss or gradient), all as floats (Keras' ``CallbackList`` makes them so); the epoch's hold
``loss``, ``accuracy``, ``learning_rate`` and, with validation data, ``val_loss``,
``val_accuracy`` and ``val_error_percent``. So Keras' own callbacks (``TerminateOnNaN``,
``CSVLogger``, ``LambdaCallback``, ...) work in the loop on every backend.

This project's callbacks subclass :class:`~tpr_keras.training.callback_base.Callback`
(importable from here too), which adds the trainer (``self.trainer``) and two optional
answers the loop asks for its console and ``results.json``: :meth:`Callback.stop_reason`
and :meth:`Callback.seconds_left`.

- :class:`~tpr_keras.training.lr_policy.LearningRatePolicy`: the one-time halving of the
  learning rate on a low validation loss (and, in the loop, the rate of every step);
- :class:`~tpr_keras.training.early_stopping.EarlyStopping`: the best validation (its
  weights kept) and stopping without improvement or at a target error;
- :class:`TimeBudget`: a run's training minutes (``--max_train_minutes``);
- :class:`NanReinit`: a fresh start when the warm-up diverges;
- :class:`StepCheckpoints`: checkpoints inside epochs (``--checkpoint_every_steps``);
- :class:`LinearStart`: MemN2N's linear start (§4.2), which ``train.babi`` adds;
- :class:`~tpr_keras.training.progress.ConsoleProgress` and
  :class:`~tpr_keras.training.progress.TrainingSummaries`: the progress bar or lines, and
  the TensorBoard scalars.

All but LinearStart are every run's, as its
:class:`~tpr_keras.training.config.TrainConfig` sets them (:func:`default_callbacks`);
``fit(callbacks=...)`` adds more. A callback keeps what must survive a restart in the
trainer's checkpointed state or the model's variables, never in itself.
"""

import time

from tpr_keras.training.callback_base import Callback
from tpr_keras.training.early_stopping import EarlyStopping
from tpr_keras.training.lr_policy import LearningRatePolicy
from tpr_keras.training.progress import ConsoleProgress, TrainingSummaries


class TimeBudget(Callback):
    """Stops training after ``seconds`` of this process's ``fit``, at the first step past
    them (mid-epoch); the same command resumes from the checkpoint written on stopping.
    Every call trains at least one step, so a resumed run always moves on.

    Args:
        seconds: the budget; None or 0: no limit.
        clock: the clock read (default ``time.monotonic``, looked up at each reading).
    """

    def __init__(self, seconds, clock=None):
        super().__init__()
        self.seconds = seconds or None
        self.clock = clock
        self.deadline = None
        self.stepped = False

    def _now(self):
        return self.clock() if self.clock is not None else time.monotonic()

    def on_train_begin(self, logs=None):
        self.deadline = self._now() + self.seconds if self.seconds else None
        self.stepped = False

    def _past(self):
        return self.stepped and self.deadline is not None and self._now() >= self.deadline

    def on_train_batch_end(self, batch, logs=None):
        self.stepped = True
        if not self._past():
            return
        print(f"Time budget of {self.seconds / 60:g} min reached at step "
              f"{int(logs['global_step'])}: stopping (the same command resumes from here).")
        self.model.stop_training = True

    def stop_reason(self):
        return "time_budget" if self._past() else None

    def seconds_left(self):
        return None if self.deadline is None else self.deadline - self._now()


class NanReinit(Callback):
    """A non-finite step during the warm-up re-initialises the model and the optimizer
    (TPR-RNN Appendix A's runs restart when the warm-up diverges); after
    ``max_reinits`` of them the run gives up (``FloatingPointError``).

    Args:
        max_reinits: re-initialisations allowed in one process.
    """

    def __init__(self, max_reinits):
        super().__init__()
        self.max_reinits = max_reinits

    def on_train_batch_end(self, batch, logs=None):
        trainer = self.trainer
        non_finite = logs.get("steps", 1) - logs["applied"] - logs.get("overflow", 0)
        if non_finite <= 0 or trainer.step_counter("warmup_done"):
            return
        if trainer.reinits >= self.max_reinits:
            raise FloatingPointError(f"Warm-up diverged {trainer.reinits} times; giving up.")
        print("NaN during warm-up: re-initialising model and optimizer.")
        trainer.reinitialize()


class StepCheckpoints(Callback):
    """A checkpoint every ``every`` applied steps, inside epochs too (the loop writes one
    at the end of every epoch anyway): a killed run loses at most that many steps.

    Args:
        every: applied steps between checkpoints.
    """

    def __init__(self, every):
        super().__init__()
        self.every = every

    def on_train_batch_end(self, batch, logs=None):
        # the loop ends a call of several steps at every multiple of `every`
        if logs["applied"] and int(logs["global_step"]) % self.every == 0:
            self.trainer.save_checkpoint()


class LinearStart(Callback):
    """MemN2N §4.2's linear start: the hops train without their softmax, then it returns.

    Without ``epochs``: "when the validation loss stopped decreasing, the softmax layers
    were re-inserted" (and the lr goes from 0.005 to 0.01, paper scale): checked after
    every validation, from the trainer's history, which a resumed run reloads. With
    ``epochs``: the authors' code (``train_linear_start.m``), whose linear start lasts a
    fixed ``epochs`` epochs (30 in their joint config): the softmax returns at the start
    of epoch ``epochs + 1``, whatever the validation loss did, so a resumed or
    time-budgeted epoch cannot end it early. Either way the lr factor becomes
    ``lr_factor_after``. The switch is a model variable and the lr factor a trainer
    variable, so both are checkpointed.

    Args:
        epochs: the linear start's length in epochs; None: until the validation loss
            stops falling.
        lr_factor_after: the trainer's lr factor once the softmax is back.
    """

    def __init__(self, epochs=None, lr_factor_after=1.0):
        super().__init__()
        self.epochs = epochs
        self.lr_factor_after = lr_factor_after

    def _end(self, why):
        self.model.set_linear_start(False)
        self.trainer.set_lr_factor(self.lr_factor_after)
        print(f"{why}: linear start ends, the hop softmax is back.")

    def on_epoch_begin(self, epoch, logs=None):
        if self.epochs is not None and epoch >= self.epochs and self.model.linear_start:
            self._end(f"Epoch {epoch + 1} follows the {self.epochs} of linear start")

    def on_epoch_end(self, epoch, logs=None):
        model, history = self.model, self.trainer.history
        if (self.epochs is not None or not model.linear_start or "val_loss" not in logs
                or len(history) < 2):
            return
        if logs["val_loss"] >= history[-2]["valid_loss"]:
            self._end(f"Validation loss stopped falling at epoch {epoch + 1}")


def default_callbacks(config):
    """Every run's callbacks for ``config``: the console progress, the TensorBoard
    scalars, the learning-rate policy, early stopping, the time budget, and where
    ``config`` asks for them, re-initialising after a NaN in the
    warm-up and checkpoints inside epochs (before the time budget, so that the step that
    spends the budget is saved by the checkpoint the stop writes anyway)."""
    callbacks = [ConsoleProgress(config.verbose, config.progress_seconds),
                 TrainingSummaries(config.log_every_steps),
                 LearningRatePolicy.from_config(config), EarlyStopping.from_config(config)]
    if config.reinit_on_nan:
        callbacks.append(NanReinit(config.max_reinits))
    if config.checkpoint_every_steps:
        callbacks.append(StepCheckpoints(config.checkpoint_every_steps))
    return callbacks + [TimeBudget(config.max_train_seconds)]
