"""Atomic writes of a run's files and folders: the one way this package puts a checkpoint,
the best weights, ``model.keras``, ``results.json``, a SavedModel version or a preset on
disk. Standard library only (the exporters in :mod:`tpr_keras.export` and the presets use
it as well as :mod:`tpr_keras.training`); it parses no flags.

Every write goes to a hidden temporary name in the target's own folder
(``.<stem>-tmp-<pid>-<8 random characters><suffix>``, e.g.
``.model-tmp-4242-k2j4x9ab.keras``, ``.export-tmp-4242-0q1w2e3r``), is flushed to disk
(``fsync`` of every file, then of the folders), and only then renamed onto the target,
which is atomic on one file system: a reader (a resumed run, a model server polling the
export folder) sees the old target or the new one, never half of one. A process killed
before the rename leaves only a temporary, which :func:`remove_temporaries` recognises
(by its name, and its process being gone) and deletes.

A folder that replaces an existing one (``best/``, a preset written with
``overwrite=True``) takes two renames: the old folder steps aside to
``.<name>-old-<pid>-<random>`` and the new one takes its place. A kill between the two
leaves no target but the old folder beside it; :func:`recover_folder` (which
:func:`remove_temporaries` calls) puts the old folder back.

Testing hook: ``TPR_KERAS_TEST_KILL_AT=<point>`` (``<point>`` or ``<point>:<n>``, the
``n``-th time the point is reached; default the first) makes :func:`kill_point` send
``SIGKILL`` to its own process at that named point, so a test can kill a real training
process exactly there. Every atomic write passes the point ``mid-<label>`` after its
temporary is complete and before the rename (``mid-checkpoint``, ``mid-best``,
``mid-model``, ``mid-export``, ``mid-results``, ...); the ``train.*`` commands add
``before-results`` (everything written but ``results.json``). Unset, nothing happens;
only tests set it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable

#: The environment variable of the testing hook (:func:`kill_point`).
KILL_AT_ENV = "TPR_KERAS_TEST_KILL_AT"

#: Names of the temporaries and set-aside folders this module makes.
TEMPORARY = re.compile(r"^\..+-(?:tmp|old)-(?:(\d+)-)?[a-z0-9_]{8}(?:\.[A-Za-z0-9]+)?$")

_passed: dict[str, int] = {}


def kill_point(name: str) -> None:
    """Kills this process with ``SIGKILL`` when :data:`KILL_AT_ENV` names ``name`` (and
    this is the ``n``-th time ``name`` is reached, for ``name:n``); a test's hook, a
    no-op otherwise."""
    wanted = os.environ.get(KILL_AT_ENV)
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point != name:
        return
    _passed[name] = _passed.get(name, 0) + 1
    if _passed[name] == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def _umask() -> int:
    """The process's umask (read by setting it, then put back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _split(name: str) -> tuple[str, str]:
    """``("model", ".keras")`` of ``model.keras``; the suffix keeps writers that check it
    (``model.save``, ``np.savez``) content."""
    stem, suffix = os.path.splitext(name)
    return (stem, suffix) if stem else (name, "")


def _sync_folder(path: str) -> None:
    """``fsync`` of a folder (its entries: names renamed into it); best effort where the
    system cannot open folders."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def sync_tree(path: str) -> None:
    """``fsync`` of a file, or of every file and folder under a folder."""
    if not os.path.isdir(path):
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
        return
    for folder, _, files in os.walk(path, topdown=False):
        for name in files:
            sync_tree(os.path.join(folder, name))
        _sync_folder(folder)


def temporary_file(path: str, label: str | None = None) -> str:
    """A new, empty hidden file beside ``path`` for its next content (``label``, default
    the stem of ``path``, names it)."""
    folder, name = os.path.split(os.path.abspath(path))
    stem, suffix = _split(name)
    os.makedirs(folder, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{label or stem}-tmp-{os.getpid()}-",
                                             suffix=suffix, dir=folder)
    os.close(descriptor)
    os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it 0600; an open() would not
    return temporary


def temporary_folder(parent: str, label: str) -> str:
    """A new, empty hidden folder in ``parent``, with the permissions ``os.makedirs``
    gives (a version folder must be readable by the server's user)."""
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=f".{label}-tmp-{os.getpid()}-", dir=parent)
    os.chmod(temporary, 0o777 & ~_umask())  # mkdtemp makes it 0700
    return temporary


