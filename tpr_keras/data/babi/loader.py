"""``load_babi``: files -> splits -> one vocabulary -> encoded arrays."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tpr_keras.data.babi.encoding import EncodedSplit, encode_stories
from tpr_keras.data.babi.files import BABI_TASK_NAMES, find_babi_dir, task_files
from tpr_keras.data.babi.parsing import Story, parse_stories
from tpr_keras.data.babi.splits import split_point, take_questions
from tpr_keras.data.babi.truncation import resolve_limits
from tpr_keras.data.babi.vocabulary import Vocabulary

#: Questions in the official training files of each setting.
SETTING_QUESTIONS = {"10k": 10_000, "1k": 1_000}


@dataclasses.dataclass(repr=False)
class BabiData:
    """Everything :func:`load_babi` returns.

    Attributes:
        train: Training split.
        valid: Validation split (from the training file).
        test: Test split.
        vocab: Shared vocabulary of all loaded tasks and splits.
        max_words: W, longest sentence/question in tokens over all loaded splits.
        max_sentences: Longest story (statements, after truncation) over all splits.
        stats: Counts per split and task, truncation counts, settings, notes.
        data_dir: The ``en-10k`` folder the files were read from.
    """

    train: EncodedSplit
    valid: EncodedSplit
    test: EncodedSplit
    vocab: Vocabulary
    max_words: int
    max_sentences: int
    stats: dict[str, Any]
    data_dir: str

    def __repr__(self) -> str:
        return (
            f"BabiData(train={len(self.train)}, valid={len(self.valid)}, test={len(self.test)}, "
            f"vocab={len(self.vocab)}, max_words={self.max_words}, "
            f"max_sentences={self.max_sentences})"
        )


def _normalize_tasks(tasks: int | str | Iterable[int]) -> list[int]:
    if isinstance(tasks, str):
        if tasks != "all":
            raise ValueError(f"tasks must be 'all' or task numbers 1..20, got {tasks!r}")
        return list(range(1, 21))
    if isinstance(tasks, (int, np.integer)):
        tasks = [int(tasks)]
    out = sorted({int(t) for t in tasks})
    if not out or any(not 1 <= t <= 20 for t in out):
        raise ValueError(f"tasks must be numbers 1..20, got {tasks!r}")
    return out


def load_babi(
    data_dir: str | os.PathLike | None = None,
    tasks: int | str | Iterable[int] = (1,),
    setting: str = "10k",
    valid_fraction: float = 0.1,
    max_story_sentences: int | Mapping[int, int | None] | None = None,
    download: bool = True,
    vocab: Vocabulary | None = None,
    keep_sentence_ends: bool = True,
) -> BabiData:
    """Loads, splits, truncates and encodes bAbI tasks with one shared vocabulary.

    Per task, the training file gives train and valid (``split_point``: the first
    stories holding ~``1 - valid_fraction`` of the questions are train, the rest
    valid); the test file gives test. Tasks are concatenated in increasing order.

    Args:
        data_dir: Where to look first (see :func:`find_babi_dir`).
        tasks: Task numbers 1..20, one int, or ``"all"``.
        setting: ``"10k"`` (whole training file) or ``"1k"`` (its first 1,000
            questions, i.e. the official ``en`` training set).
        valid_fraction: Fraction of training-file questions for validation.
        max_story_sentences: Keep only the last N statements of each story. None:
            70, and 130 for task 3. An int applies to all tasks; a dict maps task ->
            N (None disables truncation for that task; missing tasks use defaults).
        download: Allow downloading the archive if no local copy is found.
        vocab: Use this vocabulary instead of building one (unknown tokens -> 1).
        keep_sentence_ends: False drops the tokens ``. ? !`` from statements and
            questions, as the MemN2N authors' parser does
            (:func:`~tpr_keras.data.babi.text.tokenize`).

    Returns:
        A :class:`BabiData`.
    """
    if setting not in SETTING_QUESTIONS:
        raise ValueError(f"setting must be one of {sorted(SETTING_QUESTIONS)}, got {setting!r}")
    if not 0.0 <= valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    task_list = _normalize_tasks(tasks)
    limits = resolve_limits(max_story_sentences, task_list)
    root = find_babi_dir(data_dir, download=download)
    parts, file_questions, notes = _read_tasks(root, task_list, setting, valid_fraction,
                                               keep_sentence_ends)
    sentences, answer_symbols = _sentences_and_answers(parts)
    if vocab is None:
        vocab = Vocabulary.build({t for sentence in sentences for t in sentence} | answer_symbols)
    max_words = max((len(t) for t in sentences), default=1)

    encoded: dict[str, EncodedSplit] = {}
    split_stats: dict[str, dict[str, Any]] = {}
    for name, split_parts in parts.items():
        encoded[name], split_stats[name] = encode_stories(split_parts, vocab, max_words, limits)
    max_sentences = max(e.max_story_length for e in encoded.values())
    stats: dict[str, Any] = {
        "setting": setting,
        "tasks": task_list,
        "valid_fraction": valid_fraction,
        "keep_sentence_ends": keep_sentence_ends,
        "max_story_sentences": limits,
        **{key: {n: split_stats[n][key] for n in parts} for key in _SPLIT_STATS},
        "per_task": _per_task_stats(task_list, parts, split_stats, file_questions, limits),
        "vocab_size": len(vocab),
        "max_words": max_words,
        "max_sentences": max_sentences,
        "notes": notes,
    }
    return BabiData(
        train=encoded["train"],
        valid=encoded["valid"],
        test=encoded["test"],
        vocab=vocab,
        max_words=max_words,
        max_sentences=max_sentences,
        stats=stats,
        data_dir=root,
    )


#: The statistics of each split that :func:`load_babi`'s ``stats`` records per split.
_SPLIT_STATS = ("samples", "truncated", "stories", "sentence_rows", "max_story_length",
                "max_story_length_raw")


def _read_tasks(root, task_list, setting, valid_fraction, keep_sentence_ends):
    """``(parts, file_questions, notes)``: each split's ``[(task, stories)]`` (the training
    file split into train and valid, the test file), the questions of each training file,
    and a note (also warned) per training file short of the setting's questions."""
    parts: dict[str, list[tuple[int, list[Story]]]] = {"train": [], "valid": [], "test": []}
    file_questions: dict[int, int] = {}
    notes: list[str] = []
    expected = SETTING_QUESTIONS[setting]
    for task in task_list:
        train_path, test_path = task_files(root, task)
        train_stories = parse_stories(train_path, keep_sentence_ends)
        n_file = sum(len(s.questions) for s in train_stories)
        file_questions[task] = n_file
        if setting == "1k":
            train_stories = take_questions(train_stories, expected)
        if n_file < expected:
            note = (
                f"task {task}: training file {os.path.basename(train_path)} holds {n_file} "
                f"questions, fewer than the {expected} of setting {setting!r}"
            )
            notes.append(note)
            warnings.warn(note, stacklevel=3)  # at load_babi's caller
        k = split_point([len(s.questions) for s in train_stories], valid_fraction)
        parts["train"].append((task, train_stories[:k]))
        parts["valid"].append((task, train_stories[k:]))
        parts["test"].append((task, parse_stories(test_path, keep_sentence_ends)))
    return parts, file_questions, notes


def _sentences_and_answers(parts):
    """The distinct statements and questions (token tuples) and answers of every split."""
    sentences: set[tuple[str, ...]] = set()
    answer_symbols: set[str] = set()
    for split_parts in parts.values():
        for _, stories in split_parts:
            for s in stories:
                sentences.update(s.statements)
                sentences.update(q.tokens for q in s.questions)
                answer_symbols.update(q.answer for q in s.questions)
    return sentences, answer_symbols


def _per_task_stats(task_list, parts, split_stats, file_questions, limits):
    """``stats["per_task"]``: each task's name, file size, limit and per-split counts."""
    per_task: dict[int, dict[str, Any]] = {}
    for task in task_list:

        def get(split_name: str, key: str, task: int = task) -> int:
            return split_stats[split_name]["per_task"].get(task, {}).get(key, 0)

        per_task[task] = {
            "name": BABI_TASK_NAMES[task],
            "train_file_questions": file_questions[task],
            "max_story_sentences": limits[task],
            "samples": {n: get(n, "samples") for n in parts},
            "truncated": {n: get(n, "truncated") for n in parts},
            "stories": {n: get(n, "stories") for n in parts},
            "max_story_length_raw": max(get(n, "max_story_length_raw") for n in parts),
        }
    return per_task
