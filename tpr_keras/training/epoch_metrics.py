"""Extra numbers in every epoch's history record: learning curves of any metric.

:class:`EpochMetric` calls a function of the model after each epoch's validation and
stores what it returns in that epoch's record of the run's ``history`` (``history.json``
and ``results.json``), e.g. the exact match of greedy answers per module, which the
token-level validation error does not give.
"""

import time

from tpr_keras.training.callback_base import Callback


class EpochMetric(Callback):
    """Records ``fn(model)`` in the history record of every epoch, under ``name``.

    The loop appends an epoch's record before its ``on_epoch_end`` and writes the history
    after it, so the value is saved with the record and survives a resume. ``fn`` must
    not change the model: it runs between two epochs of training.

    Args:
        name: the record's key, e.g. ``"interpolate_exact_match_percent"``.
        fn: ``model -> value`` (JSON-serialisable: a number or a dict of numbers).
        verbose: print the value and how long ``fn`` took.

    Example:
    >>> metric = EpochMetric("weights", lambda model: model.count_params())
    """

    def __init__(self, name, fn, verbose=True):
        super().__init__()
        self.name = name
        self.fn = fn
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        if self.trainer is None or not self.trainer.history:
            raise RuntimeError("EpochMetric runs inside the training loop's fit()")
        started = time.perf_counter()
        value = self.fn(self.model)
        self.trainer.history[-1][self.name] = value
        self.trainer.history[-1][f"{self.name}_seconds"] = time.perf_counter() - started
        if self.verbose:
            shown = (", ".join(f"{k} {v:.1f}" for k, v in value.items())
                     if isinstance(value, dict) else value)
            print(f"epoch {epoch + 1}: {self.name}: {shown} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
