"""The error every dataset parser raises for a malformed file."""

from __future__ import annotations

import os


class DataFormatError(ValueError):
    """A malformed line in a dataset file. The message starts with ``"{path}:{lineno}: "``.

    Attributes:
        path: The file.
        lineno: 1-based line number.
    """

    def __init__(self, path: str | os.PathLike, lineno: int, problem: str) -> None:
        self.path = str(path)
        self.lineno = lineno
        super().__init__(f"{path}:{lineno}: {problem}")
