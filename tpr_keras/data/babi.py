"""bAbI question answering tasks (v1.2): parsing, vocabulary, splits and tf.data input.

Conventions (those of the TPR-RNN authors' published code):

* Tokens: lower-cased words, with each of ``. ? ! , ; :`` as a token of its own
  (:func:`tokenize`). Answers are *not* tokenized: the lower-cased answer field is a
  single symbol (task 8 ``apple,football`` and task 19 ``n,w`` stay one symbol).
* Each question becomes one sample whose story holds all earlier *statements* of its
  story; question lines are never memories.
* Splits follow ``en-valid-10k``: the training file is split 90/10 into train and
  valid at a story boundary (:func:`split_point`); the test file is the test split.
  Setting ``"1k"`` first keeps only the first 1,000 questions of the training file
  (that prefix is the official ``en`` 1k training set), then splits the same way.
* Stories are truncated to their last ``N`` statements: 70 by default, 130 for
  task 3 (:data:`DEFAULT_MAX_STORY_SENTENCES`).
* One vocabulary over story words, question words and answer symbols of every
  loaded split of every loaded task: id 0 ``<pad>``, id 1 ``<unk>``, then all other
  tokens in sorted order.

Storage (:class:`EncodedSplit`) keeps every story's statements once, in one
``int32[total_sentences, W]`` array; a sample is a window
``sentences[offset : offset + length]`` of its story (the last ``length`` statements
before the question), so samples of one story share rows. Stories are padded only
per batch, inside the ``tf.data`` pipeline (:func:`make_dataset`).

Data files: ``find_babi_dir`` looks in ``data_dir``, then ``$TPR_KERAS_BABI_DIR``,
then the Keras cache, then downloads the official archive (checksum-verified).

A training file that holds fewer questions than its setting expects (10,000 for
``"10k"``, e.g. a copy of task 3 cut to the first 1,000 official questions) is still
loaded and split the same way; :func:`load_babi` warns and records it in
``stats["notes"]``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tpr_keras.data.download import DataFormatError
from tpr_keras.data.sources import DataSource, find_data_dir
from tpr_keras.data.vocabulary import TokenTable

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

__all__ = [
    "BABI_ARCHIVE_NAME",
    "BABI_ARCHIVE_SHA256",
    "BABI_DIR_ENV",
    "BABI_SOURCE",
    "BABI_TASK_NAMES",
    "BABI_URLS",
    "BabiData",
    "BabiFormatError",
    "DEFAULT_MAX_STORY_SENTENCES",
    "EncodedSplit",
    "Sample",
    "Vocabulary",
    "encode_samples",
    "find_babi_dir",
    "load_babi",
    "make_dataset",
    "parse_babi_file",
    "split_point",
    "split_train_valid",
    "task_files",
    "tokenize",
]

# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------

#: Environment variable naming a folder with the bAbI files (same rules as data_dir).
BABI_DIR_ENV = "TPR_KERAS_BABI_DIR"

#: The Keras examples' HTTPS mirror first, then the official archive over HTTPS and, last,
#: over plain HTTP (every copy is checked against :data:`BABI_ARCHIVE_SHA256`).
BABI_URLS = (
    "https://s3.amazonaws.com/text-datasets/babi_tasks_1-20_v1-2.tar.gz",
    "https://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz",
    "http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz",
)
BABI_ARCHIVE_NAME = "tasks_1-20_v1-2.tar.gz"
#: Names under which other tools (the Keras bAbI examples) cache the same archive.
_BABI_ALT_ARCHIVE_NAMES = ("babi-tasks-v1-2.tar.gz", "babi_tasks_1-20_v1-2.tar.gz")
_BABI_ARCHIVE_TOP = "tasks_1-20_v1-2"

#: Accepted SHA-256 digests of the archive. The two URLs serve different tarballs of
#: v1.2 (the mirror is an older, smaller packing), so each has its own digest.
#: * 0364ebde...: ``http://www.thespermwhale.com/.../tasks_1-20_v1-2.tar.gz``,
#:   15,719,851 bytes. Published by HuggingFace ``datasets`` in
#:   ``datasets/babi_qa/dataset_infos.json`` ("download_checksums" of every config).
#: * 84f5296a...: ``https://s3.amazonaws.com/text-datasets/babi_tasks_1-20_v1-2.tar.gz``.
#:   Only found in a third-party project's dataset manifest (not a dataset registry);
#:   if it is wrong the mirror download fails closed with a ChecksumError.
BABI_ARCHIVE_SHA256 = (
    "0364ebde659f14d11bc21744516c5ec49d3d06cb692733f66680771244998898",
    "84f5296ab9a1ad0dc9464e08c491d65cd08830fca3acae9ab86f75e0fb81573c",
)

#: Where bAbI may be and where to download it (see :func:`find_babi_dir`).
BABI_SOURCE = DataSource(
    name="babi",
    label="bAbI data",
    env_var=BABI_DIR_ENV,
    layouts=("", "en-10k", f"{_BABI_ARCHIVE_TOP}/en-10k"),
    markers=("qa*_train.txt",),
    looking_for="qa*_train.txt files",
    instructions=(
        "Pass --data_dir=/path/containing/en-10k (or set "
        "{env_var}=/path/containing/en-10k), or fetch {url} by hand "
        "and extract it into {cache} (giving {extracted})."
    ),
    urls=BABI_URLS,
    archive_name=BABI_ARCHIVE_NAME,
    sha256=BABI_ARCHIVE_SHA256,
    archive_top=_BABI_ARCHIVE_TOP,
    alt_archive_names=_BABI_ALT_ARCHIVE_NAMES,
)

BABI_TASK_NAMES: dict[int, str] = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    4: "two-arg-relations",
    5: "three-arg-relations",
    6: "yes-no-questions",
    7: "counting",
    8: "lists-sets",
    9: "simple-negation",
    10: "indefinite-knowledge",
    11: "basic-coreference",
    12: "conjunction",
    13: "compound-coreference",
    14: "time-reasoning",
    15: "basic-deduction",
    16: "basic-induction",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
    20: "agents-motivations",
}

#: Default story truncation (last N statements): 70, and 130 for task 3.
DEFAULT_MAX_STORY_SENTENCES = 70
_DEFAULT_PER_TASK_MAX_STORY_SENTENCES = {3: 130}

#: Questions in the official training files of each setting.
_SETTING_QUESTIONS = {"10k": 10_000, "1k": 1_000}

_PUNCT_CHARS = ".?!,;:"
# Same result as re.sub(r"([.?!,;:])", r" \1 ", text), in one C-level pass.
_PUNCT_TABLE = str.maketrans({c: f" {c} " for c in _PUNCT_CHARS})
_LINE_RE = re.compile(r"(\d+) (.*)\Z", re.DOTALL)
_TASK_FROM_NAME_RE = re.compile(r"qa(\d+)_")


# --------------------------------------------------------------------------------------
# Tokenizer and parser
# --------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Splits a bAbI sentence or question into tokens.

    Lower-cases, puts spaces around each of ``. ? ! , ; :`` and splits on whitespace.
    In-graph equivalent: ``tf.strings.split(tf.strings.regex_replace(
    tf.strings.lower(x), r"([.?!,;:])", r" \\1 "))``.

    Args:
        text: Raw sentence text (without the leading line number).

    Returns:
        The tokens, e.g. ``["where", "is", "mary", "?"]``.
    """
    return text.lower().translate(_PUNCT_TABLE).split()


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
class _Question:
    num_prior: int  # Statements of the story before the question.
    tokens: tuple[str, ...]
    answer: str


