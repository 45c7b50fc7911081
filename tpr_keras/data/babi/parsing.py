"""bAbI v1.2 files -> stories and samples."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from tpr_keras.data.babi.text import tokenize
from tpr_keras.data.errors import DataFormatError

_LINE_RE = re.compile(r"(\d+) (.*)\Z", re.DOTALL)
_TASK_FROM_NAME_RE = re.compile(r"qa(\d+)_")


class BabiFormatError(DataFormatError):
    """A malformed line in a bAbI file. The message starts with ``"{path}:{lineno}: "``."""


class Sample(NamedTuple):
    """One question with its story.

    Attributes:
        story: Tokenized statements before the question, oldest first (not truncated).
        question: Tokenized question.
        answer: Lower-cased answer field, one symbol.
        task: bAbI task number 1..20.
        story_id: 0-based index of the story within its file.
    """

    story: list[list[str]]
    question: list[str]
    answer: str
    task: int
    story_id: int


@dataclasses.dataclass
class Question:
    num_prior: int  # Statements of the story before the question.
    tokens: tuple[str, ...]
    answer: str


@dataclasses.dataclass
class Story:
    index: int  # 0-based story index within its file.
    statements: list[tuple[str, ...]]  # Token tuples; equal sentences share one tuple.
    questions: list[Question]


def task_from_filename(path: str | os.PathLike) -> int:
    m = _TASK_FROM_NAME_RE.match(Path(path).name)
    if not m:
        raise ValueError(
            f"{path}: cannot infer the task number from the file name "
            "(expected 'qaN_<name>_train.txt' / '_test.txt'); pass task= explicitly"
        )
    return int(m.group(1))


def parse_stories(path: str | os.PathLike, keep_sentence_ends: bool = True) -> list[Story]:
    """Parses a v1.2 bAbI file into stories (statements once, questions by position).

    ``keep_sentence_ends=False`` drops the tokens ``. ? !`` (see
    :func:`~tpr_keras.data.babi.text.tokenize`)."""
    stories: list[Story] = []
    story: Story | None = None
    prev_id = 0
    line_kinds: dict[int, bool] = {}  # Line id -> is statement, for the current story.
    cache: dict[str, tuple[str, ...]] = {}  # bAbI sentences repeat a lot.

    def tok(text: str) -> tuple[str, ...]:
        tokens = cache.get(text)
        if tokens is None:
            tokens = cache[text] = tuple(tokenize(text, keep_sentence_ends))
        return tokens

    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.rstrip("\r\n")
            m = _LINE_RE.match(line)
            if m is None:
                raise BabiFormatError(
                    path, lineno, f"expected '<id> <text>' with an integer id, got {line!r}"
                )
            line_id, text = int(m.group(1)), m.group(2)
            if line_id == 1:
                story = Story(index=len(stories), statements=[], questions=[])
                stories.append(story)
                line_kinds = {}
            elif story is None:
                raise BabiFormatError(
                    path, lineno, f"first story must start at id 1, got {line_id}"
                )
            elif line_id != prev_id + 1:
                raise BabiFormatError(
                    path,
                    lineno,
                    f"line id {line_id} does not follow {prev_id} (ids increase by 1 "
                    "inside a story; a new story starts at 1)",
                )
            prev_id = line_id

            if "\t" not in text:  # Statement.
                tokens = tok(text)
                if not tokens:
                    raise BabiFormatError(path, lineno, "empty statement")
                story.statements.append(tokens)
                line_kinds[line_id] = True
                continue

            fields = text.split("\t")
            question = tok(fields[0])
            if not question:
                raise BabiFormatError(path, lineno, "empty question")
            answer = fields[1].strip().lower()
            if not answer:
                raise BabiFormatError(
                    path, lineno, "question line without answer (empty answer field)"
                )
            if any(x.strip() for x in fields[3:]):
                raise BabiFormatError(
                    path, lineno, "unexpected extra tab-separated field after the supporting ids"
                )
            if len(fields) > 2:
                for sup in fields[2].split():
                    if not sup.isdigit():
                        raise BabiFormatError(
                            path, lineno, f"supporting fact id {sup!r} is not an integer"
                        )
                    if not line_kinds.get(int(sup), False):
                        raise BabiFormatError(
                            path,
                            lineno,
                            f"supporting fact id {sup} is not an earlier statement of this story",
                        )
            story.questions.append(Question(len(story.statements), question, answer))
            line_kinds[line_id] = False
    return stories


def _stories_to_samples(stories: Iterable[Story], task: int) -> list[Sample]:
    return [
        Sample(
            [list(t) for t in s.statements[: q.num_prior]], list(q.tokens), q.answer, task, s.index
        )
        for s in stories
        for q in s.questions
    ]


def parse_babi_file(path: str | os.PathLike, task: int | None = None) -> list[Sample]:
    """Parses a bAbI v1.2 file into one sample per question.

    Format: lines ``<id> <sentence>``, ids restart at 1 for each story; question lines
    are ``<id> <question>\\t<answer>\\t<supporting ids>``. Each question's sample holds
    all earlier statements of its story (questions are not memories).

    Args:
        path: A ``qaN_<name>_{train,test}.txt`` file.
        task: Task number; parsed from the file name (``qaN_``) if None.

    Returns:
        The samples in file order.

    Raises:
        BabiFormatError: A malformed line (message starts with ``"{path}:{lineno}: "``).
        ValueError: ``task`` is None and the file name does not start with ``qaN_``.
    """
    if task is None:
        task = task_from_filename(path)
    return _stories_to_samples(parse_stories(path), task)
