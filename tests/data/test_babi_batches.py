"""NumpyBatches: the bAbI batches of the JAX trainer, without TensorFlow."""

import numpy as np
import pytest

from tpr_keras.data.babi import EncodedSplit, NumpyBatches, make_dataset


@pytest.fixture
def split():
    """13 samples with stories of 1-23 sentences over one sentence array."""
    rng = np.random.default_rng(0)
    lengths = np.array([1, 3, 23, 5, 12, 2, 9, 11, 20, 4, 7, 15, 1], np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    sentences = rng.integers(1, 30, size=(int(lengths.sum()), 6)).astype(np.int32)
    n = len(lengths)
    return EncodedSplit(sentences=sentences, story_offsets=offsets, story_lengths=lengths,
                        questions=rng.integers(1, 30, size=(n, 6)), answers=np.arange(n),
                        tasks=np.ones(n), story_ids=np.arange(n))


def real_rows(batches, epoch=0):
    """``{answer: (story, question)}`` of the weight-1 rows of a pass (answers are unique)."""
    rows = {}
    for features, labels in batches.batches(epoch):
        for i in np.flatnonzero(labels["weight"]):
            answer = int(labels["answer"][i])
            assert answer not in rows  # every sample once per pass
            rows[answer] = (features["story"][i], features["question"][i])
    return rows


@pytest.mark.parametrize("bucket_width", [None, 10])
def test_every_sample_once_per_pass_in_fixed_shapes_equal_to_the_tf_pipeline(split,
                                                                             bucket_width):
    batches = NumpyBatches(split, 4, shuffle=True, seed=1, bucket_width=bucket_width)
    shapes = {f["story"].shape for f, _ in batches.batches(0)}
    if bucket_width:  # S rounds up to a bucket edge, capped at the longest story
        assert shapes <= {(4, 10, 6), (4, 20, 6), (4, 23, 6)}
    else:
        assert shapes == {(4, 23, 6)}
    rows = real_rows(batches)
    assert sorted(rows) == list(range(len(split)))
    import tensorflow as tf  # the reference: the tf.data pipeline's padded stories

    for features, labels in make_dataset(split, 1, shuffle=False):
        story, question = rows[int(labels["answer"][0])]
        want = features["story"][0].numpy()
        np.testing.assert_array_equal(story[:len(want)], want)
        assert not story[len(want):].any()
        np.testing.assert_array_equal(question, features["question"][0].numpy())
    del tf


def test_the_order_is_a_function_of_seed_and_epoch_and_skip_resumes_it(split):
    batches = NumpyBatches(split, 3, shuffle=True, seed=5, bucket_width=10)

    def order(epoch, skip=0):
        return [labels["answer"].tolist() for _, labels in batches.batches(epoch, skip)]

    assert order(0) == order(0) and order(0) != order(1)
    assert order(1, skip=2) == order(1)[2:]
    assert len(batches) == len(order(0))


def test_a_bad_batch_size_is_an_error(split):
    with pytest.raises(ValueError, match="batch_size must be positive"):
        NumpyBatches(split, 0)
