"""The Python bAbI preprocessor: story and question strings -> the ids a bAbI model reads."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tpr_keras.data.babi.text import normalize, split_story, tokenize
from tpr_keras.data.babi.truncation import (
    DEFAULT_MAX_STORY_SENTENCES,
    SERVED_MAX_STORY_SENTENCES,
)
from tpr_keras.data.babi.vocabulary import Vocabulary
from tpr_keras.models.task_models import trained_preset
from tpr_keras.models.unknown_tokens import join_distinct

#: A story: one string (sentences end at newlines and after ``. ? !``) or its sentences.
Story = str | Sequence[str]


def story_text(story: Story) -> str:
    """One story string: a list of sentence strings joined by newlines."""
    return story if isinstance(story, str) else "\n".join(story)


class BabiPreprocessor:
    """Stories and questions -> ``{"story": int32[B, S, W], "question": int32[B, W]}``.

    The NumPy twin of the exporters' in-graph :class:`BabiTokenizer` (the same text
    specification, :mod:`tpr_keras.data.babi.text`, and tested to give the same ids):
    lower-case; each of ``. ? ! , ; :`` a token; a story's sentences end at newlines and
    after ``. ? !``; empty sentences dropped; a story keeps its last
    ``max_story_sentences`` sentences, each sentence and question its first ``W``
    tokens; words outside the vocabulary read as ``<unk>`` and are counted
    (:meth:`unknown_words`); ``S`` is the most sentences of a story in the batch.

    Args:
        vocabulary: A :class:`~tpr_keras.data.babi.Vocabulary` (or its tokens).
        max_words: ``W``, word slots per sentence and question (the model's).
        max_story_sentences: Keep the last N sentences of a story; None keeps all.
        keep_sentence_ends: False drops ``. ? !`` once they have split the story, as
            the model's training data did (MemN2N's ``joint_paper`` recipe).
        trained_story_sentences: The longest stories the model was trained on, in
            sentences (the training loader's truncation: 70 for every task but task 3,
            whose stories were cut at 130); a model that reads more sentences than this
            answers outside its training, which the replies report. None: unknown.

    Example:
    >>> preprocessor = BabiPreprocessor.from_preset("tpr_rnn_babi_all_tasks")
    >>> ids = preprocessor(["Mary went to the kitchen."], ["Where is Mary?"])
    >>> ids["story"].shape, ids["question"].shape
    ((1, 1, 12), (1, 12))
    """

    def __init__(self, vocabulary: Vocabulary | Sequence[str], max_words: int,
                 max_story_sentences: int | None = SERVED_MAX_STORY_SENTENCES,
                 keep_sentence_ends: bool = True,
                 trained_story_sentences: int | None = DEFAULT_MAX_STORY_SENTENCES) -> None:
        if max_words < 1:
            raise ValueError(f"max_words must be >= 1, got {max_words}")
        if max_story_sentences is not None and max_story_sentences < 1:
            raise ValueError(f"max_story_sentences must be >= 1 or None, got "
                             f"{max_story_sentences}")
        self.vocabulary = (vocabulary if isinstance(vocabulary, Vocabulary)
                           else Vocabulary(vocabulary))
        self.max_words = int(max_words)
        self.max_story_sentences = (None if max_story_sentences is None
                                    else int(max_story_sentences))
        self.keep_sentence_ends = bool(keep_sentence_ends)
        self.trained_story_sentences = (None if trained_story_sentences is None
                                        else int(trained_story_sentences))

    @classmethod
    def from_preset(cls, preset: str | os.PathLike | Any) -> BabiPreprocessor:
        """The preprocessor of a trained bAbI preset (name, folder or ``TrainedPreset``):
        its ``assets/vocab.txt``, the model's ``max_words``, and the story truncation
        and sentence-end handling its export serves with (``serving_options``; a preset
        without ``keep_sentence_ends`` keeps them).

        Raises:
            PresetError (a ValueError): an unknown or altered preset, or not a bAbI one.
        """
        preset = trained_preset(preset, "babi")
        options = preset.metadata.get("serving_options", {})
        return cls(Vocabulary.load(preset.asset_path("vocab.txt")),
                   preset.config["max_words"],
                   options.get("max_story_sentences", SERVED_MAX_STORY_SENTENCES),
                   options.get("keep_sentence_ends", True),
                   options.get("trained_story_sentences", DEFAULT_MAX_STORY_SENTENCES))

    def story_words(self, story: Story) -> list[list[str]]:
        """A story's tokenized sentences, nothing cut yet."""
        return split_story(story_text(story), self.keep_sentence_ends)

    def question_words(self, question: str) -> list[str]:
        """A question's tokens, nothing cut yet."""
        return tokenize(normalize(question), self.keep_sentence_ends)

    def unknown_words(self, story: Story, question: str) -> int:
        """How many tokens of the story and the question are not in the vocabulary (all
        of them, also those past the truncation limits)."""
        words = [w for s in self.story_words(story) for w in s] + self.question_words(question)
        return sum(w not in self.vocabulary for w in words)

    def unknown_tokens(self, story: Story, question: str) -> str:
        """The distinct tokens of the story and the question (story first) that are not
        in the vocabulary, in first-appearance order, joined by spaces."""
        words = [w for s in self.story_words(story) for w in s] + self.question_words(question)
        return join_distinct(w for w in words if w not in self.vocabulary)

    def report(self, stories: Sequence[Story], questions: Sequence[str],
               read_limit: int | None) -> dict[str, np.ndarray]:
        """What the model takes in of each request, as the served model's outputs say it:
        ``unknown_words``, ``unknown_tokens``, ``story_sentences`` (0: an empty story),
        ``dropped_sentences`` (the earliest sentences past ``read_limit``, the most the
        model reads), ``question_words`` (0: an empty question) and
        ``trained_story_sentences``."""
        story_words = [self.story_words(s) for s in stories]  # each text tokenized once
        question_words = [self.question_words(q) for q in questions]
        unknown = [[w for w in [w for s in story for w in s] + question
                    if w not in self.vocabulary]
                   for story, question in zip(story_words, question_words)]
        sentences = np.asarray([len(s) for s in story_words], np.int32)
        dropped = (np.zeros_like(sentences) if read_limit is None
                   else np.maximum(sentences - read_limit, 0).astype(np.int32))
        return {
            "unknown_words": np.asarray([len(u) for u in unknown], np.int32),
            "unknown_tokens": np.asarray([join_distinct(u) for u in unknown], dtype=str),
            "story_sentences": sentences, "dropped_sentences": dropped,
            "question_words": np.asarray([len(q) for q in question_words], np.int32),
            "trained_story_sentences": np.full(len(stories), self.trained_story_sentences or 0,
                                               np.int32)}

    def _row(self, tokens: list[str]) -> np.ndarray:
        row = np.full(self.max_words, Vocabulary.PAD_ID, np.int32)
        ids = self.vocabulary.encode(tokens[: self.max_words])
        row[: len(ids)] = ids
        return row

    def __call__(self, stories: Sequence[Story], questions: Sequence[str]) -> dict[str, np.ndarray]:
        """The model inputs of parallel lists of stories and questions (0-padded).

        Returns:
            ``{"story": int32[B, S, W], "question": int32[B, W]}``.
        """
        sentences = [self.story_words(s) for s in stories]
        if self.max_story_sentences is not None:
            sentences = [s[-self.max_story_sentences:] for s in sentences]
        width = max((len(s) for s in sentences), default=0)
        story = np.zeros((len(sentences), width, self.max_words), np.int32)
        for i, story_sentences in enumerate(sentences):
            for j, tokens in enumerate(story_sentences):
                story[i, j] = self._row(tokens)
        question = np.stack([self._row(self.question_words(q)) for q in questions]) if len(
            questions) else np.zeros((0, self.max_words), np.int32)
        return {"story": story, "question": question}

    def decode(self, ids: Any) -> np.ndarray:
        """Token ids (any integer array) -> their tokens, same shape."""
        ids = np.asarray(ids)
        tokens = np.asarray(self.vocabulary.tokens, dtype=object)
        return tokens[ids.astype(np.int64)]
