"""The base class of the training loop's callbacks: Keras' protocol, plus the trainer.

Its own module so that every callback module (:mod:`~tpr_keras.training.callbacks`,
:mod:`~tpr_keras.training.early_stopping`, :mod:`~tpr_keras.training.lr_policy`,
:mod:`~tpr_keras.training.progress`) imports it without importing the others.
"""

import keras


class Callback(keras.callbacks.Callback):
    """A callback of the training loop: Keras' protocol, plus the trainer.

    The loop sets ``self.trainer`` (the running
    :class:`~tpr_keras.training.trainer.Trainer`) before ``on_train_begin``, and
    ``self.model`` as Keras does.

    Example:
    >>> class Announce(Callback):
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         print(f"epoch {epoch + 1}: {logs['val_error_percent']:.1f} %")
    """

    trainer = None

    def set_trainer(self, trainer):
        self.trainer = trainer

    def stop_reason(self):
        """Before the first epoch and after each: a reason of
        :data:`~tpr_keras.training.stop_reasons.STOP_REASONS` to stop, or None."""
        return None

    def seconds_left(self):
        """At most how many seconds the run has left by this callback, or None."""
        return None
