"""Checkpoint I/O of the training loop: variables keyed by path, latest and best.

Variables are checkpointed by their Keras path rather than through the model's
object graph (``tf.train.Checkpoint`` silently skips sub-layers that Keras keeps
in Python lists, which would make resume and best-weights restore mix old and
new weights) and rather than by position (a refactor that reorders two
same-shaped variables would swap them silently). Checkpoints written before the
keying by path are still read, by position, with a warning.
"""

import glob
import json
import os
import re
import warnings

import numpy as np

from tpr_keras.atomic_files import (recover_folder, remove_temporaries, write_folder,
                                    write_prefix, write_text)
from tpr_keras.training.host_checkpoints import read_host_checkpoint_state

from tpr_keras.training.early_stopping import stop_reason
from tpr_keras.training.trainer_state import OPTIONAL_FIELDS


class _LazyTensorFlow:
    """``tensorflow``, imported on first use: :func:`finished_run` also serves JAX runs
    (``host_checkpoints``) on machines without TensorFlow."""

    def __getattr__(self, name):
        import tensorflow

        return getattr(tensorflow, name)


tf = _LazyTensorFlow()

#: The path Keras gives a variable made without a name: ``variable``, ``variable_1``, ...
_AUTO_NAMED = re.compile(r"variable(_\d+)?")


def variables_by_position(variables):
    """``{"v00012": variable}``: variables keyed by their position.

    The layout of checkpoints written before they were keyed by path; kept to read
    them (:meth:`Trainer.restore` falls back to it, with a warning).
    """
    return {f"v{i:05d}": variable for i, variable in enumerate(variables)}


def variables_by_path(variables, owner_prefix=False, scope=None):
    """``{"update/e1/hidden/kernel": variable}``: variables keyed by their path.

    Keras 3 paths of a model's variables name the sub-layers from the model down
    (``encoder/word_embedding/embeddings``) and are the same for every instance of
    the model, so a checkpoint finds each weight by name: reordering two variables of
    the same shape (TPRUCell's three ``d×d`` kernels) cannot swap them on restore.
    Sub-layers a model creates in ``__init__`` carry the model's own, auto-numbered
    name in front (``my_model_1/head/kernel``): ``scope=model.name`` removes it. An
    optimizer's paths start with its own auto-numbered name (``nadam_3/...``), and its
    slot names repeat the variable's path with ``_`` for ``/``: ``owner_prefix=True``
    drops the first component, and ``scope`` the model name after it. An optimizer's
    unnamed variables (Keras ``Nadam``'s ``u_product``) sit outside its scope under a
    process-wide auto-numbered name (``variable`` in a new process, ``variable_3``
    after three others were made): with ``owner_prefix`` they are keyed by their order
    among the unnamed ones instead (``variable``, ``variable_1``, ...), the keys a new
    process writes, so that a run resumes in a process that made other optimizers.

    Raises:
        ValueError: two variables share a path (the checkpoint could not tell them
            apart).
    """
    keyed = {}
    unnamed = 0
    for variable in variables:
        path = variable.path.split("/", 1)[-1] if owner_prefix else variable.path
        if owner_prefix and _AUTO_NAMED.fullmatch(variable.path):
            path = "variable" + (f"_{unnamed}" if unnamed else "")
            unnamed += 1
        if scope:
            for prefix in (scope + "/", scope + "_"):
                if path.startswith(prefix):
                    path = path[len(prefix):]
                    break
        if path in keyed:
            raise ValueError(f"two variables share the path {path!r}; give their layers "
                             "distinct names so checkpoints can tell them apart")
        keyed[path] = variable
    return keyed


def checkpoint_keys(prefix, group):
    """The variable keys under ``group`` (e.g. ``model_variables``) of a checkpoint."""
    keys = set()
    for name, _ in tf.train.list_variables(prefix):
        if name.startswith(group + "/") and name.endswith("/.ATTRIBUTES/VARIABLE_VALUE"):
            local = name[len(group) + 1:-len("/.ATTRIBUTES/VARIABLE_VALUE")]
            keys.add(local.replace(".S", "/").replace("..", "."))
    return keys


def restore_by_path(checkpoint, prefix, groups, partial=False):
    """Restores ``checkpoint`` from ``prefix``; a clear error if variable paths differ.

    ``groups``: ``{"model_variables": {path: variable}, ...}`` as the checkpoint holds them.
    """
    try:
        status = (checkpoint.read(prefix) if partial else checkpoint.restore(prefix))
        status.assert_existing_objects_matched()
        if partial:
            status.expect_partial()
    except AssertionError as error:
        lines = []
        for group, variables in groups.items():
            saved = checkpoint_keys(prefix, group)
            missing = sorted(set(variables) - saved)[:5]
            extra = sorted(saved - set(variables))[:5]
            if missing or extra:
                lines.append(f"{group}: the model has {missing} that the checkpoint lacks; "
                             f"the checkpoint has {extra} that the model lacks")
        raise ValueError(
            f"{prefix} does not match this model's variables ("
            + "; ".join(lines or [str(error)]) + "). Checkpoints are keyed by variable path; "
            "a layer named automatically (dense_3) is named differently in another process "
            "or model instance, so give layers explicit names.") from None


