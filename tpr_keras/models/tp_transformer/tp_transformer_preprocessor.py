"""The Python Mathematics preprocessor: question strings <-> a TP-Transformer's character ids."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tpr_keras.data.mathematics.parsing import MAX_QUESTION_LENGTH
from tpr_keras.data.mathematics.templates import ModuleTemplates, templates_asset
from tpr_keras.data.mathematics.vocabulary import CharVocabulary
from tpr_keras.models.task_models import trained_preset
from tpr_keras.models.unknown_tokens import join_distinct
from tpr_keras.presets.preset_files import PresetError


class MathPreprocessor:
    """Questions -> ``int32[B, L]`` source ids; generated ids -> answer strings.

    The NumPy twin of the exporter's in-graph :class:`MathTokenizer` (one specification,
    :meth:`CharVocabulary.encode_question`): each question cut at ``max_length``
    characters, one id per character (``<unk>`` for characters outside the
    vocabulary, counted by :meth:`unknown_characters`), wrapped in ``<s> ... </s>`` and
    ``<pad>``-padded to the longest. With the templates of the modules the model was
    trained on, :meth:`module_of` names the module a question's wording belongs to, or
    ``""`` for a question outside them (the rule and its limits:
    :mod:`tpr_keras.data.mathematics.templates`).

    Args:
        vocabulary: The model's :class:`~tpr_keras.data.mathematics.CharVocabulary`.
        max_length: Characters of a question kept (the dataset's limit, 160).
        templates: The trained modules'
            :class:`~tpr_keras.data.mathematics.ModuleTemplates`, or None (unknown:
            :meth:`module_of` is not available).

    Example:
    >>> preprocessor = MathPreprocessor.from_preset("tp_transformer_math_focus")
    >>> preprocessor(["What is 2 + 3?"]).shape
    (1, 16)
    >>> preprocessor.decode([[14, 3, 0]])
    ['4']
    """

    def __init__(self, vocabulary: CharVocabulary, max_length: int = MAX_QUESTION_LENGTH,
                 templates: ModuleTemplates | None = None) -> None:
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        self.vocabulary = vocabulary
        self.max_length = int(max_length)
        self.templates = templates

    @classmethod
    def from_preset(cls, preset: str | os.PathLike | Any) -> MathPreprocessor:
        """The preprocessor of a trained math preset: its ``assets/vocab.txt`` and, where
        the preset has one, ``assets/modules.json.gz`` (its modules' templates; ``modules.json`` in a preset
        written before).

        Raises:
            PresetError (a ValueError): an unknown or altered preset, not a math one, or
                a vocabulary that differs from the model config's.
        """
        preset = trained_preset(preset, "math")
        path = preset.asset_path("vocab.txt")
        vocabulary = CharVocabulary.load(path)
        # A routed model's decoders share the default decoder's vocabulary.
        configured = preset.config.get("vocabulary",
                                       preset.config.get("default", {}).get("vocabulary"))
        if configured is not None and tuple(configured) != vocabulary.tokens:
            raise PresetError(f"{path} differs from the vocabulary of the preset's "
                              "config.json; the preset is inconsistent.")
        templates = None
        asset = templates_asset(preset.metadata.get("assets", []))
        if asset is not None:
            templates = ModuleTemplates.load(preset.asset_path(asset))
        return cls(vocabulary, templates=templates)

    def __call__(self, questions: Sequence[str]) -> np.ndarray:
        """``int32[B, L]``: ``<s>``, the question's character ids, ``</s>``, padding."""
        rows = [self.vocabulary.encode_question(q, self.max_length) for q in questions]
        ids = np.full((len(rows), max([0] + [len(r) for r in rows])),
                      CharVocabulary.PAD_ID, np.int32)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = row
        return ids

    def unknown_characters(self, question: str) -> int:
        """How many characters of the question (as cut) are not in the vocabulary."""
        return sum(c not in self.vocabulary for c in question[: self.max_length])

    def report(self, questions: Sequence[str]) -> dict[str, np.ndarray]:
        """What the model takes in of each question, as the served model's outputs say
        it: ``unknown_characters`` and ``unknown_tokens`` (among the first
        ``max_length`` characters: how many, and which, distinct, space-separated),
        ``question_characters`` (0: an empty question) and ``dropped_characters``
        (those past ``max_length``, not read)."""
        lengths = np.asarray([len(q) for q in questions], np.int32)
        return {"unknown_characters": np.asarray([self.unknown_characters(q) for q in questions],
                                                 np.int32),
                "unknown_tokens": np.asarray([join_distinct(
                    c for c in q[: self.max_length] if c not in self.vocabulary)
                    for q in questions], dtype=str),
                "question_characters": lengths,
                "dropped_characters": np.maximum(lengths - self.max_length, 0).astype(np.int32)}

    def module_of(self, question: str) -> str:
        """The trained module whose template ``question`` has (or whose expression pattern
        its template matches), or ``""`` if none.

        Raises:
            ValueError: the preprocessor has no templates.
        """
        if self.templates is None:
            raise ValueError("this preprocessor has no module templates (templates=None)")
        return self.templates.module_of(question)

    def decode(self, ids: Any) -> list[str]:
        """``int[B, L]`` generated ids -> the answers: characters before the first
        ``</s>``, specials dropped."""
        return [self.vocabulary.decode(row) for row in np.asarray(ids)]
