"""The bAbI vocabulary: one id per token and answer symbol."""

from __future__ import annotations

import os
from collections.abc import Iterable

from tpr_keras.data.babi.parsing import Sample
from tpr_keras.data.vocabulary import TokenTable


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
