"""What the training loop writes: console lines, TensorBoard scalars, the history file."""

import json
import os

from tpr_keras.atomic_files import write_text


def format_seconds(seconds):
    """``75`` -> ``1m15s``; ``7300`` -> ``2h01m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def epoch_line(record, total_epochs, seconds_left=None):
    """The end-of-epoch line of an epoch ``record`` (``Trainer.fit``'s history entry).

    Example:
    >>> epoch_line({"epoch": 2, "train_loss": 0.5, "train_accuracy": 0.8, "seconds": 3.0,
    ...             "examples_per_second": 100.0}, total_epochs=5, seconds_left=75)
    'epoch 2/5: loss 0.5000 acc 0.8000 | 3.0s (100 ex/s) | at most 1m15s left'
    """
    line = (f"epoch {record['epoch']}/{total_epochs}: loss {record['train_loss']:.4f} "
            f"acc {record['train_accuracy']:.4f}")
    if "valid_loss" in record:
        line += (f" | valid loss {record['valid_loss']:.4f} "
                 f"error {record['valid_error_percent']:.2f}%")
    line += f" | {record['seconds']:.1f}s ({record['examples_per_second']:.0f} ex/s)"
    if seconds_left is not None:
        line += f" | at most {format_seconds(seconds_left)} left"
    return line


def seconds_left_at_pace(epoch_walls, steps_per_epoch, epochs_left, steps_left=None):
    """Seconds until the run's end at the pace of the epochs this call ran.

    ``epoch_walls``: ``(wall seconds, steps)`` per epoch of this call, validation
    included. The first traces the step, so it counts only while it is the only one.
    The pace is per step when ``steps_per_epoch`` is known: the first epoch of a resumed
    call ran only the rest of its epoch (a run resumed 5,000 steps into an epoch of
    7,000 would otherwise be paced as if a whole epoch took those 2,000 steps).
    ``steps_left``: the steps to ``max_steps``, when the run has one.

    Example:
    >>> seconds_left_at_pace([(10.0, 2)], steps_per_epoch=6, epochs_left=3)
    90.0
    >>> seconds_left_at_pace([(40.0, 6), (30.0, 6)], steps_per_epoch=6, epochs_left=3,
    ...                      steps_left=4)
    20.0
    """
    paced = epoch_walls[1:] or epoch_walls
    if not paced:
        return None
    seconds = sum(wall for wall, _ in paced)
    steps = sum(count for _, count in paced)
    if not steps_per_epoch or not steps:
        return epochs_left * seconds / len(paced)
    per_step = seconds / steps
    left = epochs_left * steps_per_epoch * per_step
    if steps_left is not None:
        left = min(left, steps_left * per_step)
    return left


def progress_line(epoch, total_epochs, done_steps, target, loss, accuracy, rate,
                  steps_per_second=None):
    """An in-epoch line for log files (``verbose=2``); ``epoch`` counts from 1.

    Example:
    >>> progress_line(1, 3, 50, 200, 0.25, 0.9, 1200.0, steps_per_second=10.0)
    '  epoch 1/3 step 50/200: loss 0.2500 acc 0.9000 | 1200 ex/s | epoch ends in 15s'
    """
    where = f"step {done_steps}" + (f"/{target}" if target else "")
    line = (f"  epoch {epoch}/{total_epochs} {where}: loss {loss:.4f} acc {accuracy:.4f}"
            f" | {rate:.0f} ex/s")
    if target and steps_per_second:
        line += f" | epoch ends in {format_seconds((target - done_steps) / steps_per_second)}"
    return line


class Summaries:
    """TensorBoard scalars of a run in ``<write_dir>/tensorboard/train``.

    Written with ``tf.summary``; where TensorFlow is not installed (a JAX-only
    machine) nothing is written.
    """

    def __init__(self, write_dir):
        try:
            import tensorflow as tf
        except ImportError:
            self.writer = None
            return
        self.tf = tf
        self.writer = tf.summary.create_file_writer(
            os.path.join(write_dir, "tensorboard", "train"))

    def train_step(self, step, loss, accuracy, grad_norm, learning_rate):
        """Scalars of one training step."""
        if self.writer is None:
            return
        tf = self.tf
        with self.writer.as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("accuracy", accuracy)
            tf.summary.scalar("grad_norm", grad_norm)
            tf.summary.scalar("learning_rate", learning_rate)

    def validation(self, step, loss, error_percent):
        """Scalars of one validation."""
        if self.writer is None:
            return
        tf = self.tf
        with self.writer.as_default(step=step):
            tf.summary.scalar("valid_loss", loss)
            tf.summary.scalar("valid_error_percent", error_percent)

    def flush(self):
        if self.writer is not None:
            self.writer.flush()


def read_history(path, up_to_epoch):
    """The epoch records of ``path`` up to ``up_to_epoch`` (a resumed run redoes the
    epochs after its checkpoint); ``[]`` without the file."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [h for h in json.load(f) if h["epoch"] <= up_to_epoch]


def write_history(path, history):
    """Writes the epoch records atomically (:func:`~tpr_keras.atomic_files.write_text`)."""
    write_text(path, json.dumps(history, indent=1), label="history")
