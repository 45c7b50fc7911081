"""How many of a story's last statements are kept: 70, and 130 for task 3; 130 served."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Default story truncation (last N statements): 70, and 130 for task 3.
DEFAULT_MAX_STORY_SENTENCES = 70
DEFAULT_PER_TASK_MAX_STORY_SENTENCES = {3: 130}
#: How long a story the served bAbI models read (the exporter's truncation, and the
#: Python task model's): the preset tables are computed with it, so a served preset
#: scores its recorded table.
SERVED_MAX_STORY_SENTENCES = 130


def resolve_limits(
    max_story_sentences: int | Mapping[int, int | None] | None, tasks: Iterable[int]
) -> dict[int, int | None]:
    """Per-task truncation limits (None: no truncation)."""
    defaults = {
        t: DEFAULT_PER_TASK_MAX_STORY_SENTENCES.get(t, DEFAULT_MAX_STORY_SENTENCES) for t in tasks
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
