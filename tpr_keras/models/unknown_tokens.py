"""What a model did not take in, listed: the distinct unknown tokens of each request.

The exporters' ``unknown_tokens`` output (``string[batch]``) and its Python twin, shared by
the bAbI (words), Mathematics and entailment (characters) families: each request's tokens
outside the vocabulary, each once, in the order they first appear, joined by
:data:`SEPARATOR` (words hold no whitespace; a character that is whitespace is never
unknown in these vocabularies' tokenizers except where a family says so).
"""

from __future__ import annotations

from collections.abc import Iterable

#: Between two listed unknown tokens.
SEPARATOR = " "


def join_distinct(tokens: Iterable[str]) -> str:
    """``tokens`` without repeats, in first-appearance order, joined by :data:`SEPARATOR`
    (the Python twin of :func:`join_distinct_rows`)."""
    return SEPARATOR.join(dict.fromkeys(tokens))


def join_distinct_rows(tokens):
    """``string[B, (n)]`` (a ``tf.RaggedTensor``) -> ``string[B]``: each row's distinct
    tokens in first-appearance order, joined by :data:`SEPARATOR`; ``""`` for an empty row.
    Vectorized: one ``tf.unique`` over (row, token) keys, no loop."""
    import tensorflow as tf

    flat = tokens.flat_values
    rows = tokens.value_rowids()
    keys = tf.strings.join([tf.strings.as_string(rows), flat], separator="\x00")
    unique, index = tf.unique(keys)
    positions = tf.range(tf.shape(flat, out_type=tf.int64)[0])
    first = tf.math.unsorted_segment_min(positions, index, tf.size(unique))
    keep = tf.equal(tf.gather(first, index), positions)
    kept = tf.ragged.boolean_mask(tokens, tokens.with_flat_values(keep))
    return tf.strings.reduce_join(kept, axis=-1, separator=SEPARATOR)
