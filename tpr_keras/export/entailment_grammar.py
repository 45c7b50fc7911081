"""Whether each string is a formula of the entailment grammar, in TensorFlow ops: the
SavedModel's ``premise_well_formed`` / ``hypothesis_well_formed`` outputs.

The grammar, its reductions and their depth limit are defined once, in
:mod:`tpr_keras.models.entailment.entailment_grammar` (whose ``is_well_formed`` is the
task model's Python check); this module runs the same regular expressions (RE2 reads them
as Python's ``re`` does) over a batch.
"""

import tensorflow as tf

from tpr_keras.models.entailment.entailment_grammar import (
    BINARY_PATTERN,
    IGNORED_PATTERN,
    MAX_DEPTH,
    NOT_PATTERN,
    VARIABLE_PATTERN,
)


def well_formed(texts: tf.Tensor) -> tf.Tensor:
    """``string[B]`` -> ``bool[B]``: :func:`~tpr_keras.models.entailment.entailment_grammar.
    is_well_formed` of each (one ``tf.while_loop`` of regex passes over the batch, stopping
    when no formula changes; at most ``MAX_DEPTH`` passes)."""
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
    texts = tf.strings.regex_replace(texts, IGNORED_PATTERN, "")

    def reduce(text, changed):
        del changed
        reduced = tf.strings.regex_replace(
            tf.strings.regex_replace(text, NOT_PATTERN, "a"), BINARY_PATTERN, "a")
        return reduced, tf.reduce_any(tf.not_equal(reduced, text))

    texts, _ = tf.while_loop(lambda text, changed: changed, reduce,
                             (texts, tf.constant(True)), maximum_iterations=MAX_DEPTH)
    return tf.strings.regex_full_match(texts, VARIABLE_PATTERN)
