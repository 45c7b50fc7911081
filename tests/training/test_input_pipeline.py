"""The bAbI training input as the loop consumes it: one pipeline for every epoch."""

import collections

import numpy as np
import tensorflow as tf

from tpr_keras.data.babi import EncodedSplit, make_dataset


def split(n=300, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 25, size=n).astype("int32")
    return EncodedSplit(
        sentences=rng.integers(1, 30, size=(int(lengths.sum()), 4)),
        story_offsets=np.concatenate([[0], np.cumsum(lengths)[:-1]]),
        story_lengths=lengths,
        questions=np.arange(n)[:, None].repeat(4, 1) + 1,  # question ids name the sample
        answers=np.arange(n), tasks=np.ones(n), story_ids=np.arange(n))


def epoch_answers(ds):
    return [labels["answer"].numpy() for _, labels in ds]


def test_epoch_variable_gives_each_epoch_its_own_reproducible_order():
    data = split()
    epoch = tf.Variable(0, dtype=tf.int64)
    ds = make_dataset(data, 32, shuffle=True, seed=4, bucket_width=10, epoch=epoch)
    orders = {}
    for e in (0, 1, 0, 1, 2):
        epoch.assign(e)
        batches = epoch_answers(ds)
        flat = np.concatenate(batches)
        assert sorted(flat.tolist()) == list(range(len(data)))  # each sample once
        if e in orders:
            assert all(np.array_equal(a, b) for a, b in zip(orders[e], batches))
        orders[e] = batches
    assert not np.array_equal(np.concatenate(orders[0]), np.concatenate(orders[1]))
    # skipping (a resumed epoch) skips exactly the batches of that epoch's order
    epoch.assign(1)
    skipped = epoch_answers(ds.skip(3))
    assert all(np.array_equal(a, b) for a, b in zip(orders[1][3:], skipped))


def test_bucketed_batches_hold_similar_lengths_and_only_partial_ones_at_the_end():
    data = split()
    epoch = tf.Variable(5, dtype=tf.int64)
    for ds in (make_dataset(data, 32, shuffle=True, seed=1, bucket_width=10, epoch=epoch),
               make_dataset(data, 32, shuffle=True, seed=1, bucket_width=10)):
        sizes, buckets = [], []
        for features, labels in ds:
            lengths = data.story_lengths[labels["answer"].numpy()]
            assert len(set((lengths - 1) // 10)) == 1  # one bucket per batch
            assert features["story"].shape[1] == lengths.max()
            sizes.append(len(lengths))
        full = [s == 32 for s in sizes]
        assert full[: sum(full)] == [True] * sum(full)  # partial batches come last
        assert sum(sizes) == len(data)


def test_repeated_epoch_dataset_reshuffles_each_pass():
    data = split(64)
    epoch = tf.Variable(0, dtype=tf.int64)
    ds = make_dataset(data, 16, shuffle=True, seed=2, repeat=True, drop_remainder=True,
                      epoch=epoch)
    assert ds.element_spec[1]["answer"].shape.as_list() == [16]
    passes = np.concatenate(epoch_answers(ds.take(8))).reshape(2, 64)
    assert collections.Counter(passes[0]) == collections.Counter(passes[1])
    assert not np.array_equal(passes[0], passes[1])
    epoch.assign(1)  # pass 1 of epoch 0 is pass 0 of epoch 1
    np.testing.assert_array_equal(np.concatenate(epoch_answers(ds.take(4))), passes[1])


def test_the_pipeline_runs_without_tf_data_autotuning():
    ds = make_dataset(split(), 32, shuffle=True, seed=0, bucket_width=10)
    assert ds.options().autotune.enabled is False
