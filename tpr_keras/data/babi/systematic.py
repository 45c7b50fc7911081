"""The systematic-generalisation data of TPR-RNN §7 (Figure 5), built from bAbI files.

Schlag & Schmidhuber (2018), §7 "Systematic Generalisation": the tasks whose stories use
the same four names with a name in the question (1, 6, 7, 8, 9, 11, 12, 13) are joined,
and five new names are added. For a new name and a task, 500 story/question pairs are
sampled from the task, the new name taking the place of one of the four, such that the
new name is in the question in 20 % of them. The test set holds such stories for all 40
(name, task) pairs; the training set only for a subset of the tasks per name: Alex 8/8,
Glenn 6/8, Jordan 4/8, Mike 2/8 and Logan 1/8 of the tasks.

The paper does not say how a story is made "for" a new name; here a sampled question
keeps its story (every statement before it, renumbered from 1, supporting-fact ids
mapped), and one of the four names, as a whole word wherever it occurs in the story and
question, becomes the new name: a name of the question for the 20 %, otherwise a name
that occurs in the story but not in the question. Training pairs come from the training
file, test pairs from the test file, so no test story is in training. Which tasks a name
trains on is a seeded permutation of the tasks, cut into nested prefixes (Logan's task
is among Mike's, Mike's among Jordan's, ...). Everything depends only on ``seed``.

Output layout (``build``; the command is ``python -m tools.analysis.systematic_data``)::

    OUT/en-10k/qaN_<name>_train.txt   the task's training file with its generated
                                      training stories inserted at seeded positions
    OUT/en-10k/qaN_<name>_test.txt    the task's test file, unchanged
    OUT/systematic/<name>/qaN_<name>_test.txt   500 generated test pairs per name and task
    OUT/manifest.json                 seed, tasks per name, counts

so ``train.babi --task 1,6,7,8,9,11,12,13 --data_dir OUT`` trains on it and each
``systematic/<name>`` folder is one test set per (name, task) pair.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

TASKS = (1, 6, 7, 8, 9, 11, 12, 13)
OLD_NAMES = ("Mary", "John", "Sandra", "Daniel")
#: New name -> number of the tasks whose stories it is trained on (§7).
NEW_NAMES = {"Alex": 8, "Glenn": 6, "Jordan": 4, "Mike": 2, "Logan": 1}
PAIRS = 500
IN_QUESTION = 0.2

_LINE_RE = re.compile(r"(\d+) (.*)\Z")


class Line(NamedTuple):
    """One line of a bAbI story: a statement, or a question with answer and support."""

    text: str
    answer: str | None = None  # None for statements
    support: tuple[int, ...] = ()  # ids of supporting statements (questions)


class Question(NamedTuple):
    """A question with the statements before it, numbered from 1 (``support`` re-mapped)."""

    statements: tuple[str, ...]
    question: Line


def read_questions(path: str | os.PathLike) -> list[Question]:
    """Every question of a bAbI file with its story's statements before it.

    Raises:
        ValueError: a line that is not ``<id> <text>`` (the message names file and line).
    """
    questions: list[Question] = []
    statements: list[str] = []
    new_id: dict[int, int] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, start=1):
            m = _LINE_RE.match(raw.rstrip("\r\n"))
            if m is None:
                raise ValueError(f"{path}:{lineno}: expected '<id> <text>', got {raw!r}")
            line_id, text = int(m.group(1)), m.group(2)
            if line_id == 1:
                statements, new_id = [], {}
            if "\t" not in text:
                statements.append(text)
                new_id[line_id] = len(statements)
                continue
            fields = text.split("\t")
            support = tuple(new_id[int(s)] for s in fields[2].split()) if len(fields) > 2 else ()
            questions.append(Question(tuple(statements), Line(fields[0], fields[1], support)))
    return questions


def _names_in(text: str) -> set[str]:
    return {name for name in OLD_NAMES if re.search(rf"\b{name}\b", text)}


def rename(item: Question, old: str, new: str) -> Question:
    """``item`` with every whole-word ``old`` replaced by ``new``."""
    pattern = re.compile(rf"\b{old}\b")
    question = item.question
    return Question(
        tuple(pattern.sub(new, s) for s in item.statements),
        question._replace(text=pattern.sub(new, question.text)),
    )


def sample_pairs(questions: Sequence[Question], new_name: str, count: int,
                 rng: np.random.Generator, in_question: float = IN_QUESTION) -> list[Question]:
    """``count`` questions renamed so that ``new_name`` replaces one of the four names.

    ``round(in_question * count)`` of them have the new name in the question; the rest
    have it in the story only. Questions are drawn without replacement while possible.

    Raises:
        ValueError: the file has too few questions of either kind.
    """
    asking, story_only = [], []
    for i, item in enumerate(questions):
        in_q = _names_in(item.question.text)
        in_story = set().union(*map(_names_in, item.statements)) if item.statements else set()
        if in_q:
            asking.append((i, sorted(in_q)))
        if in_story - in_q:
            story_only.append((i, sorted(in_story - in_q)))
    wanted = int(round(in_question * count))
    out = []
    for pool, n in ((asking, wanted), (story_only, count - wanted)):
        if n and not pool:
            raise ValueError(f"no question fits {new_name!r} ({len(questions)} questions)")
        picks = rng.choice(len(pool), size=n, replace=n > len(pool))
        for p in picks:
            index, names = pool[p]
            old = names[rng.integers(len(names))]
            out.append(rename(questions[index], old, new_name))
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def story_lines(item: Question) -> list[str]:
    """The bAbI lines of one generated story: statements 1..n, then the question."""
    lines = [f"{i} {s}" for i, s in enumerate(item.statements, start=1)]
    q = item.question
    lines.append(f"{len(item.statements) + 1} {q.text}\t{q.answer}\t"
                 + " ".join(map(str, q.support)))
    return lines


def _stories(path: str | os.PathLike) -> list[list[str]]:
    """A bAbI file's lines grouped by story."""
    stories: list[list[str]] = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\r\n")
            if line.split(" ", 1)[0] == "1":
                stories.append([])
            stories[-1].append(line)
    return stories


