"""Shared pieces of the fixture generators: loading a module of the authors' code from
its path, the authors' commit, and writing a fixture (``.npz`` + ``.json``)."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np


def load_module(path, name, root=None):
    """Imports the Python file ``path`` as module ``name``, with ``root`` (the checkout)
    first on ``sys.path`` so that its own imports (``utils.lib`` ...) resolve."""
    if root is not None and root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def authors_commit(checkout, given=None):
    """The commit of ``checkout``: ``given`` when passed (a ``git archive`` work tree has
    no ``.git``), else ``git rev-parse HEAD`` there, else ``"unknown"``."""
    if given:
        return given
    try:
        done = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=30)
    except OSError:
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def read_pairs(path, count):
    """The first ``count`` (question, answer) pairs of a Mathematics Dataset file
    (alternate lines, newlines removed, as the authors' ``process_dm_math.py`` does)."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        while len(pairs) < count:
            question, answer = f.readline(), f.readline()
            if not answer:
                raise ValueError(f"{path} holds fewer than {count} pairs.")
            pairs.append((question.replace("\n", ""), answer.replace("\n", "")))
    return pairs


def write_fixture(out, arrays, metadata):
    """Writes ``out`` (compressed ``.npz``, float64 stored as float32) and
    ``out`` with ``.json`` for ``.npz`` (metadata, sorted keys). Returns the size in bytes."""
    arrays = {k: (v.astype(np.float32) if v.dtype == np.float64 else v)
              for k, v in ((k, np.asarray(v)) for k, v in arrays.items())}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    np.savez_compressed(out, **arrays)
    metadata = dict(metadata, command=" ".join(["python", "-m"] + [metadata["module"]]
                                               + sys.argv[1:]))
    with open(os.path.splitext(out)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=1, sort_keys=True)
        f.write("\n")
    return os.path.getsize(out)
