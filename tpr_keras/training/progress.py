"""The loop's console progress and TensorBoard scalars, as callbacks of the epoch loop.

Every run gets both (:func:`~tpr_keras.training.callbacks.default_callbacks`):
:class:`ConsoleProgress` draws Keras' progress bar (``verbose=1``) or prints a plain line
every ``progress_seconds`` (``verbose=2``, for log files); :class:`TrainingSummaries` writes
the TensorBoard scalars of ``<write_dir>/tensorboard/train``. The epoch's own summary line
stays in the loop, which knows the time left.
"""

import time

import keras

from tpr_keras.training.callback_base import Callback
from tpr_keras.training.console import Summaries, progress_line


class ConsoleProgress(Callback):
    """The progress of each epoch on the console.

    Reads the epoch's plan (``trainer.epoch_plan``: ``total_epochs`` and ``target``, the
    steps this call will run, None if unknown) and the running means of the epoch's loss
    and accuracy from the trainer's counters.

    Args:
        verbose: 1 for a progress bar, 2 for plain lines, 0 for nothing.
        progress_seconds: seconds between two plain lines.
    """

    def __init__(self, verbose, progress_seconds):
        super().__init__()
        self.verbose = verbose
        self.progress_seconds = progress_seconds
        self.progbar = None

    def on_epoch_begin(self, epoch, logs=None):
        plan = self.trainer.epoch_plan
        self.epoch, self.done_steps, self.progbar = epoch, 0, None
        # The plain lines' rate leaves out the epoch's first step (tracing, iterator
        # start-up), so the time left is right from the first line.
        self.paced_from, self.paced_examples = None, 0
        self.next_line = time.perf_counter() + self.progress_seconds
        if self.verbose == 1:
            print(f"Epoch {epoch + 1}/{plan['total_epochs']}", flush=True)
            self.progbar = keras.utils.Progbar(plan["target"] or None,
                                               stateful_metrics=["lr"])

    def on_train_batch_end(self, batch, logs=None):
        applied = int(logs["applied"])  # the applied steps of the loop's compiled call
        if not applied:
            return
        self.done_steps += applied
        if self.progbar is not None:
            self.progbar.add(applied, [("loss", logs["loss"]), ("acc", logs["accuracy"]),
                                       ("lr", logs["learning_rate"])])
            return
        if self.verbose != 2:
            return
        now = time.perf_counter()
        if self.paced_from is None:
            self.paced_from, self.paced_steps = now, self.done_steps
        else:
            self.paced_examples += int(logs["examples"])
        if now >= self.next_line and self.paced_examples:
            self.next_line = now + self.progress_seconds
            trainer, plan = self.trainer, self.trainer.epoch_plan
            steps = trainer.step_counter("epoch_steps")
            print(progress_line(
                self.epoch + 1, plan["total_epochs"], self.done_steps, plan["target"],
                trainer.step_counter("epoch_loss_sum") / steps,
                trainer.step_counter("epoch_accuracy_sum") / steps,
                self.paced_examples / (now - self.paced_from),
                (self.done_steps - self.paced_steps) / (now - self.paced_from)), flush=True)

    def on_epoch_steps_end(self):
        """After the epoch's last step, before its validation: a bar cut short (the time
        budget, ``max_steps``) ends its line."""
        target = self.trainer.epoch_plan["target"]
        if self.progbar is not None and (target is None or self.done_steps < target):
            self.progbar.update(self.done_steps, finalize=True)


class TrainingSummaries(Callback):
    """TensorBoard scalars: each applied step's loss, accuracy, gradient norm and learning
    rate every ``log_every_steps`` steps, and each validation's loss and error.

    Args:
        log_every_steps: applied steps between two training summaries.
    """

    def __init__(self, log_every_steps):
        super().__init__()
        self.log_every_steps = log_every_steps
        self.summaries = None

    def on_train_begin(self, logs=None):
        self.summaries = Summaries(self.trainer.write_dir)

    def on_train_batch_end(self, batch, logs=None):
        step = int(logs["global_step"])  # Keras' CallbackList hands numbers over as floats
        every = self.log_every_steps  # a call of several steps may pass a multiple
        if logs["applied"] and step // every > (step - int(logs["applied"])) // every:
            self.summaries.train_step(step, logs["loss"], logs["accuracy"], logs["grad_norm"],
                                      logs["learning_rate"])

    def on_epoch_end(self, epoch, logs=None):
        if "val_loss" in logs:
            self.summaries.validation(self.trainer.step_counter("global_step"),
                                      logs["val_loss"], logs["val_error_percent"])

    def on_train_end(self, logs=None):
        self.summaries.flush()
