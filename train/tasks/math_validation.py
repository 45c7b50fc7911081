"""``train.math``'s validation questions: the ones whose error chooses the kept epoch (the
weights of the lowest validation error, which are evaluated, saved and exported) and drives
``--patience``.

* ``heldout_train`` (default): ``--validation_questions`` questions of each module drawn from
  its training files with a fixed seed (the same for every ``--seed``, so runs of different
  seeds train and validate on the same questions) and removed from training, together with
  every training question of the same text (:func:`tpr_keras.data.mathematics.hold_out`).
* ``sample_dir``: the trained modules' files in ``--validation_dir``, e.g. a fresh sample of
  DeepMind's generator (``experiments/math_heldout_sample.py``).
* ``test_interpolate``: the ``interpolate/`` test files, which a run without a recorded
  ``validation.json`` validates on: the test files then choose the epoch whose scores on
  them are reported.

The test files' scores (``interpolate_accuracy_percent``, the printed table) are those of
the kept weights whatever the source.
"""

import dataclasses
import glob
import json
import os

SOURCES = ("heldout_train", "sample_dir", "test_interpolate")
#: Seed of the held-out draw: fixed, not ``--seed``.
HELDOUT_SEED = 0
RECORD_FILE = "validation.json"


def validation_source(flags):
    """``--validation_source`` as the run uses it: ``sample_dir`` when ``--validation_dir``
    is given.

    Raises:
        ValueError: ``--validation_dir`` with ``test_interpolate``, or ``sample_dir``
            without ``--validation_dir``.
    """
    source, folder = flags.validation_source, getattr(flags, "validation_dir", None)
    if source not in SOURCES:
        raise ValueError(f"--validation_source {source!r}: choose from {', '.join(SOURCES)}")
    if folder and source == "test_interpolate":
        raise ValueError("--validation_dir and --validation_source test_interpolate name two "
                         "validation sets: give one")
    if folder:
        return "sample_dir"
    if source == "sample_dir":
        raise ValueError("--validation_source sample_dir reads --validation_dir: give the "
                         "folder")
    return source


def split_validation(flags, data):
    """``(data, validation, record)``: the data to train on (the held-out questions removed
    for ``heldout_train``), the validation :class:`MathSplit`, and its ``results.json``
    record (``source``, ``questions`` per module, and how they were drawn)."""
    from tpr_keras.data import mathematics

    source = validation_source(flags)
    record = {"source": source}
    if source == "heldout_train":
        held = mathematics.hold_out(data.train, flags.validation_questions, seed=HELDOUT_SEED)
        data = dataclasses.replace(data, train=held.train)
        split = held.validation
        record |= {"questions": held.questions, "per_module": flags.validation_questions,
                   "max_fraction": mathematics.MAX_HELD_OUT_FRACTION, "seed": HELDOUT_SEED,
                   "duplicates_removed_from_training": held.duplicates_removed,
                   "train_examples_left": len(held.train)}
    elif source == "sample_dir":
        modules = list(data.stats["modules"]["train"])
        split, counts, unknown = mathematics.load_sample_split(
            flags.validation_dir, modules, data.vocab, data.module_names)
        record |= {"dir": flags.validation_dir, "questions": counts,
                   "unknown_characters": unknown}
    else:
        split = mathematics.MathSplit.concatenate(list(data.interpolate.values()),
                                                  data.module_names)
        record["questions"] = {m: len(s) for m, s in data.interpolate.items()}
    return data, split, record


def describe(record):
    """The line printed at start: where the kept epoch is chosen."""
    total = sum(record["questions"].values())
    if record["source"] == "heldout_train":
        removed = sum(record["duplicates_removed_from_training"].values())
        where = (f"{total:,} questions held out of the training files (at most "
                 f"{record['per_module']:,} per module, seed {record['seed']}; {removed:,} "
                 "training questions of the same text also removed)")
    elif record["source"] == "sample_dir":
        where = f"{total:,} questions of {record['dir']}"
    else:
        where = (f"the {total:,} questions of the interpolate/ test files, which thereby "
                 "choose the epoch whose test scores are reported")
    return f"Validation (chooses the kept epoch): {where}."


def check_resumed_run(model_dir, record):
    """Refuses to resume the run in ``model_dir`` (it has checkpoints) on other validation
    questions than it began with, then writes ``record`` there (``validation.json``).

    A run whose checkpoints predate ``validation.json`` validated on the interpolate test
    files: it resumes as it began with ``--validation_source test_interpolate``.

    Raises:
        ValueError: the recorded validation differs from ``record``, or the run began
            without a recorded validation and ``record`` is not ``test_interpolate``.
    """
    if not model_dir:
        return
    path = os.path.join(model_dir, RECORD_FILE)
    if glob.glob(os.path.join(model_dir, "checkpoints", "*")):  # a run to resume
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                began = json.load(f)
            if any(began.get(k) != record.get(k) for k in ("source", "questions", "dir",
                                                             "seed")):
                raise ValueError(
                    f"{model_dir} holds a run that validates on {began.get('source')} "
                    f"({sum(began.get('questions', {}).values()):,} questions, {path}); "
                    f"these flags give {record['source']} "
                    f"({sum(record['questions'].values()):,}). Resume it with the flags it "
                    "began with, or use a new --model_dir")
        elif record["source"] != "test_interpolate":
            raise ValueError(
                f"{model_dir} holds a run begun before train.math recorded its validation "
                "questions: it validated on the interpolate test files. Add "
                "--validation_source test_interpolate to resume it as it began, or use a "
                "new --model_dir")
    os.makedirs(model_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
