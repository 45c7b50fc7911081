"""Character ids in ragged storage: a split of Mathematics Dataset examples as flat arrays.

:class:`MathSplit` holds all question (and answer) ids of a split in one flat array with
row offsets; :func:`encode_texts` makes one from a module's question and answer lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tpr_keras.data.mathematics.vocabulary import CharVocabulary


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

    def head(self, n: int) -> MathSplit:
        """The first ``n`` examples (all of them when there are fewer)."""
        n = min(int(n), len(self))
        q, a = self.question_splits[: n + 1], self.answer_splits[: n + 1]
        return MathSplit(self.question_ids[: q[-1]], q, self.answer_ids[: a[-1]], a,
                         self.modules[:n], self.module_names)

    def take(self, indices: Sequence[int]) -> MathSplit:
        """The examples at ``indices``, in that order."""
        indices = np.asarray(indices, np.int64)
        parts = {}
        for name in ("question", "answer"):
            ids, splits = getattr(self, f"{name}_ids"), getattr(self, f"{name}_splits")
            lengths = splits[indices + 1] - splits[indices]
            parts[name] = (np.concatenate([ids[splits[i]:splits[i + 1]] for i in indices])
                           if len(indices) else ids[:0],
                           np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
        return MathSplit(*parts["question"], *parts["answer"], self.modules[indices],
                         self.module_names)

    def select(self, mask: np.ndarray) -> MathSplit:
        """The examples where the boolean ``mask`` (one entry per example) is True, in
        order; vectorised (no loop over examples), for splits of millions of questions."""
        mask = np.asarray(mask, bool)
        if mask.shape != (len(self),):
            raise ValueError(f"mask has shape {mask.shape}, the split {len(self)} examples")
        parts = {}
        for name in ("question", "answer"):
            ids, splits = getattr(self, f"{name}_ids"), getattr(self, f"{name}_splits")
            lengths = np.diff(splits)
            keep = np.repeat(mask, lengths)  # one entry per id: its example's mask
            parts[name] = (ids[keep], np.concatenate([[0], np.cumsum(lengths[mask])]))
        return MathSplit(*parts["question"], *parts["answer"], self.modules[mask],
                         self.module_names)

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
