"""The SavedModels' ``unknown_tokens`` output in TensorFlow ops: each request's distinct
unknown tokens, joined as the task models' :func:`tpr_keras.models.unknown_tokens.join_distinct`
joins them (the same :data:`~tpr_keras.models.unknown_tokens.SEPARATOR`)."""

import tensorflow as tf

from tpr_keras.models.unknown_tokens import SEPARATOR


def join_distinct_rows(tokens: tf.RaggedTensor) -> tf.Tensor:
    """``string[B, (n)]`` -> ``string[B]``: each row's distinct tokens in first-appearance
    order, joined by :data:`SEPARATOR`; ``""`` for an empty row. Vectorized: one
    ``tf.unique`` over (row, token) keys, no loop."""
    flat = tokens.flat_values
    rows = tokens.value_rowids()
    keys = tf.strings.join([tf.strings.as_string(rows), flat], separator="\x00")
    unique, index = tf.unique(keys)
    positions = tf.range(tf.shape(flat, out_type=tf.int64)[0])
    first = tf.math.unsorted_segment_min(positions, index, tf.size(unique))
    keep = tf.equal(tf.gather(first, index), positions)
    kept = tf.ragged.boolean_mask(tokens, tokens.with_flat_values(keep))
    return tf.strings.reduce_join(kept, axis=-1, separator=SEPARATOR)
