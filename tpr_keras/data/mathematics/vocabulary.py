"""The Mathematics Dataset's character vocabulary: one id per character, four specials.

The TP-Transformer (Schlag et al. 2019) reads and writes characters: :class:`CharVocabulary`
is the character specification its in-graph tokenizer
(``tpr_keras.models.tp_transformer.MathTokenizer``) is built from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np

from tpr_keras.data.mathematics.parsing import MAX_QUESTION_LENGTH
from tpr_keras.data.vocabulary import TokenTable


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
