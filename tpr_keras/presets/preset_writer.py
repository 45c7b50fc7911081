"""The one writer of a preset a command makes: ``python -m train.save_preset`` (a training
run), ``python -m train.route_presets`` (a routed math model) and the checkpoint converters
(``tools/checkpoint_conversion``) all call :func:`write_preset`.

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
import os
from collections.abc import Callable, Mapping
from typing import Any

from tpr_keras.presets.preset_files import save_preset


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
                 overwrite: bool = False, **sections: Any) -> str:
    """Writes ``model`` as the preset folder ``path`` with :func:`preset_metadata`'s record.

    Args:
        model: A model of this package.
        path: The folder to write.
        task, model_name, description, headline: The fields every preset records.
        assets: ``{file name: file path or writer function}`` (``vocab.txt``, ...).
        overwrite: Replace an existing folder at ``path``.
        **sections: The rest of ``metadata.json`` (``training``, ``evaluation``, ...).

    Returns:
        The folder's absolute path.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is False.
    """
    metadata = preset_metadata(task, model_name, description, headline, **sections)
    return save_preset(model, path, assets=assets, metadata=metadata, overwrite=overwrite)


def folder_bytes(path: str | os.PathLike) -> int:
    """The size of every file under ``path`` (a written preset), in bytes."""
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names)
