"""Tests for tpr_keras.data.babi's make_dataset: the tf.data batches of a split.

Shapes and padding of a batch, every sample once per epoch and a new order each epoch,
an empty split, and length buckets on the real data (``shared_data``; skipped when it is
missing). The small split is written under a temporary folder (``tests/data/tiny_babi.py``).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from tests.data.tiny_babi import batch_keys, make_babi_dir, sample_keys
from tpr_keras.data.babi import EncodedSplit, load_babi, make_dataset

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")


# --------------------------------------------------------------------------------------
# tf.data
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("babi_ds") / "en-10k"
    stories = [[1, 4, 6], [2, 3], [7], [1, 2, 5, 8], [3, 9]] * 4
    return load_babi(make_babi_dir(root, {1: stories}), tasks=1, download=False)


def test_make_dataset_shapes_and_padding(small_data):
    import tensorflow as tf

    split = small_data.train
    w = small_data.max_words
    ds = make_dataset(split, batch_size=5, shuffle=False)
    features_spec, labels_spec = ds.element_spec
    assert features_spec["story"].shape.as_list() == [None, None, w]
    assert features_spec["question"].shape.as_list() == [None, w]
    assert labels_spec["answer"].shape.as_list() == [None]
    assert labels_spec["task"].dtype == tf.int32 and features_spec["story"].dtype == tf.int32
    start = 0
    for features, labels in ds:
        story, question = features["story"].numpy(), features["question"].numpy()
        b = story.shape[0]
        lengths = split.story_lengths[start : start + b]
        assert story.shape[1] == lengths.max()  # S = longest story of the batch.
        for j in range(b):
            n = int(lengths[j])
            np.testing.assert_array_equal(story[j, :n], split.story(start + j))
            assert not story[j, n:].any()  # Padding sentences are all-zero rows.
        np.testing.assert_array_equal(question, split.questions[start : start + b])
        np.testing.assert_array_equal(labels["answer"].numpy(), split.answers[start : start + b])
        np.testing.assert_array_equal(labels["task"].numpy(), split.tasks[start : start + b])
        start += b
    assert start == len(split)
    # drop_remainder gives a static batch size; repeat continues past one epoch.
    ds2 = make_dataset(split, batch_size=4, shuffle=True, seed=1, drop_remainder=True, repeat=True)
    assert ds2.element_spec[0]["story"].shape.as_list() == [4, None, w]
    assert len(list(ds2.take(len(split)))) == len(split)


def test_make_dataset_epochs_cover_each_sample_once_and_reshuffle(small_data):
    split = small_data.train
    ds = make_dataset(split, batch_size=8, shuffle=True, seed=123)
    expected = sample_keys(split)
    orders = []
    for _ in range(2):
        order = []
        for features, labels in ds:
            order += batch_keys(features, labels)
        assert collections.Counter(order) == expected
        orders.append(order)
    assert orders[0] != orders[1]
    # Same seed, new dataset: same first-epoch order (deterministic).
    again = []
    for features, labels in make_dataset(split, batch_size=8, shuffle=True, seed=123):
        again += batch_keys(features, labels)
    assert again == orders[0]


def test_make_dataset_empty_split(small_data):
    empty = EncodedSplit.empty(small_data.max_words)
    assert len(empty) == 0
    assert len(list(make_dataset(empty, batch_size=4, shuffle=True))) == 0


def test_bucketing_keeps_every_sample_once_and_pads_less(shared_data):
    from tpr_keras.data.babi import load_babi, make_dataset

    data = load_babi(shared_data / "babi", tasks=(2,), download=False)
    plain = make_dataset(data.train, 128, shuffle=True, seed=0)
    bucketed = make_dataset(data.train, 128, shuffle=True, seed=0, bucket_width=10)
    padded_plain = sum(features["story"].numpy().size for features, _ in plain)
    seen, padded_bucketed = [], 0
    for features, _ in bucketed:
        story = features["story"].numpy()
        padded_bucketed += story.size
        lengths = (story != 0).any(-1).sum(-1)
        assert lengths.max() - lengths.min() <= 10  # one bucket per batch
        seen.append(features["question"].numpy())
    assert sum(len(q) for q in seen) == len(data.train)
    assert padded_bucketed < 0.6 * padded_plain
