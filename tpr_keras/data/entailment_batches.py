"""Batches of the entailment data as numpy arrays: its input path without TensorFlow."""

from __future__ import annotations

import numpy as np

from tpr_keras.data.entailment import FIRST_VARIABLE_ID, NUM_VARIABLES, encode_many
from tpr_keras.data.fixed_batches import fill, ragged_rows


def permute_variables(a, b, rng):
    """:func:`tpr_keras.data.entailment.permute_variables` in numpy: one uniformly random
    permutation of the variables per row, applied to A and B alike (pad, unk,
    connectives and parentheses unchanged).

    Args:
        a, b: integer ids ``[batch, time]``.
        rng: a ``numpy.random.Generator``.
    """
    batch = a.shape[0]
    perm = np.argsort(rng.random((batch, NUM_VARIABLES)), axis=-1) + FIRST_VARIABLE_ID
    fixed = np.broadcast_to(np.arange(FIRST_VARIABLE_ID), (batch, FIRST_VARIABLE_ID))
    table = np.concatenate([fixed, perm], axis=-1).astype(a.dtype)
    return np.take_along_axis(table, a, axis=1), np.take_along_axis(table, b, axis=1)


class EntailmentBatches:
    """Entailment pairs in fixed-size numpy batches, for any Keras backend.

    Elements are ``({"a": int32[B, La], "b": int32[B, Lb]}, {"label": float32[B, 1],
    "weight": float32[B]})``, 0 = padding. As in
    :class:`~tpr_keras.data.babi.batches.NumpyBatches`, every batch has ``batch_size``
    rows (a short batch is filled with copies of its first pair, weight 0) and the
    lengths are rounded up to a multiple of ``width`` characters, so JAX compiles the
    step for a few shapes only. The order and the variable permutation (``augment``,
    the §5.1 recipe's) are functions of ``(seed, epoch)``.

    Args:
        data: an :class:`~tpr_keras.data.entailment.EntailmentData`.
        batch_size: rows per batch.
        shuffle: reshuffle every epoch.
        augment: permute the variables of every pair, freshly every epoch.
        seed: seed of the order and the permutations.
        width: the length rounding, in characters.
    """

    def __init__(self, data, batch_size, shuffle=False, augment=False, seed=0, width=16):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.batch_size = int(batch_size)
        self.shuffle, self.augment = shuffle, augment
        self.seed, self.width = int(seed or 0), int(width)
        self.labels = np.asarray(data.labels, np.float32)
        self.sides = [encode_many(texts) for texts in (data.a, data.b)]

    def __len__(self):
        return -(-len(self.labels) // self.batch_size)

    def __iter__(self):
        return self.batches(0)

    def batches(self, epoch=0, skip=0):
        """Yields the batches of pass ``epoch``, after the first ``skip``."""
        n = len(self.labels)
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        starts = range(0, n, self.batch_size)
        for i, start in enumerate(starts):
            index = order[start:start + self.batch_size]
            if i >= skip:
                yield self.gather(index, rng if self.augment else None)
            elif self.augment:  # keep the permutations of later batches the same
                rng.random((len(index), NUM_VARIABLES))

    def gather(self, index, rng=None):
        """The batch of the pairs ``index`` (at most ``batch_size``), permuted with
        ``rng`` when given."""
        real = len(index)
        index, weight = fill(index, self.batch_size)
        a, b = (ragged_rows(ids, splits, index, self.width) for ids, splits in self.sides)
        if rng is not None:
            permuted = permute_variables(a[:real], b[:real], rng)
            a[:real], b[:real] = permuted
        return ({"a": a, "b": b}, {"label": self.labels[index][:, None], "weight": weight})