def written_by_position(prefix):
    """True if the checkpoint at ``prefix`` keys its variables by position."""
    names = [name for name, _ in tf.train.list_variables(prefix)]
    return any(name.startswith("model_variables/v0") for name in names)


def read_checkpoint_state(model_dir):
    """The counters of the latest checkpoint in ``<model_dir>/checkpoints`` (no model
    needed), as ``{"global_step", "epoch", "best_error", "bad_validations"}``; None
    without a checkpoint."""
    if not os.path.exists(os.path.join(model_dir, "checkpoints", "checkpoint")):
        return None
    latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    if latest is None:
        return None
    reader = tf.train.load_checkpoint(latest)

    def value(name, default):
        key = f"{name}/.ATTRIBUTES/VARIABLE_VALUE"
        return reader.get_tensor(key).item() if reader.has_tensor(key) else default

    return {"global_step": int(value("global_step", 0)), "epoch": int(value("epoch", 0)),
            "best_error": float(value("best_error", np.inf)),
            "bad_validations": int(value("bad_validations", 0)), "checkpoint": latest}


def finished_run(model_dir, config):
    """``(results, reason)`` when the run in ``model_dir`` is finished under ``config``.

    Finished means: its latest checkpoint has reached one of ``config``'s stop
    conditions (epochs or steps used up, early stopping, target error) and
    ``results.json`` was written at that step. A run stopped by the time budget, or
    killed before writing its results, is not finished; neither is one that a larger
    ``--epochs``/``--steps``/``--patience`` lets continue. Returns None otherwise.
    """
    path = os.path.join(model_dir, "results.json")
    if not os.path.exists(path):
        return None
    state = read_checkpoint_state(model_dir) or read_host_checkpoint_state(model_dir)
    if state is None:
        return None
    try:
        with open(path) as f:
            results = json.load(f)
    except (OSError, ValueError):
        return None
    if results.get("steps") != state["global_step"]:
        return None  # results.json is older than the checkpoint: evaluate and export again
    reason = stop_reason(config, state["global_step"], state["epoch"], state["best_error"],
                         state["bad_validations"])
    return None if reason is None else (results, reason)


class CheckpointFolder:
    """The latest checkpoints of a run in one folder, laid out as
    ``tf.train.CheckpointManager`` lays them out (``ckpt-<n>.index``, ``ckpt-<n>.data-*``
    and the ``checkpoint`` state file that ``tf.train.latest_checkpoint`` reads), each
    written atomically: a checkpoint's files are written and synced under a temporary
    folder and moved into place (:func:`~tpr_keras.atomic_files.write_prefix`, kill point
    ``mid-checkpoint``), then the state file, replaced atomically, names it. A process
    killed at any moment leaves the state file naming a complete checkpoint.

    Args:
        checkpoint: the ``tf.train.Checkpoint`` to write.
        directory: the folder.
        max_to_keep: the latest checkpoints kept; older ones are deleted.
    """

    STATE_FILE = "checkpoint"

    def __init__(self, checkpoint, directory, max_to_keep):
        self.checkpoint = checkpoint
        self.directory = directory
        self.max_to_keep = max_to_keep
        state = (tf.train.get_checkpoint_state(directory)
                 if os.path.exists(os.path.join(directory, self.STATE_FILE)) else None)
        self.checkpoints = [os.path.join(directory, os.path.basename(path))
                            for path in (state.all_model_checkpoint_paths if state else [])]
        self._swept = False

    def save(self, checkpoint_number):
        """Writes ``ckpt-<checkpoint_number>`` and makes it the latest; returns its prefix."""
        if not self._swept:  # the first save of this process: a killed one's leftovers
            remove_temporaries(self.directory)
            self._swept = True
        prefix = os.path.join(self.directory, f"ckpt-{int(checkpoint_number)}")
        self.checkpoint.save_counter.assign_add(1)  # as tf.train.CheckpointManager does
        write_prefix(prefix, self.checkpoint.write, label="checkpoint")
        kept = [path for path in self.checkpoints if path != prefix] + [prefix]
        dropped, self.checkpoints = kept[:-self.max_to_keep], kept[-self.max_to_keep:]
        lines = [f'model_checkpoint_path: "{os.path.basename(prefix)}"']
        lines += [f'all_model_checkpoint_paths: "{os.path.basename(path)}"'
                  for path in self.checkpoints]
        write_text(os.path.join(self.directory, self.STATE_FILE), "\n".join(lines) + "\n",
                   label="checkpoint-state")
        for path in dropped:  # after the state file stopped naming them
            for name in glob.glob(glob.escape(path) + ".*"):
                os.remove(name)
        return prefix


