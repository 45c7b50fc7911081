"""Token ids in compact storage: every statement once, stories as windows."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tpr_keras.data.babi.parsing import Question, Sample, Story
from tpr_keras.data.babi.truncation import resolve_limits
from tpr_keras.data.babi.vocabulary import Vocabulary


@dataclasses.dataclass(repr=False)
class EncodedSplit:
    """Compact id-encoded split: stories are windows into one sentence array.

    Sample ``i``'s story is ``sentences[story_offsets[i] : story_offsets[i] +
    story_lengths[i]]`` (oldest first, already truncated). Samples of the same story
    share rows. Padding id is 0 everywhere.

    Attributes:
        sentences: ``int32[total_sentences, W]`` statement token ids, 0-padded.
        story_offsets: ``int64[N]`` first sentence row of each sample's story.
        story_lengths: ``int32[N]`` number of statements of each sample's story.
        questions: ``int32[N, W]`` question token ids, 0-padded.
        answers: ``int32[N]`` answer symbol ids (same vocabulary).
        tasks: ``int32[N]`` task numbers 1..20.
        story_ids: ``int32[N]`` 0-based story index within its source file.
    """

    sentences: np.ndarray
    story_offsets: np.ndarray
    story_lengths: np.ndarray
    questions: np.ndarray
    answers: np.ndarray
    tasks: np.ndarray
    story_ids: np.ndarray

    def __post_init__(self) -> None:
        self.sentences = np.asarray(self.sentences, dtype=np.int32)
        self.story_offsets = np.asarray(self.story_offsets, dtype=np.int64)
        self.story_lengths = np.asarray(self.story_lengths, dtype=np.int32)
        self.questions = np.asarray(self.questions, dtype=np.int32)
        self.answers = np.asarray(self.answers, dtype=np.int32)
        self.tasks = np.asarray(self.tasks, dtype=np.int32)
        self.story_ids = np.asarray(self.story_ids, dtype=np.int32)
        n = self.answers.shape[0]
        if self.sentences.ndim != 2 or self.questions.ndim != 2:
            raise ValueError("sentences and questions must be 2-D")
        if self.questions.shape != (n, self.sentences.shape[1]):
            raise ValueError(
                f"questions shape {self.questions.shape} != (N={n}, W={self.sentences.shape[1]})"
            )
        for name in ("story_offsets", "story_lengths", "tasks", "story_ids"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},)")
        if n and (
            self.story_offsets.min() < 0
            or self.story_lengths.min() < 0
            or (self.story_offsets + self.story_lengths).max() > self.sentences.shape[0]
        ):
            raise ValueError("story windows out of range of the sentence array")

    def __len__(self) -> int:
        return int(self.answers.shape[0])

    def __repr__(self) -> str:
        return (
            f"EncodedSplit(samples={len(self)}, sentences={self.sentences.shape[0]}, "
            f"W={self.max_words}, max_story_length={self.max_story_length})"
        )

    @property
    def max_words(self) -> int:
        """W: token slots per sentence/question."""
        return int(self.sentences.shape[1])

    @property
    def max_story_length(self) -> int:
        """Longest story (statements) in this split; 0 if empty."""
        return int(self.story_lengths.max()) if len(self) else 0

    def story(self, i: int) -> np.ndarray:
        """``int32[story_lengths[i], W]``: the statements of sample ``i``."""
        o = int(self.story_offsets[i])
        return self.sentences[o : o + int(self.story_lengths[i])]

    @classmethod
    def empty(cls, max_words: int) -> EncodedSplit:
        """An empty split with ``W = max_words``."""
        z = np.zeros((0,), np.int32)
        w = np.zeros((0, max_words), np.int32)
        return cls(w, z.astype(np.int64), z, w.copy(), z, z, z)


def _pad_rows(rows: Sequence[Sequence[int]], width: int) -> np.ndarray:
    """Stacks id lists into a 0-padded ``int32[len(rows), width]`` array (vectorised)."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    out = np.zeros((len(rows), width), dtype=np.int32)
    if len(rows) == 0:
        return out
    if lengths.max() > width:
        raise ValueError(f"a sentence has {int(lengths.max())} tokens, more than W={width}")
    flat = np.fromiter((t for r in rows for t in r), dtype=np.int32, count=int(lengths.sum()))
    out[np.arange(width)[None, :] < lengths[:, None]] = flat
    return out


