"""Task models: a trained backbone and its preprocessor, strings in and answers out.

As keras-hub pairs a backbone with its preprocessor, a task model
(``tpr_keras.models.BabiAnswerer``, ``EntailmentClassifier``, ``MathAnswerer``) holds
the trained Keras model (``.backbone``) and the Python preprocessor that turns text into
its ids (``.preprocessor``), both built from one trained preset's folder (config, weights
and ``assets/vocab.txt``, :mod:`tpr_keras.presets.preset_files`). The Python path uses
NumPy and ``keras.ops`` only, so it runs on every backend the model runs on; its
preprocessor follows the same text specification as the in-graph tokenizer of the
family's SavedModel exporter, and the tests check that both answer alike.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

from tpr_keras.presets.preset_files import PresetError, TrainedPreset, load_preset

#: The task model class of each preset task (``metadata.json``'s ``task``).
TASK_MODEL_OF_TASK = {"babi": "BabiAnswerer", "entailment": "EntailmentClassifier",
                      "math": "MathAnswerer"}


def task_model_class(task: str) -> type:
    """The task model class of ``task`` (``"babi"``, ``"entailment"`` or ``"math"``).

    Raises:
        PresetError (a ValueError): a task without a task model.
    """
    if task not in TASK_MODEL_OF_TASK:
        raise PresetError(f"no task model reads task {task!r}; the tasks are "
                          f"{sorted(TASK_MODEL_OF_TASK)}")
    return getattr(importlib.import_module("tpr_keras.models"), TASK_MODEL_OF_TASK[task])


def backbone_class(preset: TrainedPreset) -> type | None:
    """The model class a preset's ``config.json`` names, its family imported on first use
    (a name of :mod:`tpr_keras.models`); None for another name, which
    ``TrainedPreset.build_model`` then looks up among Keras' registered classes.

    The folder format (:mod:`tpr_keras.presets.preset_files`) stands below the models and
    never imports them; this is where a preset meets the model families.
    """
    return getattr(importlib.import_module("tpr_keras.models"), preset.class_name, None)


def trained_preset(preset: str | os.PathLike | TrainedPreset, task: str) -> TrainedPreset:
    """The verified preset of ``task`` (a shipped name, a folder or a loaded preset).

    Args:
        preset: ``"tpr_rnn_babi_all_tasks"``, the path of a preset folder, or a
            :class:`~tpr_keras.presets.TrainedPreset`.
        task: ``"babi"``, ``"entailment"`` or ``"math"``.

    Raises:
        PresetError (a ValueError): an unknown, incomplete or altered preset, or one of
            another task (the message names the task model that reads it).

    Example:
    >>> trained_preset("tpr_rnn_babi_all_tasks", "babi").class_name
    'TPRRNN'
    """
    if not isinstance(preset, TrainedPreset):
        preset = load_preset(preset)
    found = preset.metadata.get("task")
    if found != task:
        reader = TASK_MODEL_OF_TASK.get(found, "no task model")
        raise PresetError(f"{preset.path} is a preset of task {found!r}, not {task!r}; "
                          f"load it with {reader}.from_preset.")
    return preset


def check_texts(name: str, texts: Sequence[str]) -> list[str]:
    """``texts`` as a list of strings: one string (a batch of one) or a sequence of them.

    Raises:
        ValueError: an empty batch, or an item that is not a string (naming ``name``
            and its index).
    """
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    if not texts:
        raise ValueError(f"no {name} given: pass at least one")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"{name}[{i}] is a {type(text).__name__}, not a string")
    return texts


def check_same_length(**batches: Sequence[Any]) -> int:
    """The common length of ``batches``.

    Raises:
        ValueError: the lengths differ (the message names them).
    """
    lengths = {name: len(batch) for name, batch in batches.items()}
    if len(set(lengths.values())) != 1:
        described = ", ".join(f"{name}: {n}" for name, n in lengths.items())
        raise ValueError(f"mismatched list lengths: {described}; pass one of each per "
                         "request")
    return next(iter(lengths.values()))


class TaskModel:
    """Base of the task models: ``.backbone`` and ``.preprocessor`` from one preset.

    Subclasses set :attr:`task`, :attr:`preprocessor_class` (whose ``from_preset``
    takes a :class:`~tpr_keras.presets.TrainedPreset`) and :attr:`exporter`, the
    family's SavedModel exporter that :meth:`export` hands the task model to.
    ``TaskModel.from_preset`` itself builds the task model of the preset's task.

    Args:
        backbone: The trained Keras model.
        preprocessor: What turns its strings into the backbone's ids.

    Attributes:
        backbone: The Keras model.
        preprocessor: The preprocessor; ``tokenizer`` is the same object.
        preset: The :class:`~tpr_keras.presets.TrainedPreset` it came from, if any.

    Example:
    >>> TaskModel.from_preset("tpru32_entailment")
    EntailmentClassifier(BiDAFEntailmentModel from 'tpru32_entailment')
    """

    task = ""
    preprocessor_class: Any = None
    #: ``"module:function"`` of the family's exporter in :mod:`tpr_keras.export`,
    #: ``f(task_model, export_dir, model_name, *, version, **options)``. Imported by name
    #: on first export (as Keras' ``Model.export`` imports ``keras.export``): the exporter
    #: imports TensorFlow and the task model's own module, and stands above the models.
    exporter = ""

    def __init__(self, backbone: Any, preprocessor: Any) -> None:
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.preset: TrainedPreset | None = None

    @property
    def tokenizer(self) -> Any:
        """The preprocessor (one object turns text into ids and ids into text)."""
        return self.preprocessor

    @property
    def served_name(self) -> str:
        """The served model's default name: the preset's ``model_name``, else the task."""
        if self.preset is not None and self.preset.metadata.get("model_name"):
            return str(self.preset.metadata["model_name"])
        return self.task

    @classmethod
    def from_preset(cls, preset: str | os.PathLike | TrainedPreset, load_weights: bool = True,
                    **overrides: Any):
        """The task model of a trained preset: its weights and its vocabulary.

        On ``TaskModel`` itself, the task model class of the preset's task.

        Args:
            preset: A shipped preset's name (``python -m train.export
                --list_presets`` lists them) or the path of a preset folder.
            load_weights: False builds the preset's backbone with fresh weights (and
                the preset's vocabulary).
            **overrides: Backbone constructor arguments that replace the preset's
                (see ``TrainedPreset.build_model``).

        Raises:
            PresetError (a ValueError): an unknown, incomplete or altered preset, or a
                preset of another task.
        """
        if not cls.task:
            loaded = preset if isinstance(preset, TrainedPreset) else load_preset(preset)
            task = task_model_class(loaded.metadata.get("task"))
            return task.from_preset(loaded, load_weights=load_weights, **overrides)
        loaded = trained_preset(preset, cls.task)
        backbone = loaded.build_model(backbone_class(loaded), load_weights=load_weights,
                                      **overrides)
        model = cls(backbone, cls.preprocessor_class.from_preset(loaded))
        model.preset = loaded
        return model

    def export(self, export_dir: str | os.PathLike, model_name: str | None = None, *,
               version: int | None = None, **options: Any) -> str:
        """Writes the task model to ``<export_dir>/<model_name>/<version>/`` for TF Serving
        through its family's exporter (:attr:`exporter`; the subclasses document their
        ``options``); returns the version folder.

        Args:
            export_dir: Base folder of the export.
            model_name: The served model's name (default: :attr:`served_name`).
            version: Version number; default: one more than the largest existing one.
            **options: The family exporter's options.
        """
        if not self.exporter:
            raise NotImplementedError(f"{type(self).__name__} has no exporter")
        module, _, function = self.exporter.partition(":")
        export = getattr(importlib.import_module(module), function)
        return export(self, export_dir, model_name or self.served_name, version=version,
                      **options)

    def __repr__(self) -> str:
        source = f" from {self.preset.name!r}" if self.preset is not None else ""
        return f"{type(self).__name__}({type(self.backbone).__name__}{source})"
