"""What the numpy batchers share: batches of one fixed size and lengths rounded to a few
widths, so that a backend that compiles once per shape (JAX) compiles a few times only."""

from __future__ import annotations

import numpy as np


def round_up(length: int, width: int) -> int:
    """``length`` (at least 1) rounded up to a multiple of ``width``."""
    return -(-max(int(length), 1) // width) * width


def fill(index: np.ndarray, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(index, weight)``: ``index`` filled to ``batch_size`` rows with copies of its
    first sample, and ``float32`` weights, 1 for the real rows and 0 for the copies."""
    real = len(index)
    weight = np.zeros(batch_size, np.float32)
    weight[:real] = 1.0
    return np.concatenate([index, np.full(batch_size - real, index[0])]), weight


def ragged_rows(ids: np.ndarray, splits: np.ndarray, index: np.ndarray, width: int,
                before: int | None = None, after: int | None = None) -> np.ndarray:
    """``int32[len(index), W]``: the rows ``index`` of a ragged array (``ids`` cut at
    ``splits``), with the marker ids ``before``/``after`` around each (None: none),
    0-padded to ``W``, the longest row rounded up to a multiple of ``width``."""
    lengths = (splits[1:] - splits[:-1])[index]
    offset = int(before is not None)
    out = np.zeros((len(index), round_up(lengths.max() + offset + (after is not None),
                                         width)), np.int32)
    if before is not None:
        out[:, 0] = before
    steps = np.arange(out.shape[1] - offset)
    valid = steps[None, :] < lengths[:, None]
    rows = np.where(valid, splits[index][:, None] + steps[None, :], 0)
    out[:, offset:] = np.where(valid, ids[rows] if len(ids) else 0, 0)
    if after is not None:
        out[np.arange(len(index)), offset + lengths] = after
    return out
