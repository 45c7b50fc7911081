"""What a training run leaves behind (model.keras, vocab.txt, then results.json, each
written atomically) and the provenance it records: the source commit and the command
line. Flag-free: the ``train.*`` commands use it, and so can a script or a benchmark."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from tpr_keras.atomic_files import write_file, write_text


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


def shareable_command(command: str) -> str:
    """``command`` as a reader of a shipped record runs it: the data folder is the
    placeholder ``DIR`` (``--data_dir=DIR``), since no user's clone has the folder the run
    read; other paths are made relative (:func:`relative_command`).

    Example:
    >>> shareable_command("python -m train.babi --data_dir ../shared/data/babi --task 1")
    'python -m train.babi --data_dir=DIR --task 1'
    """
    command = relative_command(command)
    return re.sub(r"--data_dir(=|\s+)(\'[^\']*\'|\S+)", "--data_dir=DIR", command)


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
    (``model.get_config()``, every architecture option), ``"source"`` (:data:`SOURCE`, the
    commit the run's code came from) and ``"command"`` (:func:`run_command`, the command
    line of this process). Values JSON cannot hold are written with ``str``.
    """
    os.makedirs(model_dir, exist_ok=True)
    record = {**results, "model_config": model.get_config(), "source": SOURCE,
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
