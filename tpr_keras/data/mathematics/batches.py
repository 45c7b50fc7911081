"""Batches of a Mathematics Dataset split as numpy arrays: its input path without TensorFlow."""

from __future__ import annotations

import numpy as np

from tpr_keras.data.fixed_batches import fill, ragged_rows
from tpr_keras.data.mathematics.encoding import MathSplit
from tpr_keras.data.mathematics.pipeline import (balanced_indices, check_module_weights,
                                                 draws_balanced)
from tpr_keras.data.mathematics.vocabulary import CharVocabulary


class MathBatches:
    """A :class:`~tpr_keras.data.mathematics.MathSplit` in fixed-size numpy batches.

    The elements of :func:`~tpr_keras.data.mathematics.make_dataset` — ``({"source":
    <s> question </s>, "target_in": <s> answer}, {"target_out": answer </s>, "module",
    "weight"})``, ``<pad>`` = 0 — shaped for a backend that compiles once per shape
    (JAX): every batch has ``batch_size`` rows (a short batch is filled with copies of
    its first example, weight 0) and both lengths are rounded up to a multiple of
    ``width``. The order (with ``balance_modules``, the same
    :func:`~tpr_keras.data.mathematics.balanced_indices`) is a function of
    ``(seed, epoch)``.

    Args:
        split: the encoded split.
        batch_size: rows per batch.
        shuffle: reshuffle every epoch.
        seed: seed of the order.
        balance_modules: with ``shuffle``, every module equally often per pass.
        width: the length rounding, in tokens.
        module_weights: with ``balance_modules`` and ``shuffle``, ``{module id: weight}``
            of every pass (:func:`~tpr_keras.data.mathematics.balanced_indices`).
    """

    def __init__(self, split: MathSplit, batch_size: int, shuffle: bool = False,
                 seed: int = 0, balance_modules: bool = False, width: int = 16,
                 module_weights=None):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        check_module_weights(shuffle, balance_modules, module_weights)
        self.module_weights = dict(module_weights or {})
        self.split = split
        self.batch_size = int(batch_size)
        self.shuffle, self.seed = shuffle, int(seed or 0)
        self.balance_modules, self.width = balance_modules, int(width)

    def __len__(self):
        return -(-len(self.split) // self.batch_size)

    def __iter__(self):
        return self.batches(0)

    def _order(self, epoch):
        n = len(self.split)
        if not self.shuffle:
            return np.arange(n)
        seed = [self.seed, epoch]
        if draws_balanced(self.split, True, self.balance_modules, self.module_weights):
            return balanced_indices(self.split.modules, np.random.default_rng(seed)
                                    .integers(2**31), self.module_weights)
        return np.random.default_rng(seed).permutation(n)

    def batches(self, epoch=0, skip=0):
        """Yields the batches of pass ``epoch``, after the first ``skip``."""
        order = self._order(epoch)
        for start in range(skip * self.batch_size, len(order), self.batch_size):
            yield self.gather(order[start:start + self.batch_size])

    def gather(self, index):
        """The batch of the examples ``index`` (at most ``batch_size``)."""
        split, vocab = self.split, CharVocabulary
        index, weight = fill(index, self.batch_size)
        source = ragged_rows(split.question_ids, split.question_splits, index, self.width,
                             vocab.START_ID, vocab.END_ID)
        target_in = ragged_rows(split.answer_ids, split.answer_splits, index, self.width,
                                before=vocab.START_ID)
        target_out = ragged_rows(split.answer_ids, split.answer_splits, index, self.width,
                                 after=vocab.END_ID)  # as wide as target_in: both length + 1
        return ({"source": source, "target_in": target_in},
                {"target_out": target_out, "module": split.modules[index], "weight": weight})
