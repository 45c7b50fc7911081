"""The one writer of a preset a command makes: ``python -m train.save_preset`` (a training
run), ``python -m train.route_presets`` (a routed math model) and the checkpoint converters
(``tools/checkpoint_conversion``) all call :func:`write_preset`; a command that adds a
measured section to a written preset (``python -m train.claim_modules``: ``claims``) calls
:func:`add_sections`, which leaves the model's files as they are.

Every preset's ``metadata.json`` opens with the same five fields, in this order: ``task``,
``model_name`` (the served name), ``description``, ``headline`` (one line of what it
scores) and ``created`` (UTC, to the second); what only one kind of preset records
(``training``, ``evaluation``, ``conversion``, ...) follows as the caller gives it. The
folder is written by :func:`~tpr_keras.presets.preset_files.save_preset`, atomically
(:mod:`tpr_keras.atomic_files`). The library parses no flags: the commands pass values.

Importing this module does not import TensorFlow or Keras.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from tpr_keras.atomic_files import write_text
from tpr_keras.presets.preset_files import METADATA_FILE, load_preset, save_preset

#: ``metadata.json``'s fields that describe the folder's files (written by
#: :func:`~tpr_keras.presets.preset_files.save_preset`, last; ``weights_dtype`` only when it
#: is not float32): a section never replaces them.
FILE_FIELDS = ("weights_dtype", "format_version", "name", "class_name", "assets", "files")


def preset_metadata(task: str, model_name: str, description: str, headline: str,
                    **sections: Any) -> dict[str, Any]:
    """``metadata.json``'s fields: the five every preset has, then ``sections`` in order.

    Example:
    >>> sorted(preset_metadata("babi", "babi", "", "converted", conversion={}))
    ['conversion', 'created', 'description', 'headline', 'model_name', 'task']
    """
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return {"task": task, "model_name": model_name, "description": description,
            "headline": headline, "created": created, **sections}


def write_preset(model, path: str | os.PathLike, *, task: str, model_name: str,
                 description: str, headline: str,
                 assets: Mapping[str, str | os.PathLike | Callable[[str], None]],
                 overwrite: bool = False, weights_dtype: str = "float32",
                 **sections: Any) -> str:
    """Writes ``model`` as the preset folder ``path`` with :func:`preset_metadata`'s record.

    Args:
        model: A model of this package.
        path: The folder to write.
        task, model_name, description, headline: The fields every preset records.
        assets: ``{file name: file path or writer function}`` (``vocab.txt``, ...).
        overwrite: Replace an existing folder at ``path``.
        weights_dtype: ``"float32"``, ``"float16"`` (half the bytes) or ``"int8"``
            (quantised matrices): round the model first
            (:func:`~tpr_keras.presets.weight_storage.round_weights`) and evaluate the
            rounded model.
        **sections: The rest of ``metadata.json`` (``training``, ``evaluation``, ...).

    Returns:
        The folder's absolute path.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is False.
    """
    metadata = preset_metadata(task, model_name, description, headline, **sections)
    return save_preset(model, path, assets=assets, metadata=metadata, overwrite=overwrite,
                       weights_dtype=weights_dtype)


def add_sections(path: str | os.PathLike, **sections: Any) -> dict[str, Any]:
    """Adds (or replaces) ``sections`` of a written preset's ``metadata.json``, before the
    fields that describe its files; returns the new record.

    The preset is loaded first (its files must match their recorded SHA-256) and the file
    is replaced atomically: a kill leaves the old record or the new one. The model's files
    are not touched.

    Raises:
        PresetError: not a complete, unaltered preset folder.
        ValueError: a section named as one of :data:`FILE_FIELDS` or the five every preset
            opens with.
    """
    reserved = set(FILE_FIELDS) | {"task", "model_name", "description", "headline", "created"}
    clash = sorted(reserved & set(sections))
    if clash:
        raise ValueError(f"{', '.join(clash)}: fields of every preset, not sections to add")
    metadata = load_preset(os.fspath(path)).metadata
    record = {k: v for k, v in metadata.items() if k not in FILE_FIELDS and k not in sections}
    record.update(sections)
    record.update({k: metadata[k] for k in FILE_FIELDS if k in metadata})
    write_text(os.path.join(os.fspath(path), METADATA_FILE),
               json.dumps(record, indent=1, default=str) + "\n", label="preset metadata")
    return record


def folder_bytes(path: str | os.PathLike) -> int:
    """The size of every file under ``path`` (a written preset), in bytes."""
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names)