@dataclasses.dataclass
class _Story:
    index: int  # 0-based story index within its file.
    statements: list[tuple[str, ...]]  # Token tuples; equal sentences share one tuple.
    questions: list[_Question]


def _task_from_filename(path: str | os.PathLike) -> int:
    m = _TASK_FROM_NAME_RE.match(Path(path).name)
    if not m:
        raise ValueError(
            f"{path}: cannot infer the task number from the file name "
            "(expected 'qaN_<name>_train.txt' / '_test.txt'); pass task= explicitly"
        )
    return int(m.group(1))


def _parse_stories(path: str | os.PathLike) -> list[_Story]:
    """Parses a v1.2 bAbI file into stories (statements once, questions by position)."""
    stories: list[_Story] = []
    story: _Story | None = None
    prev_id = 0
    line_kinds: dict[int, bool] = {}  # Line id -> is statement, for the current story.
    cache: dict[str, tuple[str, ...]] = {}  # bAbI sentences repeat a lot.

    def tok(text: str) -> tuple[str, ...]:
        tokens = cache.get(text)
        if tokens is None:
            tokens = cache[text] = tuple(tokenize(text))
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
                story = _Story(index=len(stories), statements=[], questions=[])
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
            story.questions.append(_Question(len(story.statements), question, answer))
            line_kinds[line_id] = False
    return stories