def write_file(path: str, write: Callable[[str], object], label: str | None = None) -> str:
    """Writes ``path`` atomically: ``write(temporary)`` fills a temporary beside it, which
    is synced and renamed onto ``path`` (kill point ``mid-<label>``). Returns ``path``.

    Example:
    >>> write_file("/tmp/run/results.json",
    ...            lambda t: open(t, "w").write("{}"), label="results")
    '/tmp/run/results.json'
    """
    label = label or _split(os.path.basename(path))[0]
    temporary = temporary_file(path, label)
    try:
        write(temporary)
        sync_tree(temporary)
        kill_point(f"mid-{label}")
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    _sync_folder(os.path.dirname(os.path.abspath(path)))
    return path


def write_text(path: str, text: str, label: str | None = None) -> str:
    """:func:`write_file` of a text (UTF-8)."""

    def write(temporary):
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)

    return write_file(path, write, label)


def write_prefix(prefix: str, write: Callable[[str], object], label: str) -> str:
    """Writes the files named ``<prefix>.*`` (a TensorFlow checkpoint: ``.index`` and
    ``.data-*``): ``write(temporary_prefix)`` fills a temporary folder beside them, which
    is synced (kill point ``mid-<label>``), then each file is renamed into place. The
    files are several, so the caller commits them afterwards by atomically writing what
    names ``prefix`` (the checkpoint state file); until then no reader looks at them, and a
    later write of the same prefix replaces them. Returns ``prefix``."""
    folder, name = os.path.split(os.path.abspath(prefix))
    temporary = temporary_folder(folder, name)
    try:
        write(os.path.join(temporary, name))
        sync_tree(temporary)
        kill_point(f"mid-{label}")
        for entry in sorted(os.listdir(temporary)):
            if entry.startswith(name + "."):
                os.replace(os.path.join(temporary, entry), os.path.join(folder, entry))
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    _sync_folder(folder)
    return prefix


def commit_folder(temporary: str, path: str, label: str, replace: bool = False) -> str:
    """Renames the complete folder ``temporary`` onto ``path`` after syncing it (kill
    point ``mid-<label>``). An existing ``path`` is an error unless ``replace``: then it
    steps aside, the new folder takes its place, and the old one is deleted.

    Raises:
        FileExistsError: ``path`` exists and ``replace`` is False.
    """
    sync_tree(temporary)
    kill_point(f"mid-{label}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(path):
        os.rename(temporary, path)  # fails when another writer took the name meanwhile
    elif not replace:
        raise FileExistsError(path)
    else:
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}-old-{os.getpid()}-",
                               dir=parent)
        os.rename(path, old)  # onto the empty folder just made
        os.rename(temporary, path)
        shutil.rmtree(old, ignore_errors=True)
    _sync_folder(parent)
    return path


def write_folder(path: str, write: Callable[[str], object], label: str | None = None,
                 replace: bool = True) -> str:
    """Writes the folder ``path`` atomically: ``write(temporary)`` fills a temporary
    folder beside it, then :func:`commit_folder`. Returns ``path``."""
    path = os.path.abspath(path)
    label = label or os.path.basename(path)
    recover_folder(path)
    temporary = temporary_folder(os.path.dirname(path), label)
    try:
        write(temporary)
        return commit_folder(temporary, path, label, replace=replace)
    finally:
        if os.path.exists(temporary):
            shutil.rmtree(temporary, ignore_errors=True)


def recover_folder(path: str) -> bool:
    """Puts back the folder ``path`` that a kill between :func:`commit_folder`'s two
    renames left set aside; True if it did."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    if os.path.exists(path) or not os.path.isdir(parent):
        return False
    pattern = re.compile(rf"^\.{re.escape(name)}-old-(\d+-)?[a-z0-9_]{{8}}$")
    for entry in sorted(os.listdir(parent)):
        if pattern.match(entry):
            os.rename(os.path.join(parent, entry), path)
            return True
    return False


def _writing(pid: str | None) -> bool:
    """True if the process that made a temporary (its ``pid``, in the name) may still be
    writing it: a live process other than this one. (Names without one were made before
    names carried it.)"""
    if not pid or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, another user's
        return True
    return True


def remove_temporaries(folder: str) -> list[str]:
    """Deletes the temporaries left in ``folder`` by killed writes (after putting back a
    folder set aside, :func:`recover_folder`); returns the paths deleted. Only names this
    module makes are touched, and not those of a live process (another run exporting to
    the same folder): a name carries the pid of the process that made it."""
    if not os.path.isdir(folder):
        return []
    removed = []
    for entry in sorted(os.listdir(folder)):
        match = re.match(r"^\.(.+)-old-(\d+-)?[a-z0-9_]{8}$", entry)
        if match:
            recover_folder(os.path.join(folder, match.group(1)))
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        match = TEMPORARY.match(entry)
        if not match or _writing(match.group(1)):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
        removed.append(path)
    return removed
