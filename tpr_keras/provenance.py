"""Where a run's results came from: the source commit and the command line, as a run's
results.json and a preset's metadata record them. Flag-free: the ``train.*`` commands use
it, and so can a script or a benchmark. Importing it runs nothing; git runs when
:func:`source_version` or :func:`run_source` is called."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
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


@functools.cache
def run_source() -> dict[str, Any] | None:
    """The code this process runs: :func:`source_version` of this package the first time
    it is called, the same record after. A ``train.*`` command calls it at its start, so
    that a commit made while a long run trains is not attributed to the run's
    results.json, written at its end."""
    return source_version()
