"""What a model did not take in, listed: the distinct unknown tokens of each request.

The task models' ``unknown_tokens`` output (``str[batch]``; the SavedModels' in-graph twin
is :mod:`tpr_keras.export.unknown_tokens`), shared by the bAbI (words), Mathematics and
entailment (characters) families: each request's tokens
outside the vocabulary, each once, in the order they first appear, joined by
:data:`SEPARATOR` (words hold no whitespace; a character that is whitespace is never
unknown in these vocabularies' tokenizers except where a family says so).
"""

from __future__ import annotations

from collections.abc import Iterable

#: Between two listed unknown tokens.
SEPARATOR = " "


def join_distinct(tokens: Iterable[str]) -> str:
    """``tokens`` without repeats, in first-appearance order, joined by :data:`SEPARATOR`
    (the Python twin of the SavedModel's
    :func:`tpr_keras.export.unknown_tokens.join_distinct_rows`)."""
    return SEPARATOR.join(dict.fromkeys(tokens))
