"""Batches of an encoded split as numpy arrays: the bAbI input path without TensorFlow."""

from __future__ import annotations

import numpy as np

from tpr_keras.data.babi.encoding import EncodedSplit
from tpr_keras.data.fixed_batches import fill, round_up


class NumpyBatches:
    """An encoded split in fixed-size batches of numpy arrays, for any Keras backend.

    The same elements as :func:`~tpr_keras.data.babi.pipeline.make_dataset` — ``(
    {"story": int32[B, S, W], "question": int32[B, W]}, {"answer": int32[B], "task":
    int32[B], "weight": float32[B]})`` — shaped for a backend that compiles once per
    shape (JAX): every batch has exactly ``batch_size`` rows (a short batch is filled
    with copies of its first sample whose ``weight`` is 0) and ``S`` is rounded up to
    a multiple of ``bucket_width`` sentences, so a split gives at most
    ``longest story / bucket_width`` shapes. A weight of 1 marks the real samples:
    every sample has weight 1 exactly once per pass.

    With ``shuffle`` the order is a function of ``(seed, epoch)``, so a resumed run
    sees the same batches (``batches(epoch, skip=n)`` starts after the first ``n``).
    With ``bucket_width`` the samples are grouped by story length first (buckets of
    that many sentences, shuffled inside), and the batches of all buckets are then
    shuffled together.

    Args:
        split: the encoded split.
        batch_size: rows per batch.
        shuffle: reshuffle every epoch.
        seed: shuffle seed.
        bucket_width: sentences per length bucket and the rounding of ``S``; None
            pads every batch to the split's longest story.

    Example:
    >>> batches = NumpyBatches(split, 32, shuffle=True, seed=0, bucket_width=10)
    >>> for features, labels in batches.batches(epoch=0):
    ...     ...
    """

    def __init__(self, split: EncodedSplit, batch_size: int, shuffle: bool = False,
                 seed: int = 0, bucket_width: int | None = None):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.split = split
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.seed = int(seed or 0)
        self.bucket_width = bucket_width or None
        self.longest = int(split.story_lengths.max()) if len(split) else 0

    def __len__(self):
        """Batches per pass."""
        return len(self._groups(0))

    def _groups(self, epoch):
        """The sample indices of every batch of pass ``epoch``, in order."""
        n = len(self.split)
        order = np.arange(n)
        rng = np.random.default_rng([self.seed, epoch])
        if self.shuffle:
            order = rng.permutation(n)
        if self.bucket_width:
            bucket = (np.maximum(self.split.story_lengths[order], 1) - 1) // self.bucket_width
            keys = [order[bucket == b] for b in np.unique(bucket)]
        else:
            keys = [order]
        groups = [chunk[i:i + self.batch_size]
                  for chunk in keys for i in range(0, len(chunk), self.batch_size)]
        if self.shuffle and self.bucket_width:
            groups = [groups[i] for i in rng.permutation(len(groups))]
        return groups

    def batches(self, epoch=0, skip=0):
        """Yields the batches of pass ``epoch``, after the first ``skip``."""
        for index in self._groups(epoch)[skip:]:
            yield self.gather(index)

    def __iter__(self):
        return self.batches(0)

    def gather(self, index):
        """The batch of the samples ``index`` (at most ``batch_size`` of them)."""
        split = self.split
        index, weight = fill(index, self.batch_size)
        lengths = split.story_lengths[index]
        longest = int(lengths.max())
        if self.bucket_width:
            longest = min(round_up(longest, self.bucket_width), max(self.longest, 1))
        else:
            longest = max(self.longest, 1)
        steps = np.arange(longest)
        valid = steps[None, :] < lengths[:, None]
        rows = np.where(valid, split.story_offsets[index][:, None] + steps[None, :], 0)
        story = np.where(valid[:, :, None], split.sentences[rows], 0).astype(np.int32)
        return ({"story": story, "question": split.questions[index]},
                {"answer": split.answers[index], "task": split.tasks[index],
                 "weight": weight})
