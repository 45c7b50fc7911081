"""The ``tf.data`` pipeline over an encoded split: batches padded per batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tpr_keras.data.babi.encoding import EncodedSplit

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf


def make_dataset(
    split: EncodedSplit,
    batch_size: int,
    shuffle: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    repeat: bool = False,
    bucket_width: int | None = None,
    epoch: tf.Variable | None = None,
) -> tf.data.Dataset:
    """Builds a batched ``tf.data`` pipeline over an encoded split.

    Elements are ``({"story": int32[B, S, W], "question": int32[B, W]},
    {"answer": int32[B], "task": int32[B]})``. ``S`` is the longest story of the batch
    (padding sentences are all-zero rows); ``W`` is fixed. Static shapes are
    ``[None, None, W]`` and ``[None, W]`` (``B`` static with ``drop_remainder``).
    Stories are gathered from the shared sentence array per batch, fully in-graph.

    The pipeline shuffles and batches sample *indices* and gathers each batch's
    arrays in one step, so its per-sample work is a C++ shuffle of integers, far
    less CPU than a per-sample ``bucket_by_sequence_length``, which on a machine
    with few cores competes with the training step for the same cores.

    Args:
        split: The encoded split.
        batch_size: Samples per batch.
        shuffle: Shuffle with a buffer holding the whole split, reshuffled each epoch.
        seed: Shuffle seed (None: nondeterministic).
        drop_remainder: Drop the last partial batch (of every bucket).
        repeat: Repeat indefinitely (after shuffling, so each pass is reshuffled).
        bucket_width: If set, batch stories of similar length together (buckets
            of this many sentences), so a batch pads to little more than its own
            stories. The batches are those of ``bucket_by_sequence_length`` over
            the shuffled stream: each bucket fills in shuffled order and a batch is
            emitted when its bucket is full; the partial batches follow at the end
            of the pass. Every sample still appears exactly once per epoch.
        epoch: Optional int64 ``tf.Variable``. With it (and ``shuffle``), the order
            is a stateless function of ``(seed, epoch)``, read when an iterator
            starts: one dataset serves every epoch (assign the epoch, then
            iterate; pass ``p`` of a repeated dataset uses ``epoch + p``), so a
            training loop does not build, trace and optimize a new pipeline
            graph every epoch. Assign it only while no
            iterator of this dataset has yet to produce its first batch. The
            pipeline then holds a resource, so ``tf.distribute`` cannot
            auto-shard it: use it with single-worker input only.

    Returns:
        The dataset, prefetched two batches ahead, with tf.data autotuning off.
    """
    import tensorflow as tf

    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    ds, repeat = _sample_orders(len(split), shuffle, seed, repeat, bucket_width, epoch)
    if not bucket_width:
        if repeat:
            ds = ds.repeat()
        ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    else:
        if repeat:
            ds = ds.repeat()  # each repetition reshuffles
        ds = ds.flat_map(_bucket_batcher(split, batch_size, bucket_width, drop_remainder))
        if drop_remainder:
            ds = ds.map(tf.autograph.experimental.do_not_convert(
                lambda rows: tf.ensure_shape(rows, [batch_size])))
    # No tf.data autotuning: the pipeline has fixed values, and an autotuned
    # iterator's deletion can wait for the autotuner's next wake-up, a stall per
    # epoch under CPU contention (see tpr_keras.backend.tensorflow.trainer.without_autotune).
    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.map(_batch_gatherer(split)).prefetch(2).with_options(options)


def _sample_orders(n, shuffle, seed, repeat, bucket_width, epoch):
    """``(dataset, repeat)``: the sample indices of one pass (shuffled as asked), one index
    per element, or with ``bucket_width`` one element holding the whole pass's order; with
    ``epoch`` a pass per element already repeating, so ``repeat`` comes back False."""
    import tensorflow as tf

    if epoch is not None and shuffle and n > 1:
        # one element per pass: the order, a stateless function of (seed, epoch + pass)
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        passes = tf.data.Dataset.counter() if repeat else tf.data.Dataset.range(1)

        @tf.autograph.experimental.do_not_convert
        def pass_order(index):
            key = tf.stack([tf.constant(seed, tf.int64), epoch.read_value() + index])
            return tf.random.experimental.stateless_shuffle(tf.range(n, dtype=tf.int64), key)

        orders = passes.map(pass_order)
        return (orders if bucket_width else orders.unbatch()), False  # passes repeat
    ds = tf.data.Dataset.range(n)
    if shuffle and n > 1:
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    if bucket_width:
        ds = ds.batch(max(n, 1))  # one element: this pass's order
    return ds, repeat


def _bucket_batcher(split, batch_size, bucket_width, drop_remainder):
    """A ``flat_map`` function: one pass's order (int64[n]) as the index rows of its
    bucketed batches (:func:`make_dataset`'s ``bucket_width``)."""
    import tensorflow as tf

    lengths = tf.constant(split.story_lengths, tf.int32)
    longest = int(split.story_lengths.max()) if len(split) else 0
    boundaries = tf.constant(list(range(bucket_width + 1, longest + 1, bucket_width)),
                             tf.int32)
    num_buckets = int(boundaries.shape[0]) + 1

    @tf.autograph.experimental.do_not_convert  # plain graph code: no conversion cost
    def bucket_batches(order):
        """One pass's ``order`` (int64[n]) as bucketed batches (ragged rows)."""
        position = tf.range(tf.size(order, out_type=tf.int64))
        if num_buckets > 1:
            bucket = tf.searchsorted(boundaries, tf.gather(lengths, order), side="right")
        else:
            bucket = tf.zeros_like(order, tf.int32)
        one_hot = tf.one_hot(bucket, num_buckets, dtype=tf.int64)
        rank = tf.reduce_sum((tf.cumsum(one_hot, axis=0) - 1) * one_hot, axis=1)
        # batch key: (bucket, batch within bucket); emitted when its last sample
        # arrives if full, else after the pass, bucket by bucket
        per_bucket = (tf.size(order, out_type=tf.int64) + batch_size - 1) // batch_size
        key = tf.cast(bucket, tf.int64) * per_bucket + rank // batch_size
        size = tf.math.unsorted_segment_sum(tf.ones_like(key), key, num_buckets * per_bucket)
        full = tf.gather(size, key) == batch_size
        last = tf.math.unsorted_segment_max(position, key, num_buckets * per_bucket)
        total = tf.size(order, out_type=tf.int64)
        emit = tf.where(full, tf.gather(last, key), total + key)
        if drop_remainder:
            order, emit, position = (tf.boolean_mask(t, full) for t in (order, emit, position))
        sort = tf.argsort(emit * (total + 1) + position, stable=True)
        _, _, row_lengths = tf.unique_with_counts(tf.gather(emit, sort), out_idx=tf.int64)
        rows = tf.RaggedTensor.from_row_lengths(tf.gather(order, sort), row_lengths,
                                                validate=False)
        return tf.data.Dataset.from_tensor_slices(rows)

    return bucket_batches


def _batch_gatherer(split):
    """A ``map`` function: a batch's sample indices -> its padded arrays (the stories
    gathered from the split's shared sentence array, all-zero rows past each story)."""
    import tensorflow as tf

    width = split.max_words
    sentences = tf.constant(split.sentences, dtype=tf.int32)
    offsets = tf.constant(split.story_offsets, tf.int64)
    lengths = tf.constant(split.story_lengths, tf.int32)
    questions = tf.constant(split.questions, tf.int32)
    answers = tf.constant(split.answers, tf.int32)
    tasks = tf.constant(split.tasks, tf.int32)

    @tf.autograph.experimental.do_not_convert
    def gather(index):
        batch_offsets = tf.gather(offsets, index)
        batch_lengths = tf.gather(lengths, index)
        steps = tf.range(tf.reduce_max(tf.concat([batch_lengths, [0]], axis=0)))  # [S]
        valid = steps[None, :] < batch_lengths[:, None]  # [B, S]
        rows = batch_offsets[:, None] + tf.cast(steps, tf.int64)[None, :]
        rows = tf.where(valid, rows, tf.zeros_like(rows))
        story = tf.gather(sentences, rows)  # [B, S, W]
        story = tf.where(valid[:, :, None], story, tf.zeros_like(story))
        story = tf.ensure_shape(story, [None, None, width])
        question = tf.ensure_shape(tf.gather(questions, index), [None, width])
        return ({"story": story, "question": question},
                {"answer": tf.gather(answers, index), "task": tf.gather(tasks, index)})

    return gather
