"""What a training run leaves behind: model.keras and vocab.txt, then results.json, each
written atomically, results.json with the run's provenance (:mod:`tpr_keras.provenance`).
Flag-free: the ``train.*`` commands use it, and so can a script or a benchmark."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from tpr_keras.atomic_files import write_file, write_text
from tpr_keras.provenance import run_command, run_source


def save_model(export_dir: str, model, save_vocabulary: Callable[[str], None]) -> str:
    """Writes ``<export_dir>/model.keras`` and ``<export_dir>/vocab.txt``, each atomically
    (:func:`~tpr_keras.atomic_files.write_file`, kill points ``mid-model`` and
    ``mid-vocab``); returns the path of ``model.keras``.

    Args:
        export_dir: The folder (made if missing).
        model: The trained Keras model.
        save_vocabulary: Writes the vocabulary to the path it is given.
    """
    os.makedirs(export_dir, exist_ok=True)
    path = write_file(os.path.join(export_dir, "model.keras"), model.save, label="model")
    write_file(os.path.join(export_dir, "vocab.txt"), save_vocabulary, label="vocab")
    return path


def write_results(model_dir: str, results: dict[str, Any], model) -> str:
    """Writes ``<model_dir>/results.json`` atomically (kill point ``mid-results``): a
    run's last file, whose presence says the run finished. Returns its path.

    It holds ``results`` and three keys added here: ``"model_config"``
    (``model.get_config()``, every architecture option), ``"source"``
    (:func:`~tpr_keras.provenance.run_source`, the commit the run's code came from) and
    ``"command"`` (:func:`~tpr_keras.provenance.run_command`, the command
    line of this process). Values JSON cannot hold are written with ``str``.
    """
    os.makedirs(model_dir, exist_ok=True)
    record = {**results, "model_config": model.get_config(), "source": run_source(),
              "command": run_command()}
    return write_text(os.path.join(model_dir, "results.json"),
                      json.dumps(record, indent=1, default=str), label="results")


def save_run(model_dir: str, export_dir: str | None, results: dict[str, Any], model,
             save_vocabulary: Callable[[str], None]) -> str:
    """Writes ``<export_dir>/{model.keras,vocab.txt}`` (:func:`save_model`), then
    ``<model_dir>/results.json`` (:func:`write_results`), in that order: results last, so
    a run with results has its model. Call it on the chief only. (The ``train.*``
    commands write their SavedModel in between: :mod:`train.finish`.)

    Args:
        model_dir: The run's folder.
        export_dir: Where the model goes (``None``: ``<model_dir>/export``).
        results: JSON-able results.
        model: The trained Keras model.
        save_vocabulary: Writes the vocabulary to the path it is given.

    Returns:
        The path of ``model.keras``.
    """
    path = save_model(export_dir or os.path.join(model_dir, "export"), model, save_vocabulary)
    write_results(model_dir, results, model)
    return path
