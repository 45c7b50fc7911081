"""DeepMind Mathematics Dataset v1.0: discovery, parsing, character vocabulary, tf.data.

Layout (the official ``mathematics_dataset-v1.0.tar.gz``)::

    train-easy/<module>.txt  train-medium/<module>.txt  train-hard/<module>.txt
    interpolate/<module>.txt  extrapolate/<module>.txt

Each file alternates question and answer lines. Conventions (the TP-Transformer
authors' public code):

* Training data of a module = train-easy + train-medium + train-hard, merged.
  ``interpolate`` and ``extrapolate`` stay separate, one split per module.
* Extrapolation modules are named after a training module plus a suffix
  (``numbers__place_value_big``, ``comparison__sort_more``,
  ``arithmetic__mixed_longer``, ``probability__swr_p_level_set_more_samples``) or
  equal to one (``measurement__conversion``); selecting a training module selects
  its extrapolation modules too.
* Module filters are names or shell globs (``arithmetic__*``); ``"all"`` or ``"*"``
  selects everything.
* Characters are the symbols: :class:`CharVocabulary` = ``<pad>`` 0, ``<unk>`` 1,
  ``<s>`` 2 (start), ``</s>`` 3 (end), then the sorted characters of the training
  data (over all modules: 72 symbols, as in the paper). Whitespace is kept.
* Sequences (:func:`make_dataset`): ``source = <s> question </s>`` (the authors'
  code marks the source too), ``target_in = <s> answer``,
  ``target_out = answer </s>``. Questions have at most 160 characters and answers
  at most 30 (so sources are at most 162 symbols and targets 31); longer lines are a
  :class:`MathFormatError` naming the file and line.

Storage (:class:`MathSplit`) is ragged: all ids of a split in one flat array with row
offsets, padded only per batch inside ``tf.data``.

Data files: :func:`find_mathematics_dir` looks in ``data_dir``, then
``$TPR_KERAS_MATH_DIR``, then the Keras cache, then downloads the official archive
(2.3 GB, SHA-256 verified).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tpr_keras.data.errors import DataFormatError
from tpr_keras.data.sources import DataSource, find_data_dir
from tpr_keras.data.vocabulary import TokenTable

if TYPE_CHECKING:  # pragma: no cover
    import tensorflow as tf

__all__ = [
    "CharVocabulary",
    "DEFAULT_BUCKET_BOUNDARIES",
    "EXTRAPOLATE_SUFFIXES",
    "MATH_ARCHIVE_NAME",
    "MATH_ARCHIVE_SHA256",
    "MATH_DIR_ENV",
    "MATH_SOURCE",
    "MATH_URL",
    "MAX_ANSWER_LENGTH",
    "MAX_QUESTION_LENGTH",
    "MathData",
    "MathFormatError",
    "MathSplit",
    "REGIMES",
    "TRAIN_DIFFICULTIES",
    "encode_texts",
    "find_mathematics_dir",
    "list_modules",
    "load_mathematics",
    "make_dataset",
    "parse_mathematics_file",
    "select_modules",
]

# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------

#: Environment variable naming a folder with the dataset (same rules as data_dir).
MATH_DIR_ENV = "TPR_KERAS_MATH_DIR"
MATH_URL = "https://storage.googleapis.com/mathematics-dataset/mathematics_dataset-v1.0.tar.gz"
MATH_ARCHIVE_NAME = "mathematics_dataset-v1.0.tar.gz"
#: SHA-256 of the official archive (2,333,082,954 bytes), as published by TensorFlow
#: Datasets (``tensorflow_datasets/url_checksums/math_dataset.txt``) and HuggingFace
#: ``datasets`` (``datasets/math_dataset/urls_checksums/checksums.txt``).
MATH_ARCHIVE_SHA256 = "def638343403cb9ed60437d6b684c859dd23b72779f5cc5661b0a31e67c58576"
_ARCHIVE_TOP = "mathematics_dataset-v1.0"

TRAIN_DIFFICULTIES = ("train-easy", "train-medium", "train-hard")
REGIMES = TRAIN_DIFFICULTIES + ("interpolate", "extrapolate")
#: Suffixes that name an extrapolation module after its training module.
EXTRAPOLATE_SUFFIXES = ("big", "more", "longer", "more_samples")

MAX_QUESTION_LENGTH = 160
MAX_ANSWER_LENGTH = 30
#: Source-length bucket boundaries (``<s> question </s>``, at most 162 symbols).
DEFAULT_BUCKET_BOUNDARIES = (32, 48, 64, 96, 128)


#: Where the dataset may be and where to download it (see :func:`find_mathematics_dir`).
MATH_SOURCE = DataSource(
    name="math",
    label="Mathematics Dataset",
    env_var=MATH_DIR_ENV,
    layouts=("", _ARCHIVE_TOP),
    markers=tuple(f"{regime}/*.txt" for regime in REGIMES),
    looking_for="train-easy/ ... extrapolate/ folders of *.txt",
    instructions=(
        f"Pass --data_dir=/path/to/{_ARCHIVE_TOP} (or set {{env_var}}=...), or fetch "
        "{url} by hand and extract it into {cache} (giving {extracted})."
    ),
    urls=(MATH_URL,),
    archive_name=MATH_ARCHIVE_NAME,
    sha256=MATH_ARCHIVE_SHA256,
    archive_top=_ARCHIVE_TOP,
    timeout=120.0,
)


class MathFormatError(DataFormatError):
    """A malformed dataset file. The message starts with ``"{path}:{lineno}: "``."""


# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------


class CharVocabulary(TokenTable):
    """Character <-> id mapping with four special symbols.

    Ids: ``<pad>`` 0, ``<unk>`` 1, ``<s>`` 2 (start), ``</s>`` 3 (end), then one
    single-character symbol per id. :meth:`save` writes one symbol per line (line
    ``i`` = id ``i``, UTF-8, ``\\n``-terminated, nothing stripped: the space
    character is a line holding one space).

    Args:
        tokens: All symbols in id order, starting with the four specials (as written
            by :meth:`save`). Use :meth:`build` to make one from text.
    """

    PAD, UNK, START, END = "<pad>", "<unk>", "<s>", "</s>"
    SPECIALS = (PAD, UNK, START, END)
    PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3

    def __init__(self, tokens: Sequence[str]) -> None:
        super().__init__(tokens)
        chars = self._tokens[4:]
        order = np.argsort([ord(c) for c in chars]) if chars else np.zeros(0, np.int64)
        self._code_points = np.array([ord(chars[i]) for i in order], np.uint32)
        self._code_ids = (order + 4).astype(np.int32)

    def _check_token(self, token: str) -> None:
        if len(token) != 1 or token in "\n\r":
            raise ValueError(f"invalid character symbol {token!r}")

    @classmethod
    def build(cls, chars: Iterable[str]) -> CharVocabulary:
        """Specials, then the sorted distinct characters of ``chars`` (strings are split).

        Newlines and carriage returns are never symbols.
        """
        seen: set[str] = set()
        for text in chars:
            seen.update(text)
        seen -= {"\n", "\r"}
        return cls(cls.SPECIALS + tuple(sorted(seen)))

    def __repr__(self) -> str:
        return f"CharVocabulary({len(self)} symbols)"

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of ``text`` (unknown -> ``<unk>``); no markers."""
        return [self._ids.get(c, self.UNK_ID) for c in text]

    def encode_question(self, question: str, max_length: int = MAX_QUESTION_LENGTH) -> list[int]:
        """The model's source ids of one question: ``<s>``, its first ``max_length``
        characters (unknown -> ``<unk>``), ``</s>``.

        This is the text specification the in-graph tokenizer
        (``tpr_keras.models.tp_transformer.MathTokenizer``) is built from and tested
        equal to; :func:`make_dataset` gives the same sources (the loader rejects
        over-long questions instead of cutting them).
        """
        return [self.START_ID] + self.encode(question[:max_length]) + [self.END_ID]

    def decode(self, ids: Iterable[int], stop_at_end: bool = True) -> str:
        """Text of ``ids``: characters only (specials dropped), up to the first ``</s>``."""
        out = []
        for i in ids:
            i = int(i)
            if i == self.END_ID and stop_at_end:
                break
            if i >= 4:
                out.append(self._tokens[i])
        return "".join(out)

    def encode_array(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """Vectorised encoding of many texts.

        Returns:
            ``(ids, row_splits, unknown)``: the concatenated ids (``uint8`` when the
            vocabulary has at most 256 symbols, else ``int32``), ``int64[len + 1]``
            offsets, and the number of unknown characters.
        """
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        splits = np.zeros(len(texts) + 1, np.int64)
        np.cumsum(lengths, out=splits[1:])
        joined = "".join(texts)
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        if len(self._code_points):
            where = np.searchsorted(self._code_points, codes)
            where = np.minimum(where, len(self._code_points) - 1)
            known = self._code_points[where] == codes
            ids = np.where(known, self._code_ids[where], self.UNK_ID)
        else:
            known = np.zeros(codes.shape, bool)
            ids = np.full(codes.shape, self.UNK_ID, np.int32)
        dtype = np.uint8 if len(self) <= 256 else np.int32
        return ids.astype(dtype), splits, int(codes.size - known.sum())

    @classmethod
    def load(cls, path: str | os.PathLike) -> CharVocabulary:
        """Reads a file written by :meth:`save`."""
        text = cls._read_text(path)
        if not text.endswith("\n"):
            raise ValueError(f"{path}: not a vocabulary file (no final newline)")
        return cls(text[:-1].split("\n"))


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


def parse_mathematics_file(
    path: str | os.PathLike,
    max_question_length: int | None = MAX_QUESTION_LENGTH,
    max_answer_length: int | None = MAX_ANSWER_LENGTH,
    limit: int | None = None,
) -> tuple[list[str], list[str]]:
    """Reads one ``<module>.txt`` file of alternating question and answer lines.

    Args:
        path: The file.
        max_question_length: Longer questions are an error (None: no limit).
        max_answer_length: Longer answers are an error (None: no limit).
        limit: Read only the first ``limit`` examples.

    Returns:
        ``(questions, answers)``.

    Raises:
        MathFormatError: An odd number of lines (a question without answer), an
            empty line, or a line over its length limit; the message names the file
            and the 1-based line.
    """
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if limit is not None:
        lines = lines[: 2 * int(limit)]
    if len(lines) % 2:
        raise MathFormatError(
            path, len(lines), "question without an answer line (odd number of lines)"
        )
    lengths = np.fromiter((len(x) for x in lines), dtype=np.int64, count=len(lines))
    empty = np.flatnonzero(lengths == 0)
    if empty.size:
        raise MathFormatError(path, int(empty[0]) + 1, "empty line")
    for offset, limit_, what in (
        (0, max_question_length, "question"),
        (1, max_answer_length, "answer"),
    ):
        if limit_ is None:
            continue
        over = np.flatnonzero(lengths[offset::2] > limit_)
        if over.size:
            i = int(over[0])
            raise MathFormatError(
                path,
                2 * i + offset + 1,
                f"{what} has {int(lengths[2 * i + offset])} characters, more than "
                f"{limit_}",
            )
    return lines[0::2], lines[1::2]


# --------------------------------------------------------------------------------------
# Encoded storage
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(repr=False)
class MathSplit:
    """Ragged id-encoded examples (no markers; see :func:`make_dataset`).

    Example ``i``'s question is ``question_ids[question_splits[i]:question_splits[i+1]]``,
    likewise its answer.

    Attributes:
        question_ids, question_splits: concatenated question ids and ``int64[N+1]``
            offsets.
        answer_ids, answer_splits: likewise for answers.
        modules: ``int32[N]`` index of each example's module in ``module_names``.
        module_names: the module names that ``modules`` indexes.
    """

    question_ids: np.ndarray
    question_splits: np.ndarray
    answer_ids: np.ndarray
    answer_splits: np.ndarray
    modules: np.ndarray
    module_names: tuple[str, ...]

    def __post_init__(self) -> None:
        self.question_splits = np.asarray(self.question_splits, np.int64)
        self.answer_splits = np.asarray(self.answer_splits, np.int64)
        self.modules = np.asarray(self.modules, np.int32)
        self.module_names = tuple(self.module_names)
        n = self.modules.shape[0]
        for name in ("question", "answer"):
            ids, splits = getattr(self, f"{name}_ids"), getattr(self, f"{name}_splits")
            if splits.shape != (n + 1,) or splits[0] != 0 or splits[-1] != ids.shape[0]:
                raise ValueError(f"{name}_splits do not match {name}_ids and N={n}")

    def __len__(self) -> int:
        return int(self.modules.shape[0])

    def __repr__(self) -> str:
        return (
            f"MathSplit(examples={len(self)}, modules={len(set(self.modules.tolist()))}, "
            f"max_question_length={self.max_question_length}, "
            f"max_answer_length={self.max_answer_length})"
        )

    def question(self, i: int) -> np.ndarray:
        """``int32`` ids of question ``i``."""
        s = self.question_splits
        return self.question_ids[s[i] : s[i + 1]].astype(np.int32)

    def answer(self, i: int) -> np.ndarray:
        """``int32`` ids of answer ``i``."""
        s = self.answer_splits
        return self.answer_ids[s[i] : s[i + 1]].astype(np.int32)

    @property
    def max_question_length(self) -> int:
        return int(np.diff(self.question_splits).max()) if len(self) else 0

    @property
    def max_answer_length(self) -> int:
        return int(np.diff(self.answer_splits).max()) if len(self) else 0

    @classmethod
    def concatenate(cls, parts: Sequence[MathSplit], module_names: Sequence[str]) -> MathSplit:
        """Joins splits that share ``module_names``."""
        if not parts:
            z = np.zeros(1, np.int64)
            return cls(np.zeros(0, np.uint8), z, np.zeros(0, np.uint8), z.copy(),
                       np.zeros(0, np.int32), module_names)

        def join(name):
            ids = np.concatenate([getattr(p, f"{name}_ids") for p in parts])
            ends = np.cumsum([getattr(p, f"{name}_splits")[-1] for p in parts])[:-1]
            splits = np.concatenate(
                [getattr(parts[0], f"{name}_splits")]
                + [getattr(p, f"{name}_splits")[1:] + e for p, e in zip(parts[1:], ends)]
            )
            return ids, splits

        q, qs = join("question")
        a, as_ = join("answer")
        return cls(q, qs, a, as_, np.concatenate([p.modules for p in parts]), module_names)


def encode_texts(
    questions: Sequence[str],
    answers: Sequence[str],
    vocab: CharVocabulary,
    module: int,
    module_names: Sequence[str],
) -> tuple[MathSplit, int]:
    """Encodes parallel question/answer lists of one module; returns the split and
    the number of characters that were not in ``vocab``."""
    if len(questions) != len(answers):
        raise ValueError("questions and answers differ in number")
    q, qs, qu = vocab.encode_array(questions)
    a, as_, au = vocab.encode_array(answers)
    modules = np.full(len(questions), module, np.int32)
    return MathSplit(q, qs, a, as_, modules, module_names), qu + au


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


# --------------------------------------------------------------------------------------
# Modules
# --------------------------------------------------------------------------------------


def list_modules(math_dir: str | os.PathLike) -> dict[str, list[str]]:
    """Module names per regime folder (``train-easy`` ... ``extrapolate``), sorted;
    missing folders give empty lists."""
    out = {}
    for regime in REGIMES:
        folder = Path(math_dir) / regime
        out[regime] = sorted(p.stem for p in folder.glob("*.txt")) if folder.is_dir() else []
    return out


def _extrapolates(train_module: str, candidates: Iterable[str]) -> list[str]:
    names = {train_module} | {f"{train_module}_{s}" for s in EXTRAPOLATE_SUFFIXES}
    return [c for c in candidates if c in names]


def select_modules(
    patterns: str | Iterable[str], available: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Resolves module filters against :func:`list_modules` output.

    Args:
        patterns: Names or shell globs (one string may hold several, comma-separated);
            ``"all"`` / ``"*"`` selects everything.
        available: regime -> module names.

    Returns:
        ``{"train": [...], "interpolate": [...], "extrapolate": [...]}``: training
        modules present in any train difficulty; interpolate and extrapolate modules
        that match a pattern or belong to a selected training module.

    Raises:
        ValueError: A pattern matches no module (the message lists the modules).
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    patterns = [p.strip() for p in patterns if p.strip()]
    patterns = ["*" if p == "all" else p for p in patterns]
    if not patterns:
        raise ValueError("no module selected")
    train_all = sorted({m for r in TRAIN_DIFFICULTIES for m in available.get(r, [])})
    pools = {
        "train": train_all,
        "interpolate": list(available.get("interpolate", [])),
        "extrapolate": list(available.get("extrapolate", [])),
    }
    everything = sorted(set().union(*pools.values()))
    for p in patterns:
        if not fnmatch.filter(everything, p):
            raise ValueError(
                f"module filter {p!r} matches no module; available: {', '.join(everything)}"
            )

    def matching(names):
        return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]

    train = matching(pools["train"])
    interpolate = set(matching(pools["interpolate"])) | (set(train) & set(pools["interpolate"]))
    interpolate = sorted(interpolate)
    extrapolate = set(matching(pools["extrapolate"]))
    for m in train:
        extrapolate.update(_extrapolates(m, pools["extrapolate"]))
    return {"train": train, "interpolate": interpolate, "extrapolate": sorted(extrapolate)}


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


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
    index = {m: i for i, m in enumerate(module_names)}

    def read(regime, module):
        return parse_mathematics_file(
            Path(root) / regime / f"{module}.txt",
            max_question_length,
            max_answer_length,
            limit_per_file,
        )

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
    if vocab is None:
        vocab = CharVocabulary.build(
            text for _, q, a in raw_train for lines in (q, a) for text in lines
        )
    unknown: dict[str, int] = {}

    def encode(regime, parts):
        out = []
        for module, q, a in parts:
            split, n_unknown = encode_texts(q, a, vocab, index[module], module_names)
            if n_unknown:
                unknown[f"{regime}/{module}"] = unknown.get(f"{regime}/{module}", 0) + n_unknown
            out.append((module, split))
        return out

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


# --------------------------------------------------------------------------------------
# tf.data
# --------------------------------------------------------------------------------------


def balanced_indices(modules: np.ndarray, seed: int | None = None) -> np.ndarray:
    """One epoch's example indices with every module equally often, shuffled.

    The dataset's modules all have the same size, so a model trained on all of them sees
    each module equally often; a local copy whose modules differ in size (for instance
    more examples of a few modules) would otherwise be dominated by its largest. The
    epoch keeps its length ``N``: each of the ``M`` modules contributes ``N // M``
    examples (one more for ``N % M`` modules drawn at random), drawn without
    replacement from a fresh permutation of its examples, cycled when it has fewer.
    The same ``seed`` gives the same indices.

    Example:
    >>> idx = balanced_indices(np.array([0] * 8 + [1] * 2), seed=0)
    >>> len(idx), int((idx >= 8).sum())  # module 1 fills half the epoch
    (10, 5)
    """
    rng = np.random.default_rng(seed)
    modules = np.asarray(modules)
    names = np.unique(modules)
    quota = np.full(len(names), len(modules) // len(names))
    quota[rng.permutation(len(names))[: len(modules) % len(names)]] += 1
    parts = []
    for name, q in zip(names, quota):
        members = np.flatnonzero(modules == name)
        cycles = -(-int(q) // len(members))
        parts.append(np.concatenate([rng.permutation(members) for _ in range(cycles)])[:q])
    return rng.permutation(np.concatenate(parts)).astype(np.int64)


def make_dataset(
    split: MathSplit,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    bucket_boundaries: Sequence[int] | None = DEFAULT_BUCKET_BOUNDARIES,
    drop_remainder: bool = False,
    repeat: bool = False,
    source_markers: bool = True,
    balance_modules: bool = False,
) -> tf.data.Dataset:
    """Batched, length-bucketed ``tf.data`` pipeline over a split.

    Elements: ``({"source": int32[B, Ls], "target_in": int32[B, Lt]},
    {"target_out": int32[B, Lt], "module": int32[B]})`` with
    ``source = <s> question </s>`` (just the question if ``source_markers`` is
    False), ``target_in = <s> answer``, ``target_out = answer </s>``, ``<pad>``
    (0)-padded to the longest of the batch.

    Args:
        split: The encoded split.
        batch_size: Examples per batch.
        shuffle: Shuffle the whole split (indices), reshuffled each iteration.
        seed: Shuffle seed (None: nondeterministic). The same seed gives the same
            order for a freshly built dataset, so pass e.g. ``seed + epoch`` per
            epoch.
        bucket_boundaries: Batch examples whose source lengths fall between the
            same boundaries together (``tf.data.Dataset.bucket_by_sequence_length``),
            so a batch pads to little more than its own longest question; None pads
            plain batches. Every example still appears exactly once per pass.
        drop_remainder: Drop partial batches (of every bucket).
        repeat: Repeat indefinitely (each pass reshuffled).
        source_markers: Wrap the question in ``<s> ... </s>``.
        balance_modules: With ``shuffle``, draw the pass from :func:`balanced_indices`
            (every module equally often) when the split's modules differ in size; with
            equal sizes it changes nothing. Not with ``repeat``: draw each pass anew
            with its own seed instead.

    Returns:
        The dataset, prefetched.
    """
    import tensorflow as tf

    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    start, end, pad = CharVocabulary.START_ID, CharVocabulary.END_ID, CharVocabulary.PAD_ID
    q_ids = tf.constant(split.question_ids)
    q_splits = tf.constant(split.question_splits, tf.int64)
    a_ids = tf.constant(split.answer_ids)
    a_splits = tf.constant(split.answer_splits, tf.int64)
    modules = tf.constant(split.modules, tf.int32)
    _, sizes = np.unique(split.modules, return_counts=True)
    if balance_modules and shuffle and len(set(sizes.tolist())) > 1:
        if repeat:
            raise ValueError("balance_modules draws one pass: build a dataset per pass "
                             "(with its own seed) instead of repeat=True")
        ds = tf.data.Dataset.from_tensor_slices(balanced_indices(split.modules, seed))
    elif shuffle and len(split) > 1:
        ds = tf.data.Dataset.range(len(split))
        ds = ds.shuffle(len(split), seed=seed, reshuffle_each_iteration=True)
    else:
        ds = tf.data.Dataset.range(len(split))
    if repeat:
        ds = ds.repeat()

    def example(i):
        q = tf.cast(q_ids[q_splits[i] : q_splits[i + 1]], tf.int32)
        a = tf.cast(a_ids[a_splits[i] : a_splits[i + 1]], tf.int32)
        source = tf.concat([[start], q, [end]], 0) if source_markers else q
        target_in = tf.concat([[start], a], 0)
        target_out = tf.concat([a, [end]], 0)
        return source, target_in, target_out, modules[i]

    ds = ds.map(example, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    padding = (pad, pad, pad, 0)
    if bucket_boundaries:
        boundaries = sorted(int(b) for b in bucket_boundaries)
        ds = ds.bucket_by_sequence_length(
            element_length_func=lambda source, *rest: tf.shape(source)[0],
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            padding_values=padding,
            drop_remainder=drop_remainder,
        )
    else:
        ds = ds.padded_batch(batch_size, padding_values=padding, drop_remainder=drop_remainder)

    def structure(source, target_in, target_out, module):
        return (
            {"source": source, "target_in": target_in},
            {"target_out": target_out, "module": module},
        )

    return ds.map(structure, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------------------
# Data discovery and download
# --------------------------------------------------------------------------------------


def find_mathematics_dir(data_dir: str | os.PathLike | None = None, download: bool = True) -> str:
    """Returns the dataset folder (holding ``train-easy/`` ... ``extrapolate/``).

    A folder is accepted if it holds at least one regime folder with ``*.txt`` files,
    directly or under ``mathematics_dataset-v1.0/``. Search order:

    1. ``data_dir`` if given (nothing found there is an error, no fallback);
    2. ``$TPR_KERAS_MATH_DIR`` if set (likewise);
    3. the Keras cache ``$KERAS_HOME/datasets`` (default ``~/.keras/datasets``);
    4. if ``download``: fetch the official ``mathematics_dataset-v1.0.tar.gz``
       (2.3 GB) into the Keras cache, verify its SHA-256, extract it safely.

    Raises:
        FileNotFoundError: Nothing found (and ``download`` is False), or ``data_dir``
            / the environment variable points at a folder without the dataset.
        DownloadError: The download failed (the message says what to pass instead).
        ChecksumError: The archive did not match the published checksum.
    """
    return find_data_dir(MATH_SOURCE, data_dir, download)