def _stories_to_samples(stories: Iterable[_Story], task: int) -> list[Sample]:
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
        task = _task_from_filename(path)
    return _stories_to_samples(_parse_stories(path), task)


# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------


class Vocabulary(TokenTable):
    """Token <-> id mapping: 0 ``<pad>``, 1 ``<unk>``, then the other tokens sorted.

    Args:
        tokens: All tokens in id order, starting with ``<pad>`` and ``<unk>`` (as
            written by :meth:`save`). Use :meth:`build` to make one from data.
    """

    PAD = "<pad>"
    UNK = "<unk>"
    SPECIALS = (PAD, UNK)
    PAD_ID = 0
    UNK_ID = 1

    def _check_token(self, token: str) -> None:
        if not token or "\n" in token or "\r" in token:
            raise ValueError(f"invalid vocabulary token {token!r}")

    @classmethod
    def build(cls, tokens: Iterable[str]) -> Vocabulary:
        """Builds a vocabulary from tokens: specials first, then sorted unique tokens.

        Args:
            tokens: Any iterable of tokens (duplicates are fine).

        Returns:
            The vocabulary.
        """
        words = sorted(set(tokens) - {cls.PAD, cls.UNK})
        return cls((cls.PAD, cls.UNK, *words))

    @classmethod
    def from_samples(cls, samples: Iterable[Sample]) -> Vocabulary:
        """Builds a vocabulary from story words, question words and answer symbols.

        Args:
            samples: Parsed samples.

        Returns:
            The vocabulary.
        """

        def gen() -> Iterable[str]:
            for s in samples:
                for sentence in s.story:
                    yield from sentence
                yield from s.question
                yield s.answer

        return cls.build(gen())

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)})"

    def token_to_id(self, token: str) -> int:
        """Returns the id of ``token``, or 1 (``<unk>``) if it is unknown."""
        return self._ids.get(token, self.UNK_ID)

    def id_to_token(self, index: int) -> str:
        """Returns the token of ``index``.

        Raises:
            IndexError: ``index`` is out of range.
        """
        if not 0 <= index < len(self._tokens):
            raise IndexError(f"token id {index} out of range [0, {len(self._tokens)})")
        return self._tokens[index]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Maps tokens to ids; unknown tokens map to 1 (``<unk>``)."""
        ids = self._ids
        return [ids.get(t, self.UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int], skip_pad: bool = True) -> list[str]:
        """Maps ids back to tokens, dropping ``<pad>`` unless ``skip_pad`` is False."""
        return [self.id_to_token(int(i)) for i in ids if not (skip_pad and int(i) == self.PAD_ID)]

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabulary:
        """Reads a vocabulary written by :meth:`save` (the final newline may be missing)."""
        lines = cls._read_text(path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls(lines)


# --------------------------------------------------------------------------------------
# Splits
# --------------------------------------------------------------------------------------


def split_point(question_counts: Sequence[int], valid_fraction: float) -> int:
    """Number of leading stories that go to train in the 90/10 train/valid split.

    Stories stay in file order. The split is at the story boundary whose cumulative
    question count is nearest to ``(1 - valid_fraction) * total`` (ties: the earlier
    boundary). If ``valid_fraction > 0`` and there are at least two stories, both
    parts get at least one story. With ``valid_fraction == 0`` (or a single story)
    everything goes to train.

    Args:
        question_counts: Questions per story, in file order.
        valid_fraction: Fraction of questions meant for validation, in [0, 1).

    Returns:
        ``k``: stories ``[:k]`` are train, ``[k:]`` are valid.
    """
    if not 0.0 <= valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    n = len(question_counts)
    if valid_fraction == 0.0 or n < 2:
        return n
    cum = np.cumsum(np.asarray(question_counts, dtype=np.int64))
    target = (1.0 - valid_fraction) * float(cum[-1])
    candidates = np.arange(1, n)  # Boundaries strictly inside.
    dist = np.abs(cum[candidates - 1] - target)
    return int(candidates[int(np.argmin(dist))])  # argmin takes the first of ties.


def split_train_valid(
    samples: Sequence[Sample], valid_fraction: float = 0.1
) -> tuple[list[Sample], list[Sample]]:
    """Splits samples of one training file into train/valid at a story boundary.

    Samples must be in file order (as from :func:`parse_babi_file` of one file);
    stories are identified by ``(task, story_id)`` runs. See :func:`split_point`.

    Args:
        samples: Samples in file order.
        valid_fraction: Fraction of questions for validation.

    Returns:
        ``(train, valid)``.
    """
    counts: list[int] = []
    prev = None
    for s in samples:
        key = (s.task, s.story_id)
        if key != prev:
            counts.append(0)
            prev = key
        counts[-1] += 1
    k = split_point(counts, valid_fraction)
    n_train = int(sum(counts[:k]))
    return list(samples[:n_train]), list(samples[n_train:])


def _take_questions(stories: Sequence[_Story], limit: int) -> list[_Story]:
    """The first ``limit`` questions of a file (a prefix; the last story may be cut)."""
    out: list[_Story] = []
    left = limit
    for s in stories:
        if left <= 0:
            break
        if len(s.questions) <= left:
            out.append(s)
            left -= len(s.questions)
        else:
            qs = s.questions[:left]
            out.append(_Story(s.index, s.statements[: qs[-1].num_prior], qs))
            left = 0
    return out


# --------------------------------------------------------------------------------------
# Encoded storage
# --------------------------------------------------------------------------------------


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


def _encode_stories(
    parts: Sequence[tuple[int, Sequence[_Story]]],
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
    limits = _resolve_limits(max_story_sentences, sorted({s.task for s in samples}))
    if max_words is None:
        max_words = max(
            (len(t) for s in samples for t in (*s.story, s.question)), default=1
        )
    parts = [
        (
            s.task,
            [
                _Story(
                    s.story_id,
                    [tuple(t) for t in s.story],
                    [_Question(len(s.story), tuple(s.question), s.answer)],
                )
            ],
        )
        for s in samples
    ]
    split, _ = _encode_stories(parts, vocab, max_words, limits)
    return split


# --------------------------------------------------------------------------------------
# tf.data
# --------------------------------------------------------------------------------------


def make_dataset(
    split: EncodedSplit,
    batch_size: int,
    shuffle: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    repeat: bool = False,
    bucket_width: int | None = None,
    epoch: tf.Variable | None = None,
) -> tf.data.Dataset:
    """Builds a batched ``tf.data`` pipeline over an encoded split.

    Elements are ``({"story": int32[B, S, W], "question": int32[B, W]},
    {"answer": int32[B], "task": int32[B]})``. ``S`` is the longest story of the batch
    (padding sentences are all-zero rows); ``W`` is fixed. Static shapes are
    ``[None, None, W]`` and ``[None, W]`` (``B`` static with ``drop_remainder``).
    Stories are gathered from the shared sentence array per batch, fully in-graph.

    The pipeline shuffles and batches sample *indices* and gathers each batch's
    arrays in one step, so its per-sample work is a C++ shuffle of integers, far
    less CPU than a per-sample ``bucket_by_sequence_length``, which on a machine
    with few cores competes with the training step for the same cores.

    Args:
        split: The encoded split.
        batch_size: Samples per batch.
        shuffle: Shuffle with a buffer holding the whole split, reshuffled each epoch.
        seed: Shuffle seed (None: nondeterministic).
        drop_remainder: Drop the last partial batch (of every bucket).
        repeat: Repeat indefinitely (after shuffling, so each pass is reshuffled).
        bucket_width: If set, batch stories of similar length together (buckets
            of this many sentences), so a batch pads to little more than its own
            stories. The batches are those of ``bucket_by_sequence_length`` over
            the shuffled stream: each bucket fills in shuffled order and a batch is
            emitted when its bucket is full; the partial batches follow at the end
            of the pass. Every sample still appears exactly once per epoch.
        epoch: Optional int64 ``tf.Variable``. With it (and ``shuffle``), the order
            is a stateless function of ``(seed, epoch)``, read when an iterator
            starts: one dataset serves every epoch (assign the epoch, then
            iterate; pass ``p`` of a repeated dataset uses ``epoch + p``), so a
            training loop does not build, trace and optimize a new pipeline
            graph every epoch. Assign it only while no
            iterator of this dataset has yet to produce its first batch. The
            pipeline then holds a resource, so ``tf.distribute`` cannot
            auto-shard it: use it with single-worker input only.

    Returns:
        The dataset, prefetched two batches ahead, with tf.data autotuning off.
    """
    import tensorflow as tf

    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    n = len(split)
    width = split.max_words
    sentences = tf.constant(split.sentences, dtype=tf.int32)
    offsets = tf.constant(split.story_offsets, tf.int64)
    lengths = tf.constant(split.story_lengths, tf.int32)
    questions = tf.constant(split.questions, tf.int32)
    answers = tf.constant(split.answers, tf.int32)
    tasks = tf.constant(split.tasks, tf.int32)

    if epoch is not None and shuffle and n > 1:
        # one element per pass: the order, a stateless function of (seed, epoch + pass)
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        passes = tf.data.Dataset.counter() if repeat else tf.data.Dataset.range(1)

        @tf.autograph.experimental.do_not_convert
        def pass_order(index):
            key = tf.stack([tf.constant(seed, tf.int64), epoch.read_value() + index])
            return tf.random.experimental.stateless_shuffle(tf.range(n, dtype=tf.int64), key)

        orders = passes.map(pass_order)
        ds = orders if bucket_width else orders.unbatch()
        repeat = False  # the passes already repeat
    else:
        ds = tf.data.Dataset.range(n)
        if shuffle and n > 1:
            ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
        if bucket_width:
            ds = ds.batch(max(n, 1))  # one element: this pass's order
    if not bucket_width:
        if repeat:
            ds = ds.repeat()
        ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    else:
        longest = int(split.story_lengths.max()) if n else 0
        boundaries = tf.constant(list(range(bucket_width + 1, longest + 1, bucket_width)),
                                 tf.int32)
        num_buckets = int(boundaries.shape[0]) + 1

        @tf.autograph.experimental.do_not_convert  # plain graph code: no conversion cost
        def bucket_batches(order):
            """One pass's ``order`` (int64[n]) as bucketed batches (ragged rows)."""
            position = tf.range(tf.size(order, out_type=tf.int64))
            if num_buckets > 1:
                bucket = tf.searchsorted(boundaries, tf.gather(lengths, order), side="right")
            else:
                bucket = tf.zeros_like(order, tf.int32)
            one_hot = tf.one_hot(bucket, num_buckets, dtype=tf.int64)
            rank = tf.reduce_sum((tf.cumsum(one_hot, axis=0) - 1) * one_hot, axis=1)
            # batch key: (bucket, batch within bucket); emitted when its last sample
            # arrives if full, else after the pass, bucket by bucket
            per_bucket = (tf.size(order, out_type=tf.int64) + batch_size - 1) // batch_size
            key = tf.cast(bucket, tf.int64) * per_bucket + rank // batch_size
            size = tf.math.unsorted_segment_sum(tf.ones_like(key), key, num_buckets * per_bucket)
            full = tf.gather(size, key) == batch_size
            last = tf.math.unsorted_segment_max(position, key, num_buckets * per_bucket)
            total = tf.size(order, out_type=tf.int64)
            emit = tf.where(full, tf.gather(last, key), total + key)
            if drop_remainder:
                order, emit, position = (tf.boolean_mask(t, full) for t in (order, emit, position))
            sort = tf.argsort(emit * (total + 1) + position, stable=True)
            _, _, row_lengths = tf.unique_with_counts(tf.gather(emit, sort), out_idx=tf.int64)
            rows = tf.RaggedTensor.from_row_lengths(tf.gather(order, sort), row_lengths,
                                                    validate=False)
            return tf.data.Dataset.from_tensor_slices(rows)

        if repeat:
            ds = ds.repeat()  # each repetition reshuffles
        ds = ds.flat_map(bucket_batches)
        if drop_remainder:
            ds = ds.map(tf.autograph.experimental.do_not_convert(
                lambda rows: tf.ensure_shape(rows, [batch_size])))

    @tf.autograph.experimental.do_not_convert
    def gather(index):
        batch_offsets = tf.gather(offsets, index)
        batch_lengths = tf.gather(lengths, index)
        steps = tf.range(tf.reduce_max(tf.concat([batch_lengths, [0]], axis=0)))  # [S]
        valid = steps[None, :] < batch_lengths[:, None]  # [B, S]
        rows = batch_offsets[:, None] + tf.cast(steps, tf.int64)[None, :]
        rows = tf.where(valid, rows, tf.zeros_like(rows))
        story = tf.gather(sentences, rows)  # [B, S, W]
        story = tf.where(valid[:, :, None], story, tf.zeros_like(story))
        story = tf.ensure_shape(story, [None, None, width])
        question = tf.ensure_shape(tf.gather(questions, index), [None, width])
        return ({"story": story, "question": question},
                {"answer": tf.gather(answers, index), "task": tf.gather(tasks, index)})

    # No tf.data autotuning: the pipeline has fixed values, and an autotuned
    # iterator's deletion can wait for the autotuner's next wake-up, a stall per
    # epoch under CPU contention (see tpr_keras.training.loop.without_autotune).
    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.map(gather).prefetch(2).with_options(options)