def encode_stories(
    parts: Sequence[tuple[int, Sequence[Story]]],
    vocab: Vocabulary,
    max_words: int,
    limits: Mapping[int, int | None],
) -> tuple[EncodedSplit, dict[str, Any]]:
    """Encodes stories of several tasks into one split; returns it and its stats."""
    unique_rows: list[list[int]] = []  # Encoded distinct sentences/questions.
    row_of: dict[tuple[str, ...], int] = {}
    sentence_index: list[int] = []  # Sentence row -> unique row.
    question_index: list[int] = []

    def row(tokens: tuple[str, ...]) -> int:
        r = row_of.get(tokens)
        if r is None:
            r = row_of[tokens] = len(unique_rows)
            unique_rows.append(vocab.encode(tokens))
        return r

    offsets: list[int] = []
    lengths: list[int] = []
    answers: list[int] = []
    tasks: list[int] = []
    story_ids: list[int] = []
    per_task: dict[int, dict[str, int]] = {}
    for task, stories in parts:
        limit = limits.get(task)
        st = per_task.setdefault(
            task, {"samples": 0, "stories": 0, "truncated": 0, "max_story_length_raw": 0}
        )
        for story in stories:
            base = len(sentence_index)
            sentence_index.extend(row(s) for s in story.statements)
            st["stories"] += 1
            for q in story.questions:
                n = q.num_prior
                length = n if limit is None else min(n, limit)
                offsets.append(base + n - length)
                lengths.append(length)
                question_index.append(row(q.tokens))
                answers.append(vocab.token_to_id(q.answer))
                tasks.append(task)
                story_ids.append(story.index)
                st["samples"] += 1
                st["truncated"] += int(length < n)
                st["max_story_length_raw"] = max(st["max_story_length_raw"], n)
    table = _pad_rows(unique_rows, max_words)
    split = EncodedSplit(
        sentences=table[np.asarray(sentence_index, np.int64)],
        story_offsets=np.asarray(offsets, np.int64),
        story_lengths=np.asarray(lengths, np.int32),
        questions=table[np.asarray(question_index, np.int64)],
        answers=np.asarray(answers, np.int32),
        tasks=np.asarray(tasks, np.int32),
        story_ids=np.asarray(story_ids, np.int32),
    )
    stats = {
        "samples": len(split),
        "stories": sum(v["stories"] for v in per_task.values()),
        "truncated": sum(v["truncated"] for v in per_task.values()),
        "sentence_rows": int(split.sentences.shape[0]),
        "max_story_length": split.max_story_length,
        "max_story_length_raw": max(
            (v["max_story_length_raw"] for v in per_task.values()), default=0
        ),
        "per_task": per_task,
    }
    return split, stats


def encode_samples(
    samples: Sequence[Sample],
    vocab: Vocabulary,
    max_words: int | None = None,
    max_story_sentences: int | Mapping[int, int | None] | None = None,
) -> EncodedSplit:
    """Encodes arbitrary samples (each story stored separately; for small inputs).

    :func:`load_babi` uses a more compact path that shares rows within a story.

    Args:
        samples: Samples, e.g. from :func:`parse_babi_file` or built by hand.
        vocab: Vocabulary (unknown tokens become 1).
        max_words: W; defaults to the longest sentence/question of ``samples``.
        max_story_sentences: Truncation, as in :func:`load_babi`.

    Returns:
        The encoded split.

    Raises:
        ValueError: A sentence is longer than ``max_words``.
    """
    limits = resolve_limits(max_story_sentences, sorted({s.task for s in samples}))
    if max_words is None:
        max_words = max(
            (len(t) for s in samples for t in (*s.story, s.question)), default=1
        )
    parts = [
        (
            s.task,
            [
                Story(
                    s.story_id,
                    [tuple(t) for t in s.story],
                    [Question(len(s.story), tuple(s.question), s.answer)],
                )
            ],
        )
        for s in samples
    ]
    split, _ = encode_stories(parts, vocab, max_words, limits)
    return split
