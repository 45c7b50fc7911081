"""Validation questions that no training step sees: a fixed, seeded draw from each module's
training questions (:func:`hold_out`), or the files of a sample folder (:func:`load_sample_split`),
such as a fresh sample of DeepMind's generator (``experiments/math_heldout_sample.py``).

The dataset's own ``interpolate/`` files are its test set: a run that keeps the epoch of the
lowest validation error on them lets the test set choose the weights it then reports.
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tpr_keras.data.mathematics.encoding import MathSplit, encode_texts
from tpr_keras.data.mathematics.parsing import (
    MAX_ANSWER_LENGTH,
    MAX_QUESTION_LENGTH,
    parse_mathematics_file,
)
from tpr_keras.data.mathematics.vocabulary import CharVocabulary

#: :func:`hold_out` takes at most this fraction of a module's training questions.
MAX_HELD_OUT_FRACTION = 0.05
_HASH_BASE = np.uint64(0x100000001B3)


@dataclasses.dataclass(repr=False)
class HeldOut:
    """What :func:`hold_out` returns.

    Attributes:
        train: the questions left to train on.
        validation: the held-out questions, in the split's order.
        questions: module -> questions held out.
        duplicates_removed: module -> training questions also removed because their text
            equals a held-out question's (the files repeat short questions).
    """

    train: MathSplit
    validation: MathSplit
    questions: dict[str, int]
    duplicates_removed: dict[str, int]


def _question_hashes(split: MathSplit, rows_per_chunk: int = 1 << 17) -> np.ndarray:
    """``uint64[N]``: a polynomial hash of each question's ids and length (vectorised, a
    chunk of rows at a time to bound the temporaries)."""
    splits = split.question_splits
    lengths = np.diff(splits)
    hashes = np.zeros(len(split), np.uint64)
    if not len(split) or not lengths.max():
        return hashes
    powers = np.cumprod(np.full(int(lengths.max()), _HASH_BASE, np.uint64))  # wraps mod 2^64
    for first in range(0, len(split), rows_per_chunk):
        rows = slice(first, min(first + rows_per_chunk, len(split)))
        starts, counts = splits[rows], lengths[rows]
        ids = split.question_ids[starts[0]:starts[-1] + counts[-1]].astype(np.uint64)
        position = np.arange(ids.shape[0]) - np.repeat(starts - starts[0], counts)
        terms = (ids + np.uint64(1)) * powers[position]
        filled = counts > 0
        chunk = np.zeros(counts.shape[0], np.uint64)
        chunk[filled] = np.add.reduceat(terms, (starts - starts[0])[filled])
        hashes[rows] = chunk
    return hashes ^ (lengths.astype(np.uint64) << np.uint64(48))


def _question_bytes(split: MathSplit, rows: np.ndarray) -> list[bytes]:
    return [split.question(int(i)).tobytes() for i in rows]


def hold_out(split: MathSplit, per_module: int, seed: int = 0,
             max_fraction: float = MAX_HELD_OUT_FRACTION) -> HeldOut:
    """Holds ``per_module`` questions of each module out of ``split`` for validation.

    Each module's questions are drawn uniformly without replacement by a generator seeded
    with ``seed`` and the module's name, so a module's draw does not depend on which other
    modules were loaded: the same files, ``per_module`` and ``seed`` give the same questions.
    At most ``max_fraction`` of a module's questions are held out (rounded down). Every other
    question whose text equals a held-out question's is removed from ``train`` too, so that
    no validation question is trained on.

    Raises:
        ValueError: ``per_module`` is not positive, or no module has enough questions to
            hold one out.
    """
    if per_module < 1:
        raise ValueError(f"per_module must be positive, got {per_module}")
    held = np.zeros(len(split), bool)
    questions = {}
    for module, name in enumerate(split.module_names):
        rows = np.flatnonzero(split.modules == module)
        if not rows.size:
            continue
        count = min(int(per_module), int(rows.size * max_fraction))
        rng = np.random.default_rng([int(seed), zlib.crc32(name.encode("utf-8"))])
        held[rng.choice(rows, count, replace=False)] = True
        questions[name] = count
    if not held.any():
        raise ValueError(
            f"no validation question held out: every module has fewer than "
            f"{int(np.ceil(1 / max_fraction))} training questions (at most "
            f"{max_fraction:.0%} of a module's questions are held out)")
    hashes = _question_hashes(split)
    candidates = np.flatnonzero(np.isin(hashes, hashes[held]) & ~held)
    texts = set(_question_bytes(split, np.flatnonzero(held)))
    same = np.array([t in texts for t in _question_bytes(split, candidates)], bool)
    duplicate = np.zeros(len(split), bool)
    duplicate[candidates[same]] = True
    removed = np.bincount(split.modules[duplicate], minlength=len(split.module_names))
    return HeldOut(split.select(~(held | duplicate)), split.select(held), questions,
                   {name: int(removed[split.module_names.index(name)]) for name in questions})


def load_sample_split(
    folder: str | os.PathLike,
    modules: Sequence[str],
    vocab: CharVocabulary,
    module_names: Sequence[str],
    limit_per_file: int | None = None,
) -> tuple[MathSplit, dict[str, int], int]:
    """The questions of ``modules`` in a sample folder, encoded with ``vocab``.

    A module's file is ``folder/interpolate/<module>.txt`` (the layout of the official
    archive and of ``experiments/math_heldout_sample.py``), else ``folder/<module>.txt``.

    Returns:
        ``(split, questions per module, characters not in vocab)``.

    Raises:
        FileNotFoundError: a module has no file there (the message names the module).
    """
    folder = Path(folder)
    base = folder / "interpolate" if (folder / "interpolate").is_dir() else folder
    parts, counts, unknown = [], {}, 0
    for module in modules:
        path = base / f"{module}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"no validation file for module {module} in {folder} "
                                    f"(looked for {path})")
        questions, answers = parse_mathematics_file(path, MAX_QUESTION_LENGTH,
                                                    MAX_ANSWER_LENGTH, limit_per_file)
        split, n_unknown = encode_texts(questions, answers, vocab,
                                        list(module_names).index(module), module_names)
        parts.append(split)
        counts[module] = len(split)
        unknown += n_unknown
    return MathSplit.concatenate(parts, module_names), counts, unknown
