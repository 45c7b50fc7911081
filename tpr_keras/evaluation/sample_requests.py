"""A trained preset's test questions as raw-text requests, and the accuracy its table records.

What checks a served model against a preset's recorded table (``tests/presets``,
``python -m tools.preset_serving_check``): :func:`sample_requests` reads the official test
files into one request per row of the table (a bAbI task, an entailment split, a math
module), with the inputs the exported ``serving_default`` takes (:data:`ANSWER_OUTPUT`
names the output that holds the answer); :func:`accuracy_rows` scores any answerer on
them and :func:`recorded_accuracy` gives the accuracy the row records. Text only: nothing
here imports Keras or TensorFlow.

Example:
>>> recorded_accuracy({"test_error_percent": {"1": 0.5}}, "babi", "1")
99.5
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: The folder under ``../shared/data`` (a ``--data_dir``) of each task's official files.
DATA_FOLDER = {"babi": "babi", "entailment": "entailment", "math": "mathematics"}
#: The ``serving_default`` output that holds each task's answer (bAbI's and math's answer
#: string, entailment's verdict).
ANSWER_OUTPUT = {"babi": "answer", "entailment": "entails", "math": "answer"}

#: One request: ``(row, {input name: [str]}, expected answers)``.
Request = tuple[str, dict[str, list[str]], list[Any]]


def sample_requests(meta: Mapping[str, Any], data_dir: str | os.PathLike,
                    limit: int | None) -> list[Request]:
    """The test questions of a preset's table as raw text, one request per row.

    Args:
        meta: The preset's ``metadata.json`` (its ``task``, ``evaluation_options`` and, for
            math, the modules of its ``evaluation`` table).
        data_dir: The task's official files (see :data:`DATA_FOLDER`).
        limit: The first N questions of every test file (a preset's recorded
            ``evaluation_sample``); None: all of them.

    Returns:
        ``[(row, inputs, expected)]``: bAbI rows are task numbers (inputs ``story``, its
        sentences joined by newlines, and ``question``), entailment rows splits (inputs
        ``premise`` and ``hypothesis``, expected booleans), math rows
        ``"<regime>/<module>"`` (input ``question``).
    """
    from tpr_keras.data import entailment, mathematics
    from tpr_keras.data.babi import files, parse_babi_file

    task = meta["task"]
    out = []
    if task == "babi":
        root = files.find_babi_dir(data_dir, download=False)
        for t in meta["evaluation_options"]["tasks"]:
            samples = parse_babi_file(files.task_file(root, t, "test"))[:limit]
            out.append((str(t), {"story": ["\n".join(" ".join(sentence) for sentence in s.story)
                                           for s in samples],
                                 "question": [" ".join(s.question) for s in samples]},
                        [s.answer for s in samples]))
    elif task == "entailment":
        root = pathlib.Path(entailment.find_entailment_dir(data_dir))
        for split in entailment.EVALUATION_SPLITS:
            fields = [line.split(",") for line in
                      (root / f"{split}.txt").read_text().splitlines()[:limit]]
            out.append((split, {"premise": [f[0] for f in fields],
                                "hypothesis": [f[1] for f in fields]},
                        [f[2] == "1" for f in fields]))
    elif task == "math":
        root = pathlib.Path(mathematics.find_mathematics_dir(data_dir, download=False))
        for regime in ("interpolate", "extrapolate"):
            for module in meta["evaluation"]["table"][f"{regime}_accuracy_percent"]:
                lines = (root / regime / f"{module}.txt").read_text().splitlines()
                end = len(lines) if limit is None else 2 * limit
                out.append((f"{regime}/{module}", {"question": lines[0:end:2]},
                            lines[1:end:2]))
    else:
        raise ValueError(f"unknown task {task!r}")
    return out


def recorded_accuracy(table: Mapping[str, Any], task: str, row: str) -> float:
    """The accuracy (%) a preset's table records for one row of :func:`sample_requests`."""
    if task == "babi":
        return 100.0 - table["test_error_percent"][row]
    if task == "entailment":
        return table["accuracy_percent"][row]
    regime, module = row.split("/")
    return table[f"{regime}_accuracy_percent"][module]


def accuracy_rows(requests: Sequence[Request],
                  answer: Callable[[dict[str, list[str]]], Sequence[Any]]
                  ) -> list[tuple[str, float, int]]:
    """``[(row, accuracy %, questions)]``: how many of each request's answers, as
    ``answer(inputs)`` gives them, equal the expected ones."""
    rows = []
    for row, inputs, expected in requests:
        answers = list(answer(inputs))
        if len(answers) != len(expected):
            raise ValueError(f"row {row}: {len(answers)} answers to {len(expected)} questions")
        hits = sum(a == e for a, e in zip(answers, expected))
        rows.append((row, 100.0 * (hits / max(len(expected), 1)), len(expected)))
    return rows
