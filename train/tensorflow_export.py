"""The SavedModel of a run trained on another Keras backend than TensorFlow (JAX), written by
a ``python -m train.export`` subprocess on TensorFlow: the SavedModel and its in-graph
tokenizer are TensorFlow's. :data:`SAVED_MODEL_LINE` opens the line ``train.export`` prints
with the version folder it wrote, which :func:`export_in_tensorflow` reads back.

Importing this module imports neither TensorFlow nor Keras (``train.export --help``).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from typing import Any

SAVED_MODEL_LINE = "SavedModel for TF Serving: "


def export_command(keras_path: str, export_dir: str, model_name: str,
                   **options: Any) -> list[str]:
    """``[python, -m, train.export, --keras_model, keras_path, ...]``: the command that
    writes the SavedModel of a run's ``model.keras`` (``options``: more ``train.export``
    flags, as in :func:`export_in_tensorflow`)."""
    command = [sys.executable, "-m", "train.export", "--keras_model", keras_path,
               "--export_dir", export_dir, "--model_name", model_name]
    return command + [f"--{name}={value}" for name, value in options.items()]


def export_in_tensorflow(keras_path: str, export_dir: str, model_name: str,
                         **options: Any) -> str | None:
    """Writes the SavedModel of a run trained on another backend, in a TensorFlow process.

    Runs ``python -m train.export --keras_model <keras_path>`` with
    ``KERAS_BACKEND=tensorflow`` (the SavedModel and its in-graph tokenizer are
    TensorFlow's) and returns the version folder it wrote. Where TensorFlow is not
    installed it prints the command to run elsewhere and returns None.

    Args:
        keras_path: the run's ``model.keras`` (its ``vocab.txt`` beside it).
        export_dir: base folder; the model goes to ``<export_dir>/<model_name>/<version>``.
        model_name: the served model name.
        **options: more ``train.export`` flags (bAbI: ``max_story_sentences``, 0 for
            no limit).
    """
    command = export_command(keras_path, export_dir, model_name, **options)
    if importlib.util.find_spec("tensorflow") is None:
        print("TensorFlow is not installed here, so no SavedModel was written; where it "
              f"is: KERAS_BACKEND=tensorflow python {shlex.join(command[1:])}")
        return None
    done = subprocess.run(command, env=dict(os.environ, KERAS_BACKEND="tensorflow"),
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(SAVED_MODEL_LINE)]
    if done.returncode or not lines:
        raise RuntimeError(f"Export in TensorFlow failed ({shlex.join(command)}):\n"
                           f"{done.stdout[-2000:]}{done.stderr[-4000:]}")
    return lines[-1][len(SAVED_MODEL_LINE):].strip()
