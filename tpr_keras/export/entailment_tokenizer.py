"""The in-graph entailment tokenizer: formula strings -> character ids, inside a SavedModel."""

import tensorflow as tf

from tpr_keras.data.entailment import IGNORED_CHARACTERS, PAD_ID, UNK_ID

# The specification's ignored characters as one RE2 class, each written as \xHH.
_IGNORED = "[" + "".join(f"\\x{ord(c):02x}" for c in IGNORED_CHARACTERS) + "]"


class EntailmentTokenizer(tf.Module):
    """Strings -> the ids :func:`tpr_keras.data.entailment.tokenize` gives, in TensorFlow ops.

    Built from the same specification (:mod:`tpr_keras.data.entailment`: the character
    ``VOCABULARY``, ``IGNORED_CHARACTERS``, ``<unk>`` for everything else) and tested to
    give the same ids. Beyond the Python tokenizer: invalid UTF-8 becomes U+FFFD (an
    unknown character), never an error. The vocabulary file (one token per line, line
    i = id i) becomes a SavedModel asset; no ``tf.py_function``, so stock
    ``tensorflow_model_server`` loads it.

    Args:
        vocab_file: the vocabulary file (``tpr_keras.data.entailment.save_vocabulary``).

    Example:
    >>> tokenizer = EntailmentTokenizer("entailment_vocab.txt")
    >>> tokenizer(tf.constant(["(a&b)", "a"]))  # int32[2, 5], 0-padded
    """

    def __init__(self, vocab_file, name=None):
        super().__init__(name=name)
        self.vocab_asset = tf.saved_model.Asset(vocab_file)
        index = tf.lookup.TextFileIndex
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(self.vocab_asset, tf.string, index.WHOLE_LINE,
                                          tf.int64, index.LINE_NUMBER),
            default_value=UNK_ID)

    @classmethod
    def from_preset(cls, preset):
        """The in-graph tokenizer of a trained entailment preset (name, folder or
        ``TrainedPreset``), its ``assets/vocab.txt`` checked as
        :meth:`EntailmentPreprocessor.from_preset` checks it.

        Raises:
            PresetError (a ValueError): an unknown or altered preset, not an entailment
                one, or one with another vocabulary.
        """
        from tpr_keras.models.entailment.entailment_preprocessor import (
            EntailmentPreprocessor,
        )
        from tpr_keras.models.task_models import trained_preset

        preset = trained_preset(preset, "entailment")
        EntailmentPreprocessor.from_preset(preset)
        return cls(preset.asset_path("vocab.txt"))

    def characters(self, texts):
        """``string[B]`` -> ``string[B, (length)]``, the characters kept (whitespace
        dropped, invalid UTF-8 replaced by U+FFFD)."""
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
        texts = tf.strings.regex_replace(texts, _IGNORED, "")
        return tf.strings.unicode_split(texts, "UTF-8")

    def ragged_ids(self, texts):
        """``string[B]`` -> ``int32[B, (length)]``, one id per character kept."""
        return tf.cast(tf.ragged.map_flat_values(self.table.lookup, self.characters(texts)),
                       tf.int32)

    def unknown_characters(self, texts):
        """``string[B]`` -> ``string[B, (n)]``: the characters kept that read as ``<unk>``."""
        chars = self.characters(texts)
        unknown = tf.equal(self.table.lookup(chars.flat_values), UNK_ID)
        return tf.ragged.boolean_mask(chars, chars.with_flat_values(unknown))

    def __call__(self, texts):
        """``string[B]`` -> ``int32[B, L]``, padded with 0 to the longest (L >= 1, so a
        batch of empty formulas is still a valid model input)."""
        ids = self.ragged_ids(texts)
        width = tf.maximum(tf.reduce_max(tf.concat([ids.row_lengths(), [0]], 0)), 1)
        return ids.to_tensor(PAD_ID, shape=tf.stack([tf.shape(texts, tf.int64)[0], width]))