def training_tasks(seed: int, tasks: Sequence[int] = TASKS,
                   new_names: dict[str, int] | None = None) -> dict[str, list[int]]:
    """New name -> the tasks it is trained on: nested prefixes of a seeded permutation."""
    new_names = NEW_NAMES if new_names is None else new_names
    order = [int(t) for t in np.random.default_rng(seed).permutation(list(tasks))]
    return {name: sorted(order[:count]) for name, count in new_names.items()}


def build(babi_dir: str | os.PathLike, out_dir: str | os.PathLike, seed: int = 0,
          tasks: Sequence[int] = TASKS, pairs: int = PAIRS,
          new_names: dict[str, int] | None = None) -> dict:
    """Writes the §7 data set (module docstring) to ``out_dir``; returns the manifest.

    Args:
        babi_dir: an ``en-10k`` folder (``qaN_*_train.txt`` / ``_test.txt``).
        out_dir: created if needed; its ``en-10k`` and ``systematic`` folders are rebuilt.
        seed: the only source of randomness.
        tasks: the joined tasks (default the paper's eight).
        pairs: generated story/question pairs per (name, task) and split.
        new_names: new name -> number of tasks it trains on (default the paper's).
    """
    from tpr_keras.data.babi import task_files  # the file naming of the main loader

    new_names = NEW_NAMES if new_names is None else new_names
    if any(count > len(tasks) for count in new_names.values()):
        raise ValueError(f"a name cannot train on more than the {len(tasks)} tasks")
    out = Path(out_dir)
    for sub in ("en-10k", "systematic"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "en-10k").mkdir(parents=True)
    trained_on = training_tasks(seed, tasks, new_names)
    rng = np.random.default_rng(seed)
    counts: dict[str, dict[str, int]] = {}
    for task in tasks:
        train_path, test_path = task_files(babi_dir, task)
        train_q, test_q = read_questions(train_path), read_questions(test_path)
        generated: list[list[str]] = []
        for name in new_names:
            if task in trained_on[name]:
                generated += [story_lines(q) for q in sample_pairs(train_q, name, pairs, rng)]
            folder = out / "systematic" / name
            folder.mkdir(parents=True, exist_ok=True)
            lines = [ln for q in sample_pairs(test_q, name, pairs, rng) for ln in story_lines(q)]
            (folder / Path(test_path).name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        # Generated stories at seeded positions among the originals, so that the 90/10
        # train/valid split at story boundaries takes its share of both.
        stories = _stories(train_path)
        slots = np.sort(rng.integers(0, len(stories) + 1, size=len(generated)))
        merged, g = [], 0
        for i, story in enumerate(stories + [None]):
            while g < len(generated) and slots[g] == i:
                merged.append(generated[g])
                g += 1
            if story is not None:
                merged.append(story)
        (out / "en-10k" / Path(train_path).name).write_text(
            "\n".join(ln for story in merged for ln in story) + "\n", encoding="utf-8")
        shutil.copyfile(test_path, out / "en-10k" / Path(test_path).name)
        counts[str(task)] = {"original_train_questions": len(train_q),
                             "generated_train_questions": len(generated),
                             "generated_test_questions_per_name": pairs}
    manifest = {"seed": seed, "tasks": list(tasks), "pairs": pairs,
                "in_question": IN_QUESTION, "trained_on": trained_on, "counts": counts,
                "source": str(babi_dir)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest
