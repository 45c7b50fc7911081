"""The ``tf.data`` pipeline over an encoded Mathematics Dataset split: length-bucketed
batches padded per batch, and the module-balanced epoch order it shares with
:mod:`.batches`.

TensorFlow is imported inside :func:`make_dataset` only, so this module (and
:func:`balanced_indices`) loads where TensorFlow is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tpr_keras.data.mathematics.encoding import MathSplit
from tpr_keras.data.mathematics.vocabulary import CharVocabulary

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

#: Source-length bucket boundaries (``<s> question </s>``, at most 162 symbols).
DEFAULT_BUCKET_BOUNDARIES = (32, 48, 64, 96, 128)

#: The grid of :func:`make_dataset`'s ``answer_bucket_boundaries``: question lengths in
#: steps of 8 and answer lengths (``<s> answer``, at most 32 symbols) in these cells. On the
#: twenty everyday modules' training questions a batch's matrix products then cost about
#: 1.1 times what its examples' own lengths need (1.6 times with the question buckets alone).
GRID_BUCKET_BOUNDARIES = tuple(range(16, 161, 8))
GRID_ANSWER_BOUNDARIES = (3, 5, 8, 12, 16, 24)


def balanced_indices(modules: np.ndarray, seed: int | None = None,
                     weights: Mapping[int, float] | None = None) -> np.ndarray:
    """One epoch's example indices with every module equally often (or as ``weights``
    say), shuffled.

    The dataset's modules all have the same size, so a model trained on all of them sees
    each module equally often; a local copy whose modules differ in size (for instance
    more examples of a few modules) would otherwise be dominated by its largest. The
    epoch keeps its length ``N``: each of the ``M`` modules contributes ``N // M``
    examples (one more for ``N % M`` modules drawn at random), drawn without
    replacement from a fresh permutation of its examples, cycled when it has fewer.
    With ``weights``, module ``m`` contributes ``floor(N * w_m / sum(w))`` examples
    instead (one more for as many modules, drawn at random, as it takes to reach ``N``),
    so a module weighted 3 beside three weighted 1 fills half of every epoch. The same
    ``seed`` gives the same indices; equal weights give the indices of no weights.

    Args:
        modules: ``int[N]`` module id of each example.
        seed: seed of the draw.
        weights: ``{module id: weight > 0}``; a module not named weighs 1.

    Raises:
        ValueError: a weight that is not positive and finite, or one for a module id
            that ``modules`` does not hold.

    Example:
    >>> idx = balanced_indices(np.array([0] * 8 + [1] * 2), seed=0)
    >>> len(idx), int((idx >= 8).sum())  # module 1 fills half the epoch
    (10, 5)
    >>> idx = balanced_indices(np.array([0] * 8 + [1] * 2), seed=0, weights={1: 4})
    >>> int((idx >= 8).sum())  # module 1 fills four fifths of it
    8
    """
    rng = np.random.default_rng(seed)
    modules = np.asarray(modules)
    names = np.unique(modules)
    w = module_weight_array(names, weights)
    if len(set(w.tolist())) == 1:  # integer arithmetic: equal weights draw as none
        quota = np.full(len(names), len(modules) // len(names), np.int64)
    else:
        quota = np.floor(len(modules) * w / w.sum()).astype(np.int64)
    quota[rng.permutation(len(names))[: len(modules) - int(quota.sum())]] += 1
    parts = []
    for name, q in zip(names, quota):
        members = np.flatnonzero(modules == name)
        cycles = -(-int(q) // len(members))
        parts.append(np.concatenate([rng.permutation(members) for _ in range(cycles)])[:q])
    return rng.permutation(np.concatenate(parts)).astype(np.int64)


def module_weight_array(names: np.ndarray,
                        weights: Mapping[int, float] | None) -> np.ndarray:
    """The weight of each module id of ``names`` (1 where ``weights`` names none), checked.
    See :func:`balanced_indices`."""
    weights = dict(weights or {})
    unknown = sorted(set(weights) - set(np.asarray(names).tolist()))
    if unknown:
        raise ValueError(f"module weights name module ids {unknown} that the split does "
                         f"not hold (it holds {np.asarray(names).tolist()})")
    w = np.array([float(weights.get(int(m), 1.0)) for m in names])
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError(f"module weights must be positive and finite, got {weights}")
    return w


def check_module_weights(shuffle: bool, balance_modules: bool,
                         module_weights: Mapping[int, float] | None) -> None:
    """Raises ValueError when ``module_weights`` are given for a pass that is not a
    shuffled, balanced one (what :func:`balanced_indices` draws)."""
    if module_weights and not (balance_modules and shuffle):
        raise ValueError("module_weights shape a shuffled, balanced pass: give "
                         "balance_modules=True and shuffle=True with them")


def draws_balanced(split: MathSplit, shuffle: bool, balance_modules: bool,
                   module_weights: Mapping[int, float] | None = None) -> bool:
    """Whether a shuffled pass is drawn by :func:`balanced_indices`: with
    ``balance_modules``, when module weights are given or the modules differ in size
    (equal sizes and no weights: a plain shuffle, as the draw would change nothing)."""
    if not (shuffle and balance_modules):
        return False
    _, sizes = np.unique(split.modules, return_counts=True)
    return bool(module_weights) or len(set(sizes.tolist())) > 1


def make_dataset(
    split: MathSplit,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    bucket_boundaries: Sequence[int] | None = DEFAULT_BUCKET_BOUNDARIES,
    drop_remainder: bool = False,
    repeat: bool = False,
    source_markers: bool = True,
    balance_modules: bool = False,
    module_weights: Mapping[int, float] | None = None,
    answer_bucket_boundaries: Sequence[int] | None = None,
) -> tf.data.Dataset:
    """Batched, length-bucketed ``tf.data`` pipeline over a split.

    Elements: ``({"source": int32[B, Ls], "target_in": int32[B, Lt]},
    {"target_out": int32[B, Lt], "module": int32[B]})`` with
    ``source = <s> question </s>`` (just the question if ``source_markers`` is
    False), ``target_in = <s> answer``, ``target_out = answer </s>``, ``<pad>``
    (0)-padded to the longest of the batch.

    Args:
        split: The encoded split.
        batch_size: Examples per batch.
        shuffle: Shuffle the whole split (indices), reshuffled each iteration.
        seed: Shuffle seed (None: nondeterministic). The same seed gives the same
            order for a freshly built dataset, so pass e.g. ``seed + epoch`` per
            epoch.
        bucket_boundaries: Batch examples whose source lengths fall between the
            same boundaries together (``tf.data.Dataset.bucket_by_sequence_length``),
            so a batch pads to little more than its own longest question; None pads
            plain batches. Every example still appears exactly once per pass.
        answer_bucket_boundaries: With ``bucket_boundaries``, batch together only examples
            whose ``target_in`` lengths also fall between the same of these boundaries:
            a batch holds one cell of the (question length, answer length) grid and pads
            to little more than its own longest question and answer (for instance
            :data:`GRID_BUCKET_BOUNDARIES` by :data:`GRID_ANSWER_BOUNDARIES`). Each cell
            ends a pass with a partial batch (dropped with ``drop_remainder``).
        drop_remainder: Drop partial batches (of every bucket).
        repeat: Repeat indefinitely (each pass reshuffled).
        source_markers: Wrap the question in ``<s> ... </s>``.
        balance_modules: With ``shuffle``, draw the pass from :func:`balanced_indices`
            (every module equally often) when the split's modules differ in size; with
            equal sizes it changes nothing. Not with ``repeat``: draw each pass anew
            with its own seed instead.
        module_weights: With ``balance_modules`` and ``shuffle``, ``{module id:
            weight}``: each pass is drawn in these proportions (:func:`balanced_indices`),
            whatever the modules' sizes.

    Returns:
        The dataset, prefetched.
    """
    import tensorflow as tf

    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    pad = CharVocabulary.PAD_ID
    check_module_weights(shuffle, balance_modules, module_weights)
    ds = _example_order(split, shuffle, seed, repeat, balance_modules, module_weights)
    ds = ds.map(_example_builder(split, source_markers), num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    ds = _batches(ds, batch_size, bucket_boundaries, answer_bucket_boundaries,
                  (pad, pad, pad, 0), drop_remainder)

    def structure(source, target_in, target_out, module):
        return (
            {"source": source, "target_in": target_in},
            {"target_out": target_out, "module": module},
        )

    return ds.map(structure, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _batches(ds, batch_size, bucket_boundaries, answer_bucket_boundaries, padding,
             drop_remainder):
    """``ds`` (unbatched ``(source, target_in, target_out, module)``) batched as
    :func:`make_dataset` says: by the length grid, by question-length buckets, or plainly."""
    import tensorflow as tf

    if bucket_boundaries and answer_bucket_boundaries:
        return _grid_batches(ds, bucket_boundaries, answer_bucket_boundaries, batch_size,
                             padding, drop_remainder)
    if bucket_boundaries:
        boundaries = sorted(int(b) for b in bucket_boundaries)
        return ds.bucket_by_sequence_length(
            element_length_func=lambda source, *rest: tf.shape(source)[0],
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            padding_values=padding,
            drop_remainder=drop_remainder,
        )
    return ds.padded_batch(batch_size, padding_values=padding, drop_remainder=drop_remainder)


def _grid_batches(ds, question_boundaries, answer_boundaries, batch_size, padding,
                  drop_remainder):
    """``ds`` (unbatched ``(source, target_in, target_out, module)``) batched by the cell
    of the grid its source and ``target_in`` lengths fall in (``bucket_by_sequence_length``
    on two lengths: cell ``i`` of a length holds ``boundaries[i - 1] <= length <
    boundaries[i]``)."""
    import tensorflow as tf

    questions = tf.constant(sorted(int(b) for b in question_boundaries), tf.int32)
    answers = tf.constant(sorted(int(b) for b in answer_boundaries), tf.int32)
    columns = len(answer_boundaries) + 1

    def cell(source, target_in, *rest):
        row = tf.reduce_sum(tf.cast(tf.shape(source)[0] >= questions, tf.int64))
        column = tf.reduce_sum(tf.cast(tf.shape(target_in)[0] >= answers, tf.int64))
        return row * columns + column

    return ds.group_by_window(
        key_func=cell, window_size=batch_size,
        reduce_func=lambda _, window: window.padded_batch(
            batch_size, padding_values=padding, drop_remainder=drop_remainder))


def _example_order(split, shuffle, seed, repeat, balance_modules, module_weights):
    """The example indices of a pass (:func:`make_dataset`'s order: balanced draws,
    shuffled, or in order), repeated when ``repeat``."""
    import tensorflow as tf

    if draws_balanced(split, shuffle, balance_modules, module_weights):
        if repeat:
            raise ValueError("balance_modules draws one pass: build a dataset per pass "
                             "(with its own seed) instead of repeat=True")
        ds = tf.data.Dataset.from_tensor_slices(
            balanced_indices(split.modules, seed, module_weights))
    elif shuffle and len(split) > 1:
        ds = tf.data.Dataset.range(len(split))
        ds = ds.shuffle(len(split), seed=seed, reshuffle_each_iteration=True)
    else:
        ds = tf.data.Dataset.range(len(split))
    if repeat:
        ds = ds.repeat()
    return ds


def _example_builder(split, source_markers):
    """A ``map`` function: an example's index -> ``(source, target_in, target_out,
    module)``, cut from the split's concatenated ids."""
    import tensorflow as tf

    start, end = CharVocabulary.START_ID, CharVocabulary.END_ID
    q_ids = tf.constant(split.question_ids)
    q_splits = tf.constant(split.question_splits, tf.int64)
    a_ids = tf.constant(split.answer_ids)
    a_splits = tf.constant(split.answer_splits, tf.int64)
    modules = tf.constant(split.modules, tf.int32)

    def example(i):
        q = tf.cast(q_ids[q_splits[i] : q_splits[i + 1]], tf.int32)
        a = tf.cast(a_ids[a_splits[i] : a_splits[i + 1]], tf.int32)
        source = tf.concat([[start], q, [end]], 0) if source_markers else q
        target_in = tf.concat([[start], a], 0)
        target_out = tf.concat([a, [end]], 0)
        return source, target_in, target_out, modules[i]

    return example
