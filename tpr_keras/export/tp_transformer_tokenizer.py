"""The in-graph Mathematics tokenizer: question strings <-> character ids, inside a SavedModel."""

import tensorflow as tf

from tpr_keras.data.mathematics import MAX_QUESTION_LENGTH, CharVocabulary

#: Ids of the four special symbols (``<pad>``, ``<unk>``, ``<s>``, ``</s>``): the first
#: ids of every :class:`CharVocabulary`.
_NUM_SPECIALS = len(CharVocabulary.SPECIALS)


class MathTokenizer(tf.Module):
    """Strings -> the ids :meth:`CharVocabulary.encode_question` gives, in TensorFlow ops;
    ids -> answer strings.

    Built from the same specification (a :class:`CharVocabulary`: its special ids, one id
    per character, ``<unk>`` for everything else; questions cut at
    ``MAX_QUESTION_LENGTH`` characters and wrapped in ``<s> ... </s>``) and tested to give
    the same ids. Beyond the Python tokenizer: invalid UTF-8 becomes U+FFFD (an unknown
    character), never an error. The character table is a ``tf.lookup.StaticHashTable``
    tracked by this module, so assign it as an attribute of the exported ``tf.Module``;
    no ``tf.py_function``, so stock ``tensorflow_model_server`` loads it.

    Args:
        vocab: the model's :class:`CharVocabulary`.

    Example:
    >>> tokenizer = MathTokenizer(CharVocabulary.build(["What is 3*4?", "12"]))
    >>> tokenizer.encode(tf.constant(["What is 3*4?"]))  # int32[1, 14]: <s> ... </s>
    >>> tokenizer.decode(tf.constant([[5, 6, 3, 0]]))  # string[1]: up to </s>
    """

    def __init__(self, vocab, name="char_table"):
        super().__init__(name=name)
        chars = list(vocab.tokens[_NUM_SPECIALS:])
        self.size = len(vocab)
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(chars, tf.string),
                tf.constant(list(range(_NUM_SPECIALS, len(vocab))), tf.int32),
            ),
            default_value=CharVocabulary.UNK_ID,
        )
        self.symbols = tf.constant([""] * _NUM_SPECIALS + chars, tf.string)

    @classmethod
    def from_preset(cls, preset):
        """The in-graph tokenizer of a trained math preset (name, folder or
        ``TrainedPreset``): the vocabulary :meth:`MathPreprocessor.from_preset` reads.

        Raises:
            PresetError (a ValueError): an unknown or altered preset, or not a math one.
        """
        from tpr_keras.models.tp_transformer.tp_transformer_preprocessor import (
            MathPreprocessor,
        )

        return cls(MathPreprocessor.from_preset(preset).vocabulary)

    def encode(self, texts, max_length=MAX_QUESTION_LENGTH, markers=True):
        """``string[B]`` -> ``int32[B, L]``: ``<s>``, the first ``max_length`` characters'
        ids, ``</s>`` (no markers with ``markers=False``), ``<pad>``-padded to the longest."""
        texts = tf.convert_to_tensor(texts, tf.string)
        chars = tf.strings.unicode_split(texts, "UTF-8", errors="replace")
        chars = chars[:, :max_length]
        ids = tf.ragged.map_flat_values(self.table.lookup, chars)
        if markers:
            rows = tf.shape(texts)[0]
            ids = tf.concat([tf.fill([rows, 1], CharVocabulary.START_ID), ids,
                             tf.fill([rows, 1], CharVocabulary.END_ID)], axis=1)
        return ids.to_tensor(default_value=CharVocabulary.PAD_ID)

    def question_characters(self, texts):
        """``string[B]`` -> ``int32[B]``: the characters of each question (invalid UTF-8
        read as U+FFFD), before any cut (0: an empty question)."""
        chars = tf.strings.unicode_split(tf.convert_to_tensor(texts, tf.string), "UTF-8",
                                         errors="replace")
        return tf.cast(chars.row_lengths(), tf.int32)

    def unknown_characters(self, texts, max_length=MAX_QUESTION_LENGTH):
        """``string[B]`` -> ``string[B, (n)]``: the characters among the first
        ``max_length`` that read as ``<unk>``, in order."""
        chars = tf.strings.unicode_split(tf.convert_to_tensor(texts, tf.string), "UTF-8",
                                         errors="replace")[:, :max_length]
        unknown = tf.equal(self.table.lookup(chars.flat_values), CharVocabulary.UNK_ID)
        return tf.ragged.boolean_mask(chars, chars.with_flat_values(unknown))

    def decode(self, ids):
        """``int[B, L]`` -> ``string[B]``: the characters before the first ``</s>``
        (specials dropped), as :meth:`CharVocabulary.decode`."""
        ids = tf.cast(ids, tf.int32)
        is_end = tf.cast(tf.equal(ids, CharVocabulary.END_ID), tf.int32)
        before_end = tf.equal(tf.cumsum(is_end, axis=1), 0)
        symbols = tf.gather(self.symbols, tf.clip_by_value(ids, 0, self.size - 1))
        return tf.strings.reduce_join(tf.where(before_end, symbols, ""), axis=1)