# --------------------------------------------------------------------------------------
# Data discovery and download
# --------------------------------------------------------------------------------------


def find_babi_dir(data_dir: str | os.PathLike | None = None, download: bool = True) -> str:
    """Returns the bAbI v1.2 ``en-10k`` folder (holding ``qaN_<name>_{train,test}.txt``).

    A folder is accepted if it directly holds ``qa*_train.txt`` files, or holds
    ``en-10k/`` with them, or ``tasks_1-20_v1-2/en-10k/``. Search order:

    1. ``data_dir`` if given (nothing found there is an error, no fallback);
    2. ``$TPR_KERAS_BABI_DIR`` if set (likewise an error if it holds nothing);
    3. the Keras cache ``$KERAS_HOME/datasets`` (default ``~/.keras/datasets``);
    4. if ``download``: fetch the official ``tasks_1-20_v1-2.tar.gz`` into the Keras
       cache, verify its SHA-256, extract it safely and use it.

    Args:
        data_dir: Explicit folder (any of the layouts above).
        download: Allow step 4.

    Returns:
        The absolute (resolved) path of the ``en-10k`` folder.

    Raises:
        FileNotFoundError: Nothing found (and ``download`` is False), or ``data_dir`` /
            the environment variable points at a folder without bAbI files.
        DownloadError: The download failed (message says what to pass instead).
        ChecksumError: The downloaded archive did not match the published checksum
            (the bad file is deleted).
    """
    return find_data_dir(BABI_SOURCE, data_dir, download)


