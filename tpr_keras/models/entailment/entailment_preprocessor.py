"""The Python entailment preprocessor: formula strings -> the character ids a model reads."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tpr_keras.data.entailment import (
    IGNORED_CHARACTERS,
    PAD_ID,
    UNK_ID,
    VOCABULARY,
    load_vocabulary,
    tokenize,
)
from tpr_keras.models.entailment.entailment_grammar import is_well_formed
from tpr_keras.models.task_models import trained_preset
from tpr_keras.models.unknown_tokens import join_distinct
from tpr_keras.presets.preset_files import PresetError


class EntailmentPreprocessor:
    """Formulas -> ``int32[B, L]`` character ids, 0-padded to the longest (L >= 1).

    The NumPy twin of the exporter's in-graph :class:`EntailmentTokenizer` (one
    specification, :mod:`tpr_keras.data.entailment`, tested to give the same ids).

    Formula syntax (that of the DeepMind logical entailment dataset the presets were
    trained on): variables ``a``-``z``; ``~`` not, its operand in parentheses
    (``~(p)``, ``~((p&q))``); the binary connectives ``&`` and, ``|`` or, ``>``
    implies, each application in its own parentheses: ``(p&q)``, ``((p>q)|~(r))``.
    Whitespace (space, tab, newline, carriage return, form feed) is ignored; any other
    character reads as ``<unk>`` (counted by :meth:`unknown_characters`): ``P``, ``->``
    and ``∧`` are not this syntax.

    Attributes:
        vocabulary: The character vocabulary it encodes with (fixed: the data's
            ``VOCABULARY``, token i = id i); the exporter's in-graph tokenizer reads it.

    Example:
    >>> preprocessor = EntailmentPreprocessor.from_preset("tpru32_entailment")
    >>> preprocessor(["(a & b)", "~(a)"]).tolist()
    [[6, 8, 3, 9, 7], [2, 6, 8, 7, 0]]
    """

    vocabulary = VOCABULARY

    @classmethod
    def from_preset(cls, preset: str | os.PathLike | Any) -> EntailmentPreprocessor:
        """The preprocessor of a trained entailment preset, after checking that its
        ``assets/vocab.txt`` is the fixed character vocabulary this package encodes.

        Raises:
            PresetError (a ValueError): an unknown or altered preset, not an entailment
                one, or one with another vocabulary.
        """
        preset = trained_preset(preset, "entailment")
        path = preset.asset_path("vocab.txt")
        if load_vocabulary(path) != VOCABULARY:
            raise PresetError(f"{path}: not the character vocabulary of "
                              "tpr_keras.data.entailment (VOCABULARY); this package "
                              "cannot encode for it.")
        return cls()

    def __call__(self, formulas: Sequence[str]) -> np.ndarray:
        """``int32[B, L]``: one id per character kept (whitespace dropped)."""
        rows = [tokenize(f) for f in formulas]
        ids = np.full((len(rows), max([1] + [len(r) for r in rows])), PAD_ID, np.int32)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = row
        return ids

    def unknown_characters(self, formula: str) -> int:
        """How many characters of ``formula`` are not in the syntax (whitespace aside)."""
        return int((tokenize(formula) == UNK_ID).sum())

    def unknown_list(self, formula: str) -> list[str]:
        """The characters of ``formula`` that are not in the syntax (whitespace aside;
        invalid text as the in-graph tokenizer reads it), in order, repeats kept."""
        known = set(VOCABULARY[2:]) | set(IGNORED_CHARACTERS)
        return [c for c in formula if c not in known]

    def report(self, premises: Sequence[str], hypotheses: Sequence[str]) -> dict[str, np.ndarray]:
        """What the model takes in of each pair, as the served model's outputs say it:
        ``unknown_characters`` (premise and hypothesis), ``unknown_tokens`` (those
        characters, distinct, premise first, space-separated), ``premise_well_formed``
        and ``hypothesis_well_formed`` (:func:`~tpr_keras.models.entailment.
        entailment_grammar.is_well_formed`; an empty formula is not)."""
        pairs = list(zip(premises, hypotheses))
        return {
            "unknown_characters": np.asarray([self.unknown_characters(p)
                                              + self.unknown_characters(h)
                                              for p, h in pairs], np.int32),
            "unknown_tokens": np.asarray([join_distinct(self.unknown_list(p)
                                                        + self.unknown_list(h))
                                          for p, h in pairs], dtype=str),
            "premise_well_formed": np.asarray([is_well_formed(p) for p in premises], bool),
            "hypothesis_well_formed": np.asarray([is_well_formed(h) for h in hypotheses],
                                                 bool)}
