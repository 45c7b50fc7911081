"""The in-graph bAbI tokenizer: strings -> the ids the data loader gives, inside a SavedModel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from tpr_keras.data.babi.text import (
    PUNCTUATION,
    PY_WHITESPACE_EXCEPT_NEWLINE,
    SENTENCE_ENDS,
    regex_group,
)
from tpr_keras.data.babi.truncation import DEFAULT_MAX_STORY_SENTENCES
from tpr_keras.data.babi.vocabulary import Vocabulary
from tpr_keras.export.unknown_tokens import join_distinct_rows

#: The loader's special ids (the in-graph tokenizer gives exactly its ids).
PAD_ID = Vocabulary.PAD_ID
UNK_ID = Vocabulary.UNK_ID

# The specification's characters as RE2 groups (tpr_keras.data.babi.text).
_PUNCTUATION = regex_group(PUNCTUATION)
_SENTENCE_END = regex_group(SENTENCE_ENDS)
_OTHER_PUNCTUATION = regex_group("".join(c for c in PUNCTUATION if c not in SENTENCE_ENDS))


def join_story(sentences: Sequence[Sequence[str]]) -> str:
    """Story text from tokenized sentences: tokens joined by spaces, sentences by newlines."""
    return "\n".join(" ".join(s) for s in sentences)


class BabiTokenizer(tf.Module):
    """In-graph bAbI tokenizer and encoder: strings -> padded id tensors, ids -> strings.

    Built from the specification in :mod:`tpr_keras.data.babi.text` that the Python
    loader's :func:`~tpr_keras.data.babi.tokenize` also follows, it gives exactly the
    loader's ids (``tokenize`` + ``Vocabulary.encode``, stories truncated to the last
    ``max_story_sentences`` sentences, 0-padded to ``W``) for every story whose
    sentences are separated by newlines. Beyond the loader: invalid UTF-8 is replaced
    by U+FFFD; a story also splits after every ``.``, ``?`` and ``!``; empty
    sentences are dropped; each sentence and the question keep their first ``W``
    tokens (the loader rejects longer sentences instead). The vocabulary file (one
    token per line, line i = id i) becomes a SavedModel asset; no ``tf.py_function``
    anywhere, so stock ``tensorflow_model_server`` loads it.

    Args:
        vocab_file: The vocabulary file (as written by ``Vocabulary.save``).
        max_words: ``W``, word slots per sentence and question.
        max_story_sentences: Keep the last N sentences of a story; None keeps all.
        keep_sentence_ends: False drops the tokens ``. ? !`` once they have split the
            story (then empty sentences are dropped), as the loader's
            ``keep_sentence_ends=False`` does.

    Example:
    >>> tokenizer = BabiTokenizer("vocab.txt", max_words=6)
    >>> tokenizer.question_ids(tf.constant(["Where is Mary?"]))  # int32[1, 6]
    """

    def __init__(self, vocab_file: str, max_words: int,
                 max_story_sentences: int | None = DEFAULT_MAX_STORY_SENTENCES,
                 name: str | None = None, keep_sentence_ends: bool = True) -> None:
        super().__init__(name=name)
        if max_words < 1:
            raise ValueError(f"max_words must be >= 1, got {max_words}")
        if max_story_sentences is not None and max_story_sentences < 1:
            raise ValueError(f"max_story_sentences must be >= 1 or None, got {max_story_sentences}")
        self.max_words = int(max_words)
        self.max_story_sentences = None if max_story_sentences is None else int(max_story_sentences)
        self.keep_sentence_ends = bool(keep_sentence_ends)
        index = tf.lookup.TextFileIndex
        self.word_to_id = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(vocab_file, tf.string, index.WHOLE_LINE,
                                          tf.int64, index.LINE_NUMBER),
            default_value=UNK_ID)
        self.id_to_word = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(vocab_file, tf.int64, index.LINE_NUMBER,
                                          tf.string, index.WHOLE_LINE),
            default_value=Vocabulary.UNK)

    @classmethod
    def from_preset(cls, preset: Any) -> BabiTokenizer:
        """The in-graph tokenizer of a trained bAbI preset (name, folder or
        ``TrainedPreset``): its ``assets/vocab.txt``, ``max_words`` and served story
        truncation and sentence-end handling, as :meth:`BabiPreprocessor.from_preset`
        reads them.

        Raises:
            PresetError (a ValueError): an unknown or altered preset, or not a bAbI one.
        """
        from tpr_keras.models.babi.babi_preprocessor import BabiPreprocessor
        from tpr_keras.models.task_models import trained_preset

        preset = trained_preset(preset, "babi")
        python = BabiPreprocessor.from_preset(preset)
        return cls(preset.asset_path("vocab.txt"), python.max_words,
                   python.max_story_sentences, keep_sentence_ends=python.keep_sentence_ends)

    @staticmethod
    def normalize(text: tf.Tensor) -> tf.Tensor:
        """Valid UTF-8, lower case, one space for every kind of whitespace but ``\\n``."""
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                            replacement_char=0xFFFD)
        # ICU's lower-casing drops NUL; make it an ordinary unknown character instead.
        text = tf.strings.regex_replace(text, "\x00", "\ufffd")
        text = tf.strings.lower(text, encoding="utf-8")
        return tf.strings.regex_replace(text, PY_WHITESPACE_EXCEPT_NEWLINE, " ")

    def _lookup(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        return words.with_flat_values(tf.cast(self.word_to_id.lookup(words.flat_values), tf.int32))

    def story_words(self, story: tf.Tensor) -> tf.RaggedTensor:
        """``string[B]`` stories -> their tokens ``[B, (S), (T)]``, nothing cut yet."""
        text = self.normalize(story)
        text = tf.strings.regex_replace(text, _SENTENCE_END, " \\1 \n")
        text = tf.strings.regex_replace(text, _OTHER_PUNCTUATION, " \\1 ")
        words = tf.strings.split(tf.strings.split(text, sep="\n"))  # [B, (L), (T)]
        words = self._drop_sentence_ends(words)
        nonempty = words.with_values(words.values.row_lengths() > 0)
        return tf.ragged.boolean_mask(words, nonempty)  # [B, (S), (T)]

    def question_words(self, question: tf.Tensor) -> tf.RaggedTensor:
        """``string[B]`` questions -> their tokens ``[B, (T)]``, nothing cut yet."""
        text = tf.strings.regex_replace(self.normalize(question), _PUNCTUATION, " \\1 ")
        return self._drop_sentence_ends(tf.strings.split(text))

    def _drop_sentence_ends(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        """``words`` without the tokens ``. ? !`` unless they are kept."""
        if self.keep_sentence_ends:
            return words
        flat = words.flat_values
        keep = tf.logical_not(tf.reduce_any(
            tf.equal(flat[:, None], tf.constant(list(SENTENCE_ENDS))), axis=-1))
        return tf.ragged.boolean_mask(words, words.with_flat_values(keep))

    def unknown_words(self, story: tf.Tensor, question: tf.Tensor) -> tf.Tensor:
        """``int32[B]``: the tokens of each story and question that map to ``<unk>``
        (all of them, also those past the truncation limits)."""
        def count(words):
            ids = words.flat_values if isinstance(words, tf.RaggedTensor) else words
            unknown = tf.cast(tf.equal(self.word_to_id.lookup(ids), UNK_ID), tf.int32)
            return words.with_flat_values(unknown)

        story_unknown = tf.reduce_sum(tf.reduce_sum(count(self.story_words(story)), axis=-1),
                                      axis=-1)
        question_unknown = tf.reduce_sum(count(self.question_words(question)), axis=-1)
        return tf.cast(story_unknown + question_unknown, tf.int32)

    def read(self, story: tf.Tensor, question: tf.Tensor,
             read_limit: int | None = None) -> dict[str, tf.Tensor]:
        """One tokenization of each story and question, and all the exporter takes of it:
        ``story_ids`` and ``question_ids`` (as :meth:`story_ids`, :meth:`question_ids`),
        and what the model does not take in (``int32[B]`` but ``unknown_tokens``):
        ``unknown_words`` (as :meth:`unknown_words`), ``unknown_tokens`` (``string[B]``:
        those words, distinct, story first, space-separated), ``story_sentences`` (0: an
        empty story), ``dropped_sentences`` (the earliest sentences past ``read_limit``,
        the most the model reads; None: all read) and ``question_words`` (0: an empty
        question)."""
        words, question_words = self.story_words(story), self.question_words(question)
        kept = words if self.max_story_sentences is None else (
            words[:, -self.max_story_sentences:])
        story_ids = self._lookup(kept[:, :, : self.max_words]).to_tensor(
            PAD_ID, shape=[None, None, self.max_words])
        question_ids = self._lookup(question_words[:, : self.max_words]).to_tensor(
            PAD_ID, shape=[None, self.max_words])
        every = tf.concat([words.merge_dims(1, 2), question_words], axis=1)
        unknown = tf.equal(self.word_to_id.lookup(every.flat_values), UNK_ID)
        sentences = tf.cast(words.row_lengths(), tf.int32)
        return {"story_ids": story_ids, "question_ids": question_ids,
                "unknown_words": tf.cast(tf.reduce_sum(every.with_flat_values(
                    tf.cast(unknown, tf.int32)), axis=1), tf.int32),
                "unknown_tokens": join_distinct_rows(
                    tf.ragged.boolean_mask(every, every.with_flat_values(unknown))),
                "story_sentences": sentences,
                "dropped_sentences": (tf.zeros_like(sentences) if read_limit is None
                                      else tf.maximum(sentences - read_limit, 0)),
                "question_words": tf.cast(question_words.row_lengths(), tf.int32)}

    def story_ids(self, story: tf.Tensor) -> tf.Tensor:
        """``string[B]`` stories -> ``int32[B, S, W]`` (S = most sentences in the batch)."""
        words = self.story_words(story)
        if self.max_story_sentences is not None:
            words = words[:, -self.max_story_sentences:]
        words = words[:, :, : self.max_words]
        return self._lookup(words).to_tensor(PAD_ID, shape=[None, None, self.max_words])

    def question_ids(self, question: tf.Tensor) -> tf.Tensor:
        """``string[B]`` questions -> ``int32[B, W]``."""
        words = self.question_words(question)[:, : self.max_words]
        return self._lookup(words).to_tensor(PAD_ID, shape=[None, self.max_words])

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        """Token ids (any integer dtype and shape) -> their tokens."""
        return self.id_to_word.lookup(tf.cast(ids, tf.int64))
