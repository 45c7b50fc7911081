"""MathBatches: the Mathematics Dataset batches of the JAX trainer, without TensorFlow."""

import numpy as np
import pytest

from tpr_keras.data.mathematics import MathSplit, make_dataset
from tpr_keras.data.mathematics.batches import MathBatches


@pytest.fixture
def split():
    rng = np.random.default_rng(0)
    q_lengths, a_lengths = rng.integers(3, 30, size=11), rng.integers(1, 6, size=11)
    return MathSplit(
        question_ids=rng.integers(4, 40, size=int(q_lengths.sum())).astype(np.int32),
        question_splits=np.concatenate([[0], np.cumsum(q_lengths)]),
        answer_ids=rng.integers(4, 40, size=int(a_lengths.sum())).astype(np.int32),
        answer_splits=np.concatenate([[0], np.cumsum(a_lengths)]),
        modules=np.array([0] * 8 + [1] * 3, np.int32), module_names=("m0", "m1"))


def rows(features, labels, i):
    """One example's three sequences without their padding."""
    return tuple(tuple(int(x) for x in array[i] if x) for array in (
        features["source"], features["target_in"], labels["target_out"]))


def test_every_example_once_as_the_tf_pipeline_builds_it(split):
    batches = MathBatches(split, 4, shuffle=True, seed=2, width=8)
    seen = []
    for features, labels in batches.batches(0):
        assert features["source"].shape[0] == 4 and features["source"].shape[1] % 8 == 0
        assert features["target_in"].shape == labels["target_out"].shape
        seen += [rows(features, labels, i) for i in np.flatnonzero(labels["weight"])]
    want = [rows({k: v.numpy() for k, v in f.items()}, {k: v.numpy() for k, v in l.items()}, 0)
            for f, l in make_dataset(split, 1)]
    assert sorted(seen) == sorted(want) and len(batches) == 3


def test_order_is_a_function_of_seed_and_epoch_balanced_when_asked(split):
    batches = MathBatches(split, 3, shuffle=True, seed=1, balance_modules=True)

    def modules(epoch, skip=0):
        return [l["module"][l["weight"] > 0].tolist() for _, l in batches.batches(epoch, skip)]

    assert modules(0) == modules(0) and modules(0) != modules(1)
    assert modules(1, skip=1) == modules(1)[1:]
    counts = np.bincount(np.concatenate(modules(0)))
    assert abs(int(counts[0]) - int(counts[1])) <= 1  # balanced: 11 examples, 2 modules


def test_module_weights_shape_every_pass(split):
    batches = MathBatches(split, 4, shuffle=True, seed=1, balance_modules=True,
                          module_weights={1: 10})
    for epoch in (0, 1):
        drawn = np.concatenate([l["module"][l["weight"] > 0] for _, l in batches.batches(epoch)])
        assert len(drawn) == 11 and int((drawn == 1).sum()) == 10  # floor(11 * 10 / 11)
    with pytest.raises(ValueError, match="balance_modules=True"):
        MathBatches(split, 4, shuffle=True, module_weights={1: 10})
