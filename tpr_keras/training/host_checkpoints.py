"""Checkpoints of a run as numpy files, for trainers without TensorFlow (JAX).

``<dir>/checkpoints/ckpt-<step>.npz`` holds every model weight, every optimizer
variable and the :class:`~tpr_keras.training.trainer_state.TrainerState` counters; the last
``max_to_keep`` stay. ``<dir>/best/weights.npz`` holds the best validation weights.
Files are written to a temporary name, synced and renamed
(:func:`~tpr_keras.atomic_files.write_file`), so a crash never leaves half a checkpoint.
"""

import glob
import os
import re

import keras
import numpy as np

from tpr_keras.atomic_files import write_file

_NAME = re.compile(r"ckpt-(\d+)\.npz$")


def _checkpoint_files(model_dir):
    """``[(step, path)]`` of the checkpoints in ``<model_dir>/checkpoints``, oldest first."""
    found = []
    for path in glob.glob(os.path.join(model_dir, "checkpoints", "ckpt-*.npz")):
        match = _NAME.search(path)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def _write(path, arrays, label):
    """``np.savez`` of ``arrays`` at ``path``, atomically (kill point ``mid-<label>``)."""
    write_file(path, lambda temporary: np.savez(temporary, **arrays), label=label)


def _assign(variables, arrays, prefix, path):
    """Assigns ``arrays[prefix/i]`` to ``variables[i]``; a clear error on a mismatch."""
    stored = sum(1 for key in arrays if key.startswith(prefix + "/"))
    if stored != len(variables):
        raise ValueError(f"{path} holds {stored} {prefix} variables; this run has "
                         f"{len(variables)}: it was written by a different model or "
                         "optimizer configuration.")
    for i, variable in enumerate(variables):
        value = arrays[f"{prefix}/{i}"]
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"{path}: {prefix} variable {i} ({variable.path}) has shape "
                             f"{tuple(variable.shape)} here and {value.shape} in the file: "
                             "written by a different model configuration.")
        variable.assign(value)


def read_host_checkpoint_state(model_dir):
    """The counters of the latest numpy checkpoint, as
    :func:`~tpr_keras.training.checkpoints.read_checkpoint_state` gives them for
    TensorFlow checkpoints; None without one."""
    files = _checkpoint_files(model_dir)
    if not files:
        return None
    with np.load(files[-1][1]) as arrays:
        def value(name, default):
            key = f"state/{name}"
            return arrays[key].item() if key in arrays else default

        return {"global_step": int(value("global_step", 0)), "epoch": int(value("epoch", 0)),
                "best_error": float(value("best_error", np.inf)),
                "bad_validations": int(value("bad_validations", 0)),
                "checkpoint": files[-1][1]}


class HostCheckpoints:
    """The checkpoints of one run: the latest ones and the best weights (numpy files).

    The same interface as :class:`~tpr_keras.training.checkpoints.CheckpointIO`
    (``save``, ``latest``, ``restore_latest``, ``write_best``, ``restore_best``).

    Args:
        model: the Keras model (all its weights are saved, non-trainable included).
        optimizer: its built optimizer.
        state: the :class:`~tpr_keras.training.trainer_state.TrainerState` (host counters).
        write_dir: where checkpoints go; also read from.
        max_to_keep: how many of the latest checkpoints stay.
    """

    def __init__(self, model, optimizer, state, write_dir, max_to_keep=3):
        self.model = model
        self.optimizer = optimizer
        self.state = state
        self.write_dir = write_dir
        self.max_to_keep = max_to_keep
        self.best_path = os.path.join(write_dir, "best", "weights.npz")

    def save(self, step):
        arrays = {f"model/{i}": keras.ops.convert_to_numpy(v)
                  for i, v in enumerate(self.model.weights)}
        arrays.update({f"optimizer/{i}": keras.ops.convert_to_numpy(v)
                       for i, v in enumerate(self.optimizer.variables)})
        arrays.update({f"state/{name}": variable.numpy()
                       for name, variable in self.state.variables().items()})
        path = os.path.join(self.write_dir, "checkpoints", f"ckpt-{int(step)}.npz")
        _write(path, arrays, "checkpoint")
        for _, old in _checkpoint_files(self.write_dir)[:-self.max_to_keep]:
            os.remove(old)
        return path

    def latest(self):
        files = _checkpoint_files(self.write_dir)
        return files[-1][1] if files else None

    def restore_latest(self):
        path = self.latest()
        if path is None:
            return None
        with np.load(path) as arrays:
            _assign(self.model.weights, arrays, "model", path)
            _assign(self.optimizer.variables, arrays, "optimizer", path)
            for name, variable in self.state.variables().items():
                if f"state/{name}" in arrays:
                    variable.assign(arrays[f"state/{name}"])
        return path

    def write_best(self):
        _write(self.best_path, {f"model/{i}": keras.ops.convert_to_numpy(v)
                                for i, v in enumerate(self.model.weights)}, "best")

    def restore_best(self):
        if not os.path.exists(self.best_path):
            return False
        with np.load(self.best_path) as arrays:
            _assign(self.model.weights, arrays, "model", self.best_path)
        return True
