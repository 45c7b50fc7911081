"""The bAbI task model: stories and questions in, answer words with their scores out."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from keras import ops

from tpr_keras.models.babi.babi_preprocessor import BabiPreprocessor, Story
from tpr_keras.models.task_models import TaskModel, check_same_length, check_texts

#: Scored candidate answers of an exported bAbI model's ``serving_default``.
DEFAULT_TOP_K = 5


def top_k_softmax(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids int64[B, k], probabilities float32[B, k])``: the ``k`` largest logits of
    each row, best first (the lower id first on a tie, as ``tf.math.top_k``), with their
    softmax probabilities over the whole row."""
    logits = np.asarray(logits, np.float32)
    ids = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
    top = np.take_along_axis(logits, ids, axis=-1)
    peak = logits.max(axis=-1, keepdims=True)
    log_norm = peak + np.log(np.exp(logits - peak).sum(axis=-1, keepdims=True))
    return ids, np.exp(top - log_norm).astype(np.float32)


class BabiAnswerer(TaskModel):
    """A trained bAbI model (TPR-RNN or MemN2N) answering questions about stories.

    Holds the Keras model (``.backbone``) and its :class:`BabiPreprocessor`
    (``.preprocessor``, also ``.tokenizer``), built from a trained bAbI preset. It
    answers as the SavedModel that :meth:`export` writes from it (its ``serving_default``):
    the same ids, answer, scores and unknown-word counts. The model answers with a word of
    its vocabulary whatever it is asked: a non-zero ``unknown_words`` says that part of the
    request was not understood, however high the score.

    A freshly trained model, which has no preset yet, is one in memory:
    ``BabiAnswerer(model, BabiPreprocessor(vocabulary, model.max_words))``.

    Args:
        backbone: A Keras model taking ``{"story", "question"}`` ids and returning logits
            over the vocabulary (``tpr_keras.models.TPRRNN`` or ``MemN2N``).
        preprocessor: Its :class:`BabiPreprocessor`.

    Example:
    >>> answerer = BabiAnswerer.from_preset("tpr_rnn_babi_all_tasks")
    >>> out = answerer.predict(["Mary went to the kitchen. John moved to the garden."],
    ...                        ["Where is Mary?"])
    >>> out["answer"].tolist(), out["unknown_words"].tolist()
    (['kitchen'], [0])
    """

    task = "babi"
    exporter = "tpr_keras.export.babi:export_babi_answerer"
    preprocessor_class = BabiPreprocessor

    def predict(self, stories: Story | Sequence[Story], questions: str | Sequence[str],
                top_k: int = 1, batch_size: int = 64) -> dict[str, np.ndarray]:
        """Answers each question about the story beside it.

        Args:
            stories: One story or a list of them; a story is one string (sentences end
                at newlines and after ``. ? !``) or a list of sentence strings.
            questions: One question or a list of them, one per story.
            top_k: Candidate answers returned per question, best first.
            batch_size: Questions the model reads at once.

        Returns:
            The served model's outputs: ``answer`` (``str[B]``), ``scores``
            (``float32[B, top_k]``, the softmax probabilities of the ``top_k`` best
            words), ``candidates`` (``str[B, top_k]``, those words), and what the model
            did not take in (``int32[B]`` but ``unknown_tokens``): ``unknown_words`` and
            ``unknown_tokens`` (the words of story and question outside the vocabulary,
            read as ``<unk>``: how many, and which, space-separated), ``story_sentences``
            (0: an empty story), ``dropped_sentences`` (the earliest sentences the model
            did not read: past :attr:`read_limit`), ``question_words`` (0: an empty
            question) and ``trained_story_sentences`` (the longest training stories:
            a model reading more answers outside its training). An empty story or
            question is answered all the same (the served model's behaviour); the
            counts say so.

        Raises:
            ValueError: no question, mismatched list lengths, a story or question that
                is not text, or ``top_k < 1``.
        """
        if isinstance(questions, str):  # one request: its story is a string or a list
            stories, questions = [stories], [questions]
        elif isinstance(stories, str):
            stories = [stories]
        questions = check_texts("questions", questions)
        stories = list(stories)
        check_same_length(stories=stories, questions=questions)
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for i, (story, question) in enumerate(zip(stories, questions)):
            if not isinstance(story, str) and not (
                    isinstance(story, Sequence) and all(isinstance(t, str) for t in story)):
                raise ValueError(f"stories[{i}] is neither a string nor a list of strings")
        k = min(int(top_k), len(self.preprocessor.vocabulary))
        ids, scores = [], []
        for start in range(0, len(questions), batch_size):
            inputs = self.preprocessor(stories[start:start + batch_size],
                                       questions[start:start + batch_size])
            logits = ops.convert_to_numpy(self.backbone(inputs, training=False))
            top_ids, top_scores = top_k_softmax(logits, k)
            ids.append(top_ids)
            scores.append(top_scores)
        candidates = self.preprocessor.decode(np.concatenate(ids)).astype(str)
        return {"answer": candidates[:, 0], "scores": np.concatenate(scores),
                "candidates": candidates,
                **self.preprocessor.report(stories, questions, self.read_limit)}

    @property
    def read_limit(self) -> int | None:
        """The most sentences of a story the model reads (its last ones): the
        preprocessor's ``max_story_sentences``, or a MemN2N's smaller ``memory_size``
        (its memory keeps the last ``memory_size`` sentences); None: all."""
        limits = [n for n in (self.preprocessor.max_story_sentences,
                              getattr(self.backbone, "memory_size", None)) if n]
        return min(limits) if limits else None

    def export(self, export_dir: str | os.PathLike, model_name: str | None = None, *,
               version: int | None = None, top_k: int = DEFAULT_TOP_K) -> str:
        """Writes the answerer to ``<export_dir>/<model_name>/<version>/`` for TF Serving.

        The SavedModel (:mod:`tpr_keras.export.babi`: ``serving_default``,
        ``classify``, ``tokenize``) reads the backbone, and the preprocessor's vocabulary,
        ``max_words`` and ``max_story_sentences``, so it answers as :meth:`predict` does.
        Needs TensorFlow.

        Args:
            export_dir: Base folder of the export.
            model_name: The served model's name (default: :attr:`served_name`).
            version: Version number; default: one more than the largest existing one.
            top_k: Scored candidate answers the served model returns.

        Returns:
            The version folder written.

        Raises:
            ValueError: backbone and preprocessor that do not fit, or ``top_k < 1``.
            FileExistsError: ``version`` is given and already exists.
        """
        return super().export(export_dir, model_name, version=version, top_k=top_k)
