"""``load_mathematics``: the dataset folder -> selected modules -> one character
vocabulary -> encoded train, interpolate and extrapolate splits of the Mathematics Dataset."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tpr_keras.data.mathematics.encoding import MathSplit, encode_texts
from tpr_keras.data.mathematics.files import (
    TRAIN_DIFFICULTIES,
    find_mathematics_dir,
    list_modules,
    select_modules,
)
from tpr_keras.data.mathematics.parsing import (
    MAX_ANSWER_LENGTH,
    MAX_QUESTION_LENGTH,
    parse_mathematics_file,
)
from tpr_keras.data.mathematics.vocabulary import CharVocabulary


@dataclasses.dataclass(repr=False)
class MathData:
    """Everything :func:`load_mathematics` returns.

    Attributes:
        train: train-easy + train-medium + train-hard of every selected module.
        interpolate: module -> its interpolation split.
        extrapolate: extrapolation module -> its split.
        vocab: the character vocabulary (built from ``train`` unless given).
        module_names: names indexed by the ``module`` ids of every split.
        root: the dataset folder that was read.
        stats: counts per regime and module, unknown characters, limits.
    """

    train: MathSplit
    interpolate: dict[str, MathSplit]
    extrapolate: dict[str, MathSplit]
    vocab: CharVocabulary
    module_names: tuple[str, ...]
    root: str
    stats: dict[str, Any]

    def __repr__(self) -> str:
        return (
            f"MathData(train={len(self.train)}, interpolate={len(self.interpolate)} modules, "
            f"extrapolate={len(self.extrapolate)} modules, vocab={len(self.vocab)})"
        )


def load_mathematics(
    data_dir: str | os.PathLike | None = None,
    modules: str | Iterable[str] = ("numbers__place_value",),
    vocab: CharVocabulary | None = None,
    max_question_length: int | None = MAX_QUESTION_LENGTH,
    max_answer_length: int | None = MAX_ANSWER_LENGTH,
    difficulties: Sequence[str] = TRAIN_DIFFICULTIES,
    limit_per_file: int | None = None,
    download: bool = True,
) -> MathData:
    """Loads and encodes the selected modules.

    Args:
        data_dir: Where to look first (see :func:`find_mathematics_dir`).
        modules: Names or globs (see :func:`select_modules`).
        vocab: Use this vocabulary (e.g. a trained model's) instead of building one
            from the training data; unseen characters become ``<unk>`` (counted in
            ``stats["unknown_characters"]``).
        max_question_length, max_answer_length: Longer lines are a
            :class:`MathFormatError` (None: no limit).
        difficulties: Training difficulties to merge (default all three).
        limit_per_file: Read only the first N examples of every file (quick runs).
        download: Allow downloading the archive if no local copy is found.

    Returns:
        A :class:`MathData`.
    """
    for d in difficulties:
        if d not in TRAIN_DIFFICULTIES:
            raise ValueError(f"unknown difficulty {d!r}; choose from {TRAIN_DIFFICULTIES}")
    root = find_mathematics_dir(data_dir, download=download)
    available = list_modules(root)
    selected = select_modules(modules, available)
    module_names = tuple(sorted(set().union(*selected.values())))

    def read(regime, module):
        return parse_mathematics_file(
            Path(root) / regime / f"{module}.txt",
            max_question_length,
            max_answer_length,
            limit_per_file,
        )

    raw_train, raw_eval, counts = _read_modules(read, available, selected, difficulties)
    if vocab is None:
        vocab = CharVocabulary.build(
            text for _, q, a in raw_train for lines in (q, a) for text in lines
        )
    unknown: dict[str, int] = {}
    index = {m: i for i, m in enumerate(module_names)}

    def encode(regime, parts):
        return _encode_modules(regime, parts, vocab, index, module_names, unknown)

    train = MathSplit.concatenate([s for _, s in encode("train", raw_train)], module_names)
    evals = {regime: dict(encode(regime, parts)) for regime, parts in raw_eval.items()}
    stats = {
        "modules": selected,
        "counts": counts,
        "train_examples": len(train),
        "unknown_characters": unknown,
        "vocabulary_size": len(vocab),
        "max_question_length": max_question_length,
        "max_answer_length": max_answer_length,
        "limit_per_file": limit_per_file,
    }
    return MathData(
        train, evals["interpolate"], evals["extrapolate"], vocab, module_names, root, stats
    )


def _read_modules(read, available, selected, difficulties):
    """``(raw_train, raw_eval, counts)``: the selected modules' ``(module, questions,
    answers)`` of the training ``difficulties`` merged and of each test regime, and the
    questions read per regime and module. ``read(regime, module)`` parses one file."""
    raw_train = []
    counts: dict[str, dict[str, int]] = {}
    for module in selected["train"]:
        for regime in difficulties:
            if module in available[regime]:
                q, a = read(regime, module)
                raw_train.append((module, q, a))
                counts.setdefault(regime, {})[module] = len(q)
    raw_eval = {
        regime: [(m, *read(regime, m)) for m in selected[regime]]
        for regime in ("interpolate", "extrapolate")
    }
    for regime, parts in raw_eval.items():
        counts[regime] = {m: len(q) for m, q, _ in parts}
    return raw_train, raw_eval, counts


def _encode_modules(regime, parts, vocab, index, module_names, unknown):
    """``[(module, MathSplit)]`` of ``parts``; unseen characters are counted in
    ``unknown`` under ``"<regime>/<module>"``."""
    out = []
    for module, q, a in parts:
        split, n_unknown = encode_texts(q, a, vocab, index[module], module_names)
        if n_unknown:
            unknown[f"{regime}/{module}"] = unknown.get(f"{regime}/{module}", 0) + n_unknown
        out.append((module, split))
    return out
