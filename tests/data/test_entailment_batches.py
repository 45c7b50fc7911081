"""EntailmentBatches: the entailment batches of the JAX trainer, without TensorFlow."""

import numpy as np
import pytest

from tpr_keras.data.entailment import (FIRST_VARIABLE_ID, EntailmentData, encode,
                                       make_dataset, permute_variables)
from tpr_keras.data.entailment_batches import EntailmentBatches
from tpr_keras.data.entailment_batches import permute_variables as permute_numpy


@pytest.fixture
def data():
    a = ["(a&b)", "a", "(a|(b>c))", "~a", "((a&b)|(c&d))>e", "b"] * 3
    b = ["a", "(a&b)", "c", "a", "e", "~~b"] * 3
    return EntailmentData(a, b, np.arange(len(a)) % 2, np.zeros((len(a), 3), np.int8))


def test_batches_hold_every_pair_once_padded_as_the_tf_pipeline(data):
    batches = EntailmentBatches(data, 4, shuffle=True, seed=3, width=8)
    seen = []
    for features, labels in batches.batches(0):
        assert features["a"].shape[0] == 4 and features["a"].shape[1] % 8 == 0
        for i in np.flatnonzero(labels["weight"]):
            seen.append((features["a"][i].tolist(), features["b"][i].tolist(),
                         float(labels["label"][i, 0])))
    want = []
    for features, label in make_dataset(data, 1):
        want.append((features["a"][0].numpy().tolist(), features["b"][0].numpy().tolist(),
                     float(label[0, 0])))
    strip = [(tuple(x for x in a if x), tuple(x for x in b if x), y) for a, b, y in seen]
    assert sorted(strip) == sorted((tuple(a), tuple(b), y) for a, b, y in want)
    assert len(batches) == 5


def test_augmentation_is_a_bijection_of_the_variables_only(data):
    a = np.stack([np.pad(encode(t), (0, 20 - len(t))) for t in data.a])
    b = np.stack([np.pad(encode(t), (0, 20 - len(t))) for t in data.b])
    pa, pb = permute_numpy(a, b, np.random.default_rng(0))
    fixed = a < FIRST_VARIABLE_ID
    np.testing.assert_array_equal(pa[fixed], a[fixed])  # pad, connectives unchanged
    for row in range(len(a)):  # one bijection per row, shared by A and B
        mapping = {}
        for x, y in zip(np.concatenate([a[row], b[row]]), np.concatenate([pa[row], pb[row]])):
            assert mapping.setdefault(int(x), int(y)) == int(y)
        assert len(set(mapping.values())) == len(mapping)
    ta, tb = permute_variables(a, b, seed=np.array([1, 2]))
    assert ta.shape == pa.shape and tb.shape == pb.shape  # the TF version's contract


def test_order_and_permutations_are_functions_of_seed_and_epoch(data):
    batches = EntailmentBatches(data, 4, shuffle=True, augment=True, seed=1)

    def epoch(e, skip=0):
        return [f["a"].tolist() for f, _ in batches.batches(e, skip)]

    assert epoch(2) == epoch(2) and epoch(2) != epoch(3)
    assert epoch(2, skip=2) == epoch(2)[2:]
