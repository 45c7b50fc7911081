"""Sittings: one training run carried across machines through a committed folder.

A *sitting* is one uninterrupted stretch of a run on one machine (here at most a few hours,
ended by ``--max_train_minutes``). ``--sitting_dir DIR`` names a folder meant to be
committed with the code: when a sitting ends, :func:`pack` writes the run's state into it
in a compact form, and the same command on a fresh clone on another machine, whose
``--model_dir`` holds nothing yet, starts with :func:`unpack` and resumes exactly where the
last sitting stopped (model weights, optimizer slots, step and epoch counters, hence the
position in the data order and the learning-rate schedule, best validation weights and
error, the epoch history). ``DIR`` holds:

- ``checkpoint/``: the run's latest checkpoint only (the ``checkpoints/`` files one
  ``ckpt-<step>`` names, and the state file naming it), and ``best/``: the best
  validation weights; no TensorBoard logs, no older checkpoints, no export;
- ``history.json``, ``validation.json``: the loop's per-epoch records and its held-out
  validation questions, as the run keeps them in ``--model_dir``;
- ``sittings.json``: one record per sitting (the commit and machine it ran on, the steps
  it started and ended at, its wall and training seconds, its command), and the SHA-256
  of every packed file, checked by :func:`unpack`; ``results.json`` repeats the records
  as ``sittings``.

The data must be the same on every machine: a task that can name its data files
(``data_files()``) has their digests recorded (:func:`data_fingerprint`), and a sitting whose data differs is
refused rather than resumed on other questions.
"""

import datetime
import hashlib
import json
import os
import shutil

from tpr_keras.atomic_files import recover_folder, write_folder
from tpr_keras.training.checkpoints import read_checkpoint_state
from tpr_keras.training.host_checkpoints import read_host_checkpoint_state

SITTINGS_FILE = "sittings.json"
#: The run's files that travel besides the checkpoint and the best weights.
RECORDS = ("history.json", "validation.json")


class SittingError(ValueError):
    """A sitting folder that cannot be resumed (damaged, other data, other run)."""


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_sittings(sitting_dir):
    """``sittings.json`` of ``sitting_dir`` (``{"sittings": [], "files": {}}`` when absent)."""
    path = os.path.join(sitting_dir, SITTINGS_FILE)
    if not os.path.exists(path):
        return {"sittings": [], "files": {}}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except ValueError as error:
        raise SittingError(f"{path}: not valid JSON ({error})") from None


def latest_checkpoint_files(model_dir):
    """``(prefix name, [file names])`` of the latest checkpoint in
    ``<model_dir>/checkpoints`` (a TensorFlow ``ckpt-N.index``/``.data-*`` pair named by the
    ``checkpoint`` state file, or a JAX run's ``ckpt-N.npz``); None without one."""
    folder = os.path.join(model_dir, "checkpoints")
    if not os.path.isdir(folder):
        return None
    state = os.path.join(folder, "checkpoint")
    if os.path.exists(state):
        with open(state, encoding="utf-8") as f:
            first = f.readline()
        name = first.split('"')[1] if '"' in first else None
        files = sorted(entry for entry in os.listdir(folder)
                       if name and entry.startswith(name + "."))
        return (name, files) if files else None
    npz = sorted((int(entry[5:-4]), entry) for entry in os.listdir(folder)
                 if entry.startswith("ckpt-") and entry.endswith(".npz"))
    return (npz[-1][1][:-4], [npz[-1][1]]) if npz else None


def _copy_run(model_dir, out):
    """Copies the packed files of the run in ``model_dir`` into the folder ``out``."""
    name, files = latest_checkpoint_files(model_dir)
    os.makedirs(os.path.join(out, "checkpoint"))
    for entry in files:
        shutil.copy2(os.path.join(model_dir, "checkpoints", entry),
                     os.path.join(out, "checkpoint", entry))
    if not files[0].endswith(".npz"):
        with open(os.path.join(out, "checkpoint", "checkpoint"), "w", encoding="utf-8") as f:
            f.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')
    if os.path.isdir(os.path.join(model_dir, "best")):
        shutil.copytree(os.path.join(model_dir, "best"), os.path.join(out, "best"))
    for record in RECORDS:
        if os.path.exists(os.path.join(model_dir, record)):
            shutil.copy2(os.path.join(model_dir, record), os.path.join(out, record))


def _packed_files(folder):
    """``{relative path: sha256}`` of every file under ``folder`` but ``sittings.json``."""
    found = {}
    for root, _, names in os.walk(folder):
        for entry in names:
            path = os.path.join(root, entry)
            relative = os.path.relpath(path, folder)
            if relative != SITTINGS_FILE:
                found[relative] = _sha256(path)
    return dict(sorted(found.items()))