def task_files(babi_dir: str | os.PathLike, task: int) -> tuple[str, str]:
    """Returns ``(train_path, test_path)`` of task ``task`` in an ``en-10k`` folder.

    Raises:
        FileNotFoundError: The folder does not hold exactly one file of each kind.
    """
    out = []
    for kind in ("train", "test"):
        matches = sorted(Path(babi_dir).glob(f"qa{task}_*_{kind}.txt"))
        if len(matches) != 1:
            raise FileNotFoundError(
                f"expected one qa{task}_*_{kind}.txt in {babi_dir}, found {len(matches)}"
            )
        out.append(str(matches[0]))
    return out[0], out[1]


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


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


def _resolve_limits(
    max_story_sentences: int | Mapping[int, int | None] | None, tasks: Iterable[int]
) -> dict[int, int | None]:
    """Per-task truncation limits (None: no truncation)."""
    defaults = {
        t: _DEFAULT_PER_TASK_MAX_STORY_SENTENCES.get(t, DEFAULT_MAX_STORY_SENTENCES) for t in tasks
    }
    if max_story_sentences is None:
        limits = defaults
    elif isinstance(max_story_sentences, Mapping):
        limits = {t: max_story_sentences.get(t, defaults[t]) for t in defaults}
    else:
        limits = {t: int(max_story_sentences) for t in defaults}
    for t, v in limits.items():
        if v is not None and v < 1:
            raise ValueError(f"max_story_sentences for task {t} must be >= 1 or None, got {v}")
    return limits


