"""What every training entry point leaves behind: results.json, model.keras, vocab.txt."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def source_version(path: str | None = None) -> dict[str, Any] | None:
    """The git commit of the checkout that holds ``path`` (default: this package).

    Returns ``{"commit": <40 hex digits>, "dirty": <tracked files differ from it>}``, or
    ``None`` when git is missing or tracks nothing under ``path``: an installed wheel, also
    one in a virtual environment that lies inside some other (untracking) repository.

    Example:
    >>> source_version("/")  # not a checkout
    """
    path = path or os.path.dirname(os.path.abspath(__file__))

    def git(*args):
        return subprocess.run(["git", "-C", path, *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()

    try:
        git("ls-files", "--error-unmatch", ".")  # fails when nothing here is tracked
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def relative_path_argument(argument: str, root: str) -> str:
    """``argument`` (``PATH`` or ``--flag=PATH``) with an absolute ``PATH`` inside ``root``
    or beside it (``root/../x``) written relative to ``root``; anything else unchanged.

    A recorded command must run on another machine from the repository root, so
    ``--data_dir=/home/me/repo/../shared/data/babi`` is kept as
    ``--data_dir=../shared/data/babi``.

    Example:
    >>> relative_path_argument("--data_dir=/r/main/../shared/babi", "/r/main")
    '--data_dir=../shared/babi'
    >>> relative_path_argument("/tmp/x", "/r/main")
    '/tmp/x'
    """
    flag, equals, value = argument.partition("=") if argument.startswith("--") else (
        "", "", argument)
    if not os.path.isabs(value):
        return argument
    relative = os.path.relpath(os.path.normpath(value), os.path.normpath(root))
    if relative.startswith(os.pardir + os.sep + os.pardir) or relative == os.pardir:
        return argument  # outside the checkout and its parent: a machine path stays
    return flag + equals + relative


def relative_command(command: str, root: str | None = None) -> str:
    """A recorded command line with its absolute paths under ``root`` (default: the
    current folder) made relative (:func:`relative_path_argument`)."""
    root = root or os.getcwd()
    return shlex.join(relative_path_argument(a, root) for a in shlex.split(command))


def run_command(argv: list[str] | None = None) -> str:
    """The command line of this process as the user typed it: ``python -m <module> <args>``
    when started with ``-m``, else ``python <script> <args>``; absolute paths inside the
    current folder (or its parent) are recorded relative to it (:func:`relative_command`)."""
    argv = sys.argv if argv is None else argv
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    module = spec.name.removesuffix(".__main__") if spec is not None and spec.name else None
    program = f"python -m {module}" if module else f"python {argv[0]}"
    root = os.getcwd()
    return " ".join([program, shlex.join(relative_path_argument(a, root)
                                         for a in argv[1:])]).strip()


#: The code a run trains with: :func:`source_version` when this module was first imported
#: (the start of a ``train.*`` command), not when it writes results.json, so that a commit
#: made while a long run trains is not attributed to it.
SOURCE = source_version()


def save_run(model_dir: str, export_dir: str | None, results: dict[str, Any], model,
             save_vocabulary: Callable[[str], None]) -> str:
    """Writes ``<model_dir>/results.json`` and ``<export_dir>/{model.keras,vocab.txt}``.

    Call it on the chief only. results.json holds ``results`` and three keys added here:
    ``"model_config"`` (``model.get_config()``, every architecture option), ``"source"``
    (:data:`SOURCE`, the commit the run's code came from) and ``"command"``
    (:func:`run_command`, the command line of this process).

    Args:
        model_dir: The run's folder.
        export_dir: Where the model goes (``None``: ``<model_dir>/export``).
        results: JSON-able results (other values are written with ``str``).
        model: The trained Keras model.
        save_vocabulary: Writes the vocabulary to the path it is given.

    Returns:
        The path of ``model.keras``.
    """
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "results.json"), "w") as f:
        json.dump({**results, "model_config": model.get_config(), "source": SOURCE,
                   "command": run_command()}, f, indent=1, default=str)
    export_dir = export_dir or os.path.join(model_dir, "export")
    os.makedirs(export_dir, exist_ok=True)
    path = os.path.join(export_dir, "model.keras")
    model.save(path)
    save_vocabulary(os.path.join(export_dir, "vocab.txt"))
    return path


def training_time_line(total_seconds: float, process_seconds: float,
                       process_wall_seconds: float) -> str:
    """The closing line of a training entry point.

    ``total_seconds`` is :attr:`Trainer.train_seconds` (every process of the run),
    ``process_seconds`` the time this process spent in ``fit``; a resumed run shows both.

    Example:
    >>> training_time_line(3600.0, 600.0, 650.0)
    "Training took 3600 s over the run's processes (600 s in this one); process wall time 650 s."
    """
    line = f"Training took {total_seconds:.0f} s"
    if total_seconds - process_seconds >= 1:
        line += f" over the run's processes ({process_seconds:.0f} s in this one)"
    return line + f"; process wall time {process_wall_seconds:.0f} s."


SAVED_MODEL_LINE = "SavedModel for TF Serving: "


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
    import importlib.util

    command = [sys.executable, "-m", "train.export", "--keras_model", keras_path,
               "--export_dir", export_dir, "--model_name", model_name]
    command += [f"--{name}={value}" for name, value in options.items()]
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
