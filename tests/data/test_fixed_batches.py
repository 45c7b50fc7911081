"""The helpers the numpy batchers share."""

import numpy as np

from tpr_keras.data.fixed_batches import fill, ragged_rows, round_up


def test_fill_copies_the_first_row_with_weight_zero():
    index, weight = fill(np.array([4, 7]), 4)
    assert index.tolist() == [4, 7, 4, 4] and weight.tolist() == [1, 1, 0, 0]


def test_ragged_rows_with_markers_round_the_width():
    ids, splits = np.array([5, 6, 7, 8, 9, 10]), np.array([0, 3, 4, 6])
    rows = ragged_rows(ids, splits, np.array([2, 0, 1]), 4, before=2, after=3)
    assert rows.tolist() == [[2, 9, 10, 3, 0, 0, 0, 0], [2, 5, 6, 7, 3, 0, 0, 0],
                             [2, 8, 3, 0, 0, 0, 0, 0]]
    assert ragged_rows(ids, splits, np.array([1]), 4).tolist() == [[8, 0, 0, 0]]
    assert (round_up(0, 8), round_up(8, 8), round_up(9, 8)) == (8, 8, 16)