def pack(sitting_dir, model_dir, record, data=None):
    """Writes the state of the run in ``model_dir`` into ``sitting_dir`` and appends
    ``record`` (this sitting: commit, machine, steps, seconds) to its ``sittings.json``;
    returns every record. The folder is written beside the old one and swapped in
    (:func:`tpr_keras.atomic_files.write_folder`), so a kill while packing leaves the
    previous sitting's folder whole (or set aside, and put back by the next write).

    Raises:
        SittingError: ``model_dir`` holds no checkpoint.
    """
    if latest_checkpoint_files(model_dir) is None:
        raise SittingError(f"{model_dir}: no checkpoint to pack into {sitting_dir}")
    previous = read_sittings(sitting_dir)
    manifest = {"sittings": previous["sittings"] + [record]}

    def write(out):
        _copy_run(model_dir, out)
        manifest.update(files=_packed_files(out),
                        data=data if data is not None else previous.get("data"))
        with open(os.path.join(out, SITTINGS_FILE), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")

    os.makedirs(os.path.dirname(os.path.abspath(sitting_dir)), exist_ok=True)
    write_folder(sitting_dir, write, label="sitting", replace=True)
    return manifest["sittings"]


def unpack(sitting_dir, model_dir):
    """Puts the last sitting's state from ``sitting_dir`` into ``model_dir`` when
    ``model_dir`` holds no checkpoint yet; returns the sitting records (empty when there
    is nothing to resume from, or ``model_dir`` already has its own checkpoint, which
    is then resumed as any restarted run).

    Raises:
        SittingError: a packed file is missing or its digest differs from the one
            recorded.
    """
    recover_folder(sitting_dir)  # a pack killed mid-swap set the last one aside
    manifest = read_sittings(sitting_dir)
    if not manifest["sittings"] or latest_checkpoint_files(model_dir) is not None:
        return manifest["sittings"]
    for relative, digest in manifest["files"].items():
        path = os.path.join(sitting_dir, relative)
        if not os.path.exists(path):
            raise SittingError(f"{sitting_dir}: {relative} is missing; the folder is "
                               "incomplete (was every file committed?)")
        if _sha256(path) != digest:
            raise SittingError(f"{path}: its SHA-256 differs from the one in "
                               f"{SITTINGS_FILE}; the file is damaged (a Git LFS pointer or "
                               "a partial checkout?)")
    os.makedirs(os.path.join(model_dir, "checkpoints"), exist_ok=True)
    for entry in os.listdir(os.path.join(sitting_dir, "checkpoint")):
        shutil.copy2(os.path.join(sitting_dir, "checkpoint", entry),
                     os.path.join(model_dir, "checkpoints", entry))
    if os.path.isdir(os.path.join(sitting_dir, "best")):
        shutil.copytree(os.path.join(sitting_dir, "best"), os.path.join(model_dir, "best"),
                        dirs_exist_ok=True)
    for record in RECORDS:
        if os.path.exists(os.path.join(sitting_dir, record)):
            shutil.copy2(os.path.join(sitting_dir, record), os.path.join(model_dir, record))
    return manifest["sittings"]


def check_data(sitting_dir, data):
    """Raises :class:`SittingError` when ``data`` (:func:`data_fingerprint` of the files
    this process trains on) differs from the fingerprint the sittings recorded."""
    recorded = read_sittings(sitting_dir).get("data")
    if data is None or recorded is None or recorded == data:
        return
    changed = sorted(name for name in set(data) | set(recorded)
                     if data.get(name) != recorded.get(name))
    raise SittingError(f"{sitting_dir}: the training data differs from the earlier "
                       f"sittings' ({len(changed)} file(s), e.g. {changed[:3]}); resume with "
                       "the data the run was trained on (its sittings record the commands)")


def sitting_record(source, machine, command, start_step, end_step, wall_seconds,
                   train_seconds):
    """One entry of ``sittings``: where and how long this process trained."""
    return {"commit": (source or {}).get("commit"), "dirty": (source or {}).get("dirty"),
            "machine": machine, "command": command, "start_step": int(start_step),
            "end_step": int(end_step), "steps": int(end_step) - int(start_step),
            "wall_seconds": round(wall_seconds, 1), "train_seconds": round(train_seconds, 1),
            "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def checkpoint_step(model_dir):
    """The step of the latest checkpoint in ``model_dir`` (0 without one): where a process
    that resumes the run starts."""
    state = read_checkpoint_state(model_dir) or read_host_checkpoint_state(model_dir)
    return state["global_step"] if state else 0


def data_fingerprint(paths):
    """``{file name: sha256}`` of the data files ``paths`` (named relative to their
    common folder, so that the same data in another place has the same fingerprint)."""
    paths = sorted(paths)
    if not paths:
        return {}
    root = os.path.commonpath([os.path.dirname(path) for path in paths])
    return {os.path.relpath(path, root): _sha256(path) for path in paths}
