"""Mathematics Dataset files -> question and answer lines, and the line-length limits.

One ``<module>.txt`` file of the DeepMind Mathematics Dataset v1.0 alternates question
and answer lines; questions have at most :data:`MAX_QUESTION_LENGTH` characters and
answers at most :data:`MAX_ANSWER_LENGTH` (the limits of the dataset and of the
TP-Transformer, Schlag et al. 2019).
"""

from __future__ import annotations

import os

import numpy as np

from tpr_keras.data.errors import DataFormatError

MAX_QUESTION_LENGTH = 160
MAX_ANSWER_LENGTH = 30


class MathFormatError(DataFormatError):
    """A malformed dataset file. The message starts with ``"{path}:{lineno}: "``."""


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
