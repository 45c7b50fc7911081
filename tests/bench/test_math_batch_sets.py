"""bench.math_batch_sets: the benchmark's batch sets, drawn from one pass of each of the
pipelines, and their matrix-product FLOPs per example."""

import numpy as np
import pytest

from bench import math_batch_sets, math_steps
from tests.data.tiny_math import random_split
from tpr_keras.data.mathematics import GRID_ANSWER_BOUNDARIES, GRID_BUCKET_BOUNDARIES

TINY = dict(model_dim=2, feed_forward_dim=4, num_heads=1, num_encoder_layers=1,
            num_decoder_layers=1, use_role=True, multiplicative_embedding=True)


def test_flop_counts_padded_and_useful():
    source = np.array([[2, 5, 3, 0], [2, 5, 6, 3]], np.int32)
    target = np.array([[2, 7, 0], [2, 7, 8]], np.int32)
    batch = ({"source": source, "target_in": target}, {"target_out": target})
    counts = math_batch_sets.flop_counts([batch], TINY, 3)
    assert counts["flops_per_example"] == 3 * math_steps.matmul_flops(TINY, 3, 4, 3)
    assert counts["useful_flops_per_example"] == 1.5 * (
        math_steps.matmul_flops(TINY, 3, 3, 2) + math_steps.matmul_flops(TINY, 3, 4, 3))
    assert counts["mean_source_length"] == 4 and counts["mean_target_length"] == 3


def split(size=400):
    return random_split(size, (3, 40), (1, 12))


def test_each_set_is_drawn_from_the_full_batches_of_its_pipeline(tmp_path):
    """Plain batches pad to their longest; a grid batch holds one cell of question and
    answer lengths and pads less; the draw is the same for the same data; a set saved and
    loaded is the same arrays."""
    sets = math_batch_sets.make_batch_sets(split(), 8, 5, ["same", "buckets", "grid"])
    assert [len(sets[name]) for name in ("same", "buckets", "grid")] == [5, 5, 5]
    for features, labels in sets["grid"]:
        q = (features["source"] != 0).sum(1)
        a = (features["target_in"] != 0).sum(1)
        assert len(features["source"]) == 8 and features["source"].shape[1] == q.max()
        assert len(set(zip(np.digitize(q, GRID_BUCKET_BOUNDARIES),
                           np.digitize(a, GRID_ANSWER_BOUNDARIES)))) == 1
    counts = {name: math_batch_sets.flop_counts(batches, TINY, 40)
              for name, batches in sets.items()}
    assert (counts["grid"]["flops_per_example"] / counts["grid"]["useful_flops_per_example"]
            < counts["same"]["flops_per_example"] / counts["same"]["useful_flops_per_example"])
    again = math_batch_sets.make_batch_sets(split(), 8, 5, ["grid"])["grid"]
    assert all(np.array_equal(x[0]["source"], y[0]["source"])
               for x, y in zip(again, sets["grid"]))
    math_batch_sets.save_batches(sets, tmp_path / "b.npz")
    loaded = math_batch_sets.load_batches(tmp_path / "b.npz", "grid")
    assert all(np.array_equal(x[1]["target_out"], y[1]["target_out"])
               for x, y in zip(loaded, sets["grid"]))


def test_too_few_full_batches_say_how_to_get_more():
    with pytest.raises(SystemExit, match=r"full grid batches of 64, not 5: lower --batches"):
        math_batch_sets.make_batch_sets(split(100), 64, 5, ["grid"])