class CheckpointIO:
    """The checkpoints of one training run: the latest ones and the best weights.

    ``<write_dir>/checkpoints`` holds model, optimizer and ``state_variables``
    (the last ``max_to_keep``); ``<write_dir>/best/weights`` the model weights of
    the best validation. Restores read ``<read_dir>/checkpoints``: under
    multi-worker training every worker reads the chief's folder and writes its
    own temporary one.

    Args:
        model: the Keras model.
        optimizer: its built optimizer.
        state_variables: ``{name: tf.Variable}`` counters saved alongside
            (:meth:`TrainerState.variables`).
        write_dir: folder this process writes.
        read_dir: folder restores read (default ``write_dir``).
        max_to_keep: latest checkpoints kept.

    Example:
    >>> io = CheckpointIO(model, optimizer, state.variables(), "/tmp/run")
    >>> io.save(step=10)
    '/tmp/run/checkpoints/ckpt-10'
    >>> io.restore_latest()
    '/tmp/run/checkpoints/ckpt-10'
    """

    def __init__(self, model, optimizer, state_variables, write_dir, read_dir=None,
                 max_to_keep=3):
        model_variables = variables_by_path(model.variables, scope=model.name)
        self.groups = {
            "model_variables": model_variables,
            "optimizer_variables": variables_by_path(
                optimizer.variables, owner_prefix=True, scope=model.name),
        }
        self.read_dir = read_dir or write_dir
        self.state_variables = state_variables
        self.checkpoint = tf.train.Checkpoint(**self.groups, **state_variables)
        self.manager = CheckpointFolder(
            self.checkpoint, os.path.join(write_dir, "checkpoints"), max_to_keep=max_to_keep)
        self.best_checkpoint = tf.train.Checkpoint(model_variables=model_variables)
        self.best_prefix = os.path.join(write_dir, "best", "weights")
        # Checkpoints written before the keying by path: read by position.
        self.positional_groups = {
            "model_variables": variables_by_position(model.variables),
            "optimizer_variables": variables_by_position(optimizer.variables),
        }
        self.positional_checkpoint = tf.train.Checkpoint(**self.positional_groups,
                                                         **state_variables)
        self.positional_best = tf.train.Checkpoint(
            model_variables=variables_by_position(model.variables))

    def save(self, step):
        """Writes a checkpoint numbered ``step``; returns its prefix."""
        return self.manager.save(checkpoint_number=int(step))

    def latest(self):
        """The prefix of the latest checkpoint in ``<read_dir>/checkpoints``, or None."""
        return tf.train.latest_checkpoint(os.path.join(self.read_dir, "checkpoints"))

    def restore_latest(self):
        """Restores the latest checkpoint; returns its prefix, or None without one.

        Raises:
            ValueError: the checkpoint's variable paths are not this model's.
        """
        latest = self.latest()
        if latest is None:
            return None
        if written_by_position(latest):
            warnings.warn(
                f"{latest} keys its variables by position (written before checkpoints "
                "were keyed by variable path); restoring it by position, which is only "
                "right if the model's variables have not been reordered since. The "
                "next checkpoint is keyed by path.")
            checkpoint = self.positional_checkpoint
            lacking = self._lacking_optional_state(latest)
            if lacking:
                checkpoint = tf.train.Checkpoint(**self.positional_groups,
                                                 **self._state_without(lacking))
            checkpoint.restore(latest).assert_existing_objects_matched()
        else:
            checkpoint = self.checkpoint
            lacking = self._lacking_optional_state(latest)
            if lacking:
                checkpoint = tf.train.Checkpoint(**self.groups, **self._state_without(lacking))
            restore_by_path(checkpoint, latest, self.groups)
        return latest

    def _lacking_optional_state(self, prefix):
        """The optional state fields that the checkpoint at ``prefix`` was written without."""
        saved = {name.split("/")[0] for name, _ in tf.train.list_variables(prefix)}
        return {name for name in OPTIONAL_FIELDS
                if name in self.state_variables and name not in saved}

    def _state_without(self, names):
        return {k: v for k, v in self.state_variables.items() if k not in names}

    def write_best(self):
        """Saves the current model weights as the best ones: the ``best`` folder is
        replaced atomically (:func:`~tpr_keras.atomic_files.write_folder`), so its
        ``weights.index`` and ``weights.data-*`` always belong together."""
        name = os.path.basename(self.best_prefix)
        write_folder(os.path.dirname(self.best_prefix),
                     lambda folder: self.best_checkpoint.write(os.path.join(folder, name)),
                     label="best")

    def restore_best(self):
        """Loads the best weights; False if none were saved."""
        recover_folder(os.path.dirname(self.best_prefix))  # a kill mid-swap
        if not tf.io.gfile.exists(self.best_prefix + ".index"):
            return False
        if written_by_position(self.best_prefix):
            self.positional_best.read(self.best_prefix).expect_partial()
        else:
            restore_by_path(self.best_checkpoint, self.best_prefix,
                            {"model_variables": self.groups["model_variables"]}, partial=True)
        return True