def load_babi(
    data_dir: str | os.PathLike | None = None,
    tasks: int | str | Iterable[int] = (1,),
    setting: str = "10k",
    valid_fraction: float = 0.1,
    max_story_sentences: int | Mapping[int, int | None] | None = None,
    download: bool = True,
    vocab: Vocabulary | None = None,
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

    Returns:
        A :class:`BabiData`.
    """
    if setting not in _SETTING_QUESTIONS:
        raise ValueError(f"setting must be one of {sorted(_SETTING_QUESTIONS)}, got {setting!r}")
    if not 0.0 <= valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    task_list = _normalize_tasks(tasks)
    limits = _resolve_limits(max_story_sentences, task_list)
    root = find_babi_dir(data_dir, download=download)

    parts: dict[str, list[tuple[int, list[_Story]]]] = {"train": [], "valid": [], "test": []}
    file_questions: dict[int, int] = {}
    notes: list[str] = []
    expected = _SETTING_QUESTIONS[setting]
    for task in task_list:
        train_path, test_path = task_files(root, task)
        train_stories = _parse_stories(train_path)
        n_file = sum(len(s.questions) for s in train_stories)
        file_questions[task] = n_file
        if setting == "1k":
            train_stories = _take_questions(train_stories, expected)
        if n_file < expected:
            note = (
                f"task {task}: training file {os.path.basename(train_path)} holds {n_file} "
                f"questions, fewer than the {expected} of setting {setting!r}"
            )
            notes.append(note)
            warnings.warn(note, stacklevel=2)
        k = split_point([len(s.questions) for s in train_stories], valid_fraction)
        parts["train"].append((task, train_stories[:k]))
        parts["valid"].append((task, train_stories[k:]))
        parts["test"].append((task, _parse_stories(test_path)))

    sentences: set[tuple[str, ...]] = set()  # Distinct statements and questions.
    answer_symbols: set[str] = set()
    for split_parts in parts.values():
        for _, stories in split_parts:
            for s in stories:
                sentences.update(s.statements)
                sentences.update(q.tokens for q in s.questions)
                answer_symbols.update(q.answer for q in s.questions)
    if vocab is None:
        vocab = Vocabulary.build({t for sentence in sentences for t in sentence} | answer_symbols)
    max_words = max((len(t) for t in sentences), default=1)

    encoded: dict[str, EncodedSplit] = {}
    split_stats: dict[str, dict[str, Any]] = {}
    for name, split_parts in parts.items():
        encoded[name], split_stats[name] = _encode_stories(split_parts, vocab, max_words, limits)
    max_sentences = max(e.max_story_length for e in encoded.values())

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
    stats: dict[str, Any] = {
        "setting": setting,
        "tasks": task_list,
        "valid_fraction": valid_fraction,
        "max_story_sentences": limits,
        "samples": {n: split_stats[n]["samples"] for n in parts},
        "truncated": {n: split_stats[n]["truncated"] for n in parts},
        "stories": {n: split_stats[n]["stories"] for n in parts},
        "sentence_rows": {n: split_stats[n]["sentence_rows"] for n in parts},
        "max_story_length": {n: split_stats[n]["max_story_length"] for n in parts},
        "max_story_length_raw": {n: split_stats[n]["max_story_length_raw"] for n in parts},
        "per_task": per_task,
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
