"""The symbol table both vocabularies share: special symbols first, one id per symbol.

``tpr_keras.data.babi.Vocabulary`` (words) and ``tpr_keras.data.mathematics.CharVocabulary``
(characters) differ in their specials, what a symbol may be, and how text is encoded;
the table, its comparisons and its file (one symbol per line, line ``i`` holds id ``i``,
UTF-8, ``\\n``-terminated) are the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence


class TokenTable:
    """Symbols in id order, starting with ``SPECIALS``.

    Subclasses set ``SPECIALS`` and ``_check_token`` (what a non-special symbol may be).

    Args:
        tokens: All symbols in id order, starting with ``SPECIALS``.

    Raises:
        ValueError: wrong specials, an invalid symbol, or a symbol twice.
    """

    SPECIALS: tuple[str, ...] = ()

    def __init__(self, tokens: Sequence[str]) -> None:
        tokens = tuple(tokens)
        n = len(self.SPECIALS)
        if tokens[:n] != self.SPECIALS:
            raise ValueError(f"vocabulary must start with {self.SPECIALS}; got {tokens[:n]}")
        for t in tokens[n:]:
            self._check_token(t)
        self._tokens = tokens
        self._ids = {t: i for i, t in enumerate(tokens)}
        if len(self._ids) != len(tokens):
            raise ValueError("duplicate tokens in vocabulary")

    def _check_token(self, token: str) -> None:
        """Raises ValueError if ``token`` cannot be a (non-special) symbol."""

    @property
    def tokens(self) -> tuple[str, ...]:
        """All symbols in id order."""
        return self._tokens

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._tokens)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self._tokens == other._tokens

    def __hash__(self) -> int:
        return hash(self._tokens)

    def save(self, path: str | os.PathLike) -> None:
        """Writes one symbol per line (line i holds id i), UTF-8, ``\\n``-terminated."""
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(t + "\n" for t in self._tokens))

    @staticmethod
    def _read_text(path: str | os.PathLike) -> str:
        """The file's text, newlines untranslated (a symbol may be a space)."""
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
