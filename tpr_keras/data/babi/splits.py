"""Train/valid splits at story boundaries, and the 1k setting's prefix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tpr_keras.data.babi.parsing import Sample, Story


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


def take_questions(stories: Sequence[Story], limit: int) -> list[Story]:
    """The first ``limit`` questions of a file (a prefix; the last story may be cut)."""
    out: list[Story] = []
    left = limit
    for s in stories:
        if left <= 0:
            break
        if len(s.questions) <= left:
            out.append(s)
            left -= len(s.questions)
        else:
            qs = s.questions[:left]
            out.append(Story(s.index, s.statements[: qs[-1].num_prior], qs))
            left = 0
    return out
