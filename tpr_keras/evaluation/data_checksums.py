"""The data files a preset's run read and their SHA-256, recorded in its metadata, so that
a table recomputed later on other bytes is flagged (``train.evaluate``)."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

from tpr_keras.data import entailment, mathematics
from tpr_keras.data.babi import files
from tpr_keras.presets.preset_files import sha256_file


def data_files(task, data_dir, options):
    """``(root, [paths])``: the data files a preset's run read, for their SHA-256."""
    if task == "babi":
        root = files.find_babi_dir(data_dir, download=False)
        return root, [p for t in options["tasks"] for p in files.task_files(root, t)]
    if task == "entailment":
        root = entailment.find_entailment_dir(data_dir)
        splits = ("train",) + entailment.EVALUATION_SPLITS
        return root, [os.path.join(root, f"{s}.txt") for s in splits]
    root = mathematics.find_mathematics_dir(data_dir, download=False)
    selected = mathematics.select_modules(options["modules"], mathematics.list_modules(root))
    folders = {"train": mathematics.TRAIN_DIFFICULTIES}
    return root, sorted({p for regime, modules in selected.items() for m in modules
                         for folder in folders.get(regime, (regime,))
                         for p in glob.glob(os.path.join(root, folder, f"{m}.txt"))})


def changed_data_files(recorded: dict[str, str], root: str | os.PathLike) -> list[str]:
    """The files of ``recorded`` (``{path under root: SHA-256}``, a preset's data) that
    exist under ``root`` with other bytes: a table computed on them may differ."""
    return [relative for relative, digest in sorted(recorded.items())
            if os.path.isfile(os.path.join(root, relative))
            and sha256_file(os.path.join(root, relative)) != digest]


def files_sha256(paths: Sequence[str | os.PathLike], root: str | os.PathLike) -> dict[str, str]:
    """``{path relative to root: SHA-256}`` of data files, for a preset's metadata."""
    return {os.path.relpath(p, root): sha256_file(p) for p in sorted(map(os.fspath, paths))}
