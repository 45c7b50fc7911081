"""The evaluation table of a task, from a trained model and the official test files.

One function per task (:mod:`~tpr_keras.evaluation.babi`,
:mod:`~tpr_keras.evaluation.entailment`, :mod:`~tpr_keras.evaluation.mathematics`)
computes the numbers a paper's table reports with the rules the ``train.*`` commands apply
at the end of a run; :func:`evaluate_model` picks the task's, so that a preset's recorded
table and ``python -m train.evaluate`` agree.
"""

from __future__ import annotations

from typing import Any

from tpr_keras.evaluation.babi import babi_table
from tpr_keras.evaluation.entailment import entailment_table
from tpr_keras.evaluation.mathematics import math_table, math_tables


def evaluate_model(task: str, model, vocab, data_dir, options, limit: int | None = None,
                   download: bool = False, templates=None) -> dict[str, Any]:
    """The table of ``task`` (``"babi"``, ``"entailment"``, ``"math"``) for ``model``.

    ``options`` are the preset's ``evaluation_options``: ``tasks``,
    ``max_story_sentences`` and ``keep_sentence_ends`` (bAbI), ``modules`` (math).
    """
    if task == "babi":
        limits = options.get("max_story_sentences")
        if isinstance(limits, dict):
            limits = {int(k): v for k, v in limits.items()}
        return babi_table(model, vocab, data_dir, tasks=options.get("tasks", range(1, 21)),
                          limit=limit, max_story_sentences=limits, download=download,
                          keep_sentence_ends=options.get("keep_sentence_ends", True))
    if task == "entailment":
        return entailment_table(model, data_dir, limit=limit)
    if task == "math":
        return math_table(model, vocab, data_dir, options["modules"], limit=limit,
                          download=download, templates=templates)
    raise ValueError(f"unknown task {task!r}; expected babi, entailment or math")


def evaluate_tables(task: str, model, vocab, data_dir, options, limits,
                    download: bool = False, templates=None) -> list[dict[str, Any]]:
    """:func:`evaluate_model`'s table for each of ``limits`` (None: every example): a
    preset's full table and its sample table. A math model's decoders are traced once for
    all of them (:func:`~tpr_keras.evaluation.mathematics.math_tables`)."""
    if task == "math":
        return math_tables(model, vocab, data_dir, options["modules"], limits,
                           download=download, templates=templates)
    return [evaluate_model(task, model, vocab, data_dir, options, limit=limit,
                           download=download, templates=templates) for limit in limits]
