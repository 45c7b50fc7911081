"""Tiny bAbI files for the tests of tpr_keras.data.babi: stories written under ``tmp_path``
in the en-10k layout, per-sample keys to compare splits and batches, and where the real
data lies (``../shared/data/babi``; the ``real_data`` mark skips a test when it is missing).

Used by ``tests/data/test_babi*.py``.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

from tpr_keras.data import babi
from tpr_keras.data.babi import EncodedSplit, Sample, parse_babi_file

REAL_BABI = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "babi"
real_data = pytest.mark.skipif(
    not (REAL_BABI / "en-10k").is_dir(), reason=f"real bAbI data not found at {REAL_BABI}"
)

NAMES = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "hallway", "garden", "office", "kitchen")


def story_lines(question_positions: list[int], seed: int = 0) -> list[str]:
    """One story: statements, with a question after ``p`` statements for each p."""
    lines: list[str] = []
    lid = stmt = last_stmt_id = 0
    for qi, pos in enumerate(sorted(question_positions)):
        while stmt < pos:
            lid += 1
            stmt += 1
            who = NAMES[(stmt + seed) % len(NAMES)]
            lines.append(f"{lid} {who} went to the {PLACES[(stmt * 3 + seed) % len(PLACES)]}.")
            last_stmt_id = lid
        lid += 1
        who = NAMES[(qi + seed) % len(NAMES)]
        support = f"\t{last_stmt_id}" if last_stmt_id else "\t"
        lines.append(f"{lid} Where is {who}? \t{PLACES[(qi + seed) % len(PLACES)]}{support}")
    return lines


def write_file(path: Path, stories: list[list[int]], seed: int = 0) -> Path:
    lines = [line for i, s in enumerate(stories) for line in story_lines(s, seed + i)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_babi_dir(
    root: Path,
    train: dict[int, list[list[int]]],
    test: dict[int, list[list[int]]] | None = None,
) -> Path:
    """An ``en-10k``-like folder: ``qaN_<name>_{train,test}.txt`` per task."""
    root.mkdir(parents=True, exist_ok=True)
    for task, stories in train.items():
        name = babi.BABI_TASK_NAMES[task]
        write_file(root / f"qa{task}_{name}_train.txt", stories, seed=task)
        test_stories = (test or {}).get(task, [[2, 4], [1, 3]])
        write_file(root / f"qa{task}_{name}_test.txt", test_stories, seed=100 + task)
    return root


def sample_keys(split: EncodedSplit) -> collections.Counter:
    """Multiset of (story rows, question, answer, task) per sample, for identity checks."""
    keys = collections.Counter()
    for i in range(len(split)):
        key = (
            split.story(i).tobytes(),
            split.questions[i].tobytes(),
            int(split.answers[i]),
            int(split.tasks[i]),
        )
        keys[key] += 1
    return keys


def batch_keys(features: dict, labels: dict) -> list:
    """Per-sample keys of one batch (same format as sample_keys)."""
    story, question = features["story"].numpy(), features["question"].numpy()
    answer, task = labels["answer"].numpy(), labels["task"].numpy()
    keys = []
    for b in range(story.shape[0]):
        rows = story[b]
        n = int(np.sum(np.any(rows != 0, axis=1)))
        keys.append((rows[:n].tobytes(), question[b].tobytes(), int(answer[b]), int(task[b])))
    return keys


SIMPLE = (
    "1 Mary moved to the bathroom.\n"
    "2 John went to the hallway.\n"
    "3 Where is Mary? \tbathroom\t1\n"
    "4 Daniel went back to the hallway.\n"
    "5 Where is Daniel? \thallway\t4\n"
    "1 Sandra picked up the apple; then she took the football!\n"
    "2 Sandra went to the garden.\n"
    "3 What is Sandra carrying? \tApple,Football\t1\n"
)


def parse_babi_file_from_text(tmp_path: Path, text: str) -> list[Sample]:
    path = tmp_path / "qa1_y_train.txt"
    path.write_text(text, encoding="utf-8")
    return parse_babi_file(path)
