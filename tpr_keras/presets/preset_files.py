"""Trained presets on disk: one folder holding a model's config, weights and assets.

The layout follows keras-hub's presets::

    <preset>/config.json          the model: {"class_name", "config"} (``get_config()``)
             model.weights.h5     the trained weights (``model.save_weights``; float16
                                  or int8 where metadata.json says ``weights_dtype``)
             assets/<file>        what turns text into ids: vocabularies
             metadata.json        format version, SHA-256 of every file above, and
                                  what the preset is (task, model name, the training
                                  command, commit, seed, data checksums, wall time,
                                  machine, the evaluation table it produced)

:func:`save_preset` writes such a folder (atomically: a half-written folder never
carries the final name) and :func:`load_preset` reads one back by name (the presets
shipped in ``tpr_keras/presets/``) or by path, verifying the format version and every
checksum before anything is built, so a truncated or altered file is an error naming
it, never a model with random or partial weights.

Importing this module does not import TensorFlow or Keras (``--list_presets`` stays fast).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from tpr_keras.atomic_files import write_folder
from tpr_keras.presets.module_claims import describe_claims
from tpr_keras.presets.weight_storage import WEIGHTS_DTYPES, keras_readable, store_weights

#: The layout version :func:`save_preset` writes; :func:`load_preset` reads this and older.
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
ASSETS_DIR = "assets"
#: The presets shipped with the package: ``tpr_keras/presets/<name>/``. This folder is
#: the one list of shipped presets: :func:`shipped_presets` reads it, and everything
#: that names the shipped presets (``TRAINED_PRESET_NAMES``, ``--list_presets``,
#: ``load_preset`` by name, the README's preset tables) derives from that.
SHIPPED_DIR = os.path.dirname(os.path.abspath(__file__))


class PresetError(ValueError):
    """A preset that cannot be used: unknown, incomplete, altered or too new."""


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def shipped_presets(task: str | None = None) -> dict[str, str]:
    """``{name: folder}`` of the trained presets in :data:`SHIPPED_DIR`, sorted by name: each
    sub-folder with a ``metadata.json`` (of ``task``, ``"babi"``, ``"math"`` or
    ``"entailment"``, when given). Read from the folder on every call."""
    if not os.path.isdir(SHIPPED_DIR):
        return {}
    found = {name: os.path.join(SHIPPED_DIR, name) for name in sorted(os.listdir(SHIPPED_DIR))
             if not name.startswith(".")  # a save in progress, or one a kill left behind
             and os.path.isfile(os.path.join(SHIPPED_DIR, name, METADATA_FILE))}
    if task is None:
        return found
    return {name: path for name, path in found.items()
            if _read_json(os.path.join(path, METADATA_FILE)).get("task") == task}


def __getattr__(name: str):
    """``TRAINED_PRESET_NAMES``: the names of :func:`shipped_presets`, a tuple read from the
    folder on each access (so it never differs from the folder)."""
    if name == "TRAINED_PRESET_NAMES":
        return tuple(shipped_presets())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe_presets(task: str | None = None) -> str:
    """One line per shipped preset (of ``task``: ``"babi"``, ``"math"``, ``"entailment"``):
    name, model class, what it scored and what it is. Reads only ``metadata.json``."""
    lines = []
    for name, path in shipped_presets(task).items():
        meta = _read_json(os.path.join(path, METADATA_FILE))
        lines.append(f"{name}  ({meta.get('class_name')}, {meta.get('task')}): "
                     f"{meta.get('headline', '')}\n    {meta.get('description', '')}")
        claims = describe_claims(meta)
        if claims:
            lines.append(f"    {claims}")
    return "\n".join(lines) if lines else "(no trained preset shipped for this task)"


@dataclasses.dataclass(frozen=True)
class TrainedPreset:
    """A verified preset folder (:func:`load_preset`).

    Attributes:
        path: The folder.
        class_name: The model class (``"TPRRNN"``, ...).
        config: The model's constructor arguments.
        metadata: ``metadata.json``: ``task``, ``model_name``, ``evaluation``, ...
    """

    path: str
    class_name: str
    config: Mapping[str, Any]
    metadata: Mapping[str, Any]

    @property
    def name(self) -> str:
        return self.metadata.get("name") or os.path.basename(os.path.normpath(self.path))

    @property
    def weights_path(self) -> str:
        return os.path.join(self.path, WEIGHTS_FILE)

    def asset_path(self, name: str) -> str:
        """Path of the asset ``name`` (e.g. ``"vocab.txt"``).

        Raises:
            PresetError: the preset has no such asset.
        """
        if f"{ASSETS_DIR}/{name}" not in self.metadata["files"]:  # verified by load_preset
            raise PresetError(f"{self.path}: the preset has no asset {name!r}; it has "
                              f"{sorted(self.metadata.get('assets', []))}.")
        return os.path.join(self.path, ASSETS_DIR, name)

    def build_model(self, model_class: type | None = None, load_weights: bool = True,
                    **overrides: Any):
        """The model with the preset's config (updated with ``overrides``) and weights.

        Args:
            model_class: The class to build; default: the class that ``config.json``
                names, as registered with Keras (``tpr_keras>NAME``: importing its
                family registers it, :mod:`tpr_keras.models.all_families` registers
                every one). A class of another name is an error. The folder format
                stands below the models, so this module never imports them.
            load_weights: False leaves the model's weights as built (untrained): the
                preset's architecture only.
            **overrides: Constructor arguments that replace the preset's (for example
                ``implementation="recurrent"``); ones that change a weight's shape make
                loading the weights fail.
        """
        import keras

        if model_class is None:
            model_class = keras.saving.get_registered_object(f"tpr_keras>{self.class_name}")
        elif model_class.__name__ != self.class_name:
            raise PresetError(f"{self.path} holds a {self.class_name}, not a "
                              f"{model_class.__name__}; load it with "
                              f"{self.class_name}.from_preset.")
        if model_class is None:
            raise PresetError(f"{os.path.join(self.path, CONFIG_FILE)}: model class "
                              f"{self.class_name!r} is not registered with Keras; import "
                              "its family (tpr_keras.models.all_families registers every "
                              "one) or pass model_class.")
        config = dict(self.config)
        config.update({k: v for k, v in overrides.items() if v is not None})
        model = model_class.from_config(config)
        if not load_weights:
            return model
        try:
            with keras_readable(self.weights_path) as weights:  # int8 ones dequantised
                model.load_weights(weights)
        except ValueError as error:
            raise PresetError(f"{self.weights_path}: the weights do not fit the model "
                              f"built from {CONFIG_FILE} and the overrides "
                              f"{sorted(overrides)}: {error}") from error
        return model


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise PresetError(f"{path}: missing; not a complete preset folder.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PresetError(f"{path}: not valid JSON ({error}).") from None
    if not isinstance(value, dict):
        raise PresetError(f"{path}: expected a JSON object.")
    return value


def resolve_preset_path(name_or_path: str | os.PathLike, hint: str | None = None) -> str:
    """The folder of a shipped preset's name, or ``name_or_path`` if it holds a preset.

    Args:
        name_or_path: A shipped preset's name or a folder.
        hint: What the caller adds to the unknown-name message (a model class points
            to its ``from_paper_size``).

    Raises:
        PresetError: neither; the message lists the shipped presets (and ``hint``).
    """
    value = os.fspath(name_or_path)
    shipped = shipped_presets()
    if value in shipped:
        return shipped[value]
    if os.path.isdir(value):
        if not os.path.isfile(os.path.join(value, METADATA_FILE)):
            raise PresetError(f"{value}: not a preset folder (no {METADATA_FILE}).")
        return value
    names = sorted(shipped)
    message = (f"Unknown preset {value!r}. Trained presets: {', '.join(names) or 'none'}; "
               "or the path of a preset folder.")
    raise PresetError(message + (f" {hint}" if hint else ""))


def load_preset(name_or_path: str | os.PathLike, hint: str | None = None) -> TrainedPreset:
    """Reads and verifies a preset folder (a shipped name or a path).

    Checks, before anything is built: ``metadata.json``'s ``format_version`` is at most
    :data:`FORMAT_VERSION`, its ``weights_dtype`` (if any) is one this package reads, and
    every file it lists (config, weights, assets) exists and has the SHA-256 it records.

    Args:
        name_or_path: A shipped preset's name or a folder.
        hint: Added to the message of an unknown name (see :func:`resolve_preset_path`).

    Raises:
        PresetError: an unknown name (listing the available ones), a missing file, a
            format version or weights dtype newer than this package reads, or a checksum
            that differs (the message names the file and the expected value).
    """
    path = resolve_preset_path(name_or_path, hint)
    metadata_path = os.path.join(path, METADATA_FILE)
    metadata = _read_json(metadata_path)
    version = metadata.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise PresetError(f"{metadata_path}: format_version must be a positive integer, "
                          f"got {version!r}.")
    if version > FORMAT_VERSION:
        raise PresetError(f"{metadata_path}: format_version {version} is newer than this "
                          f"tpr-keras reads (at most {FORMAT_VERSION}); upgrade tpr-keras.")
    files = metadata.get("files")
    if not isinstance(files, dict) or WEIGHTS_FILE not in files or CONFIG_FILE not in files:
        raise PresetError(f"{metadata_path}: 'files' must map {CONFIG_FILE}, {WEIGHTS_FILE} "
                          "and the assets to their SHA-256.")
    if metadata.get("weights_dtype", "float32") not in WEIGHTS_DTYPES:
        raise PresetError(f"{metadata_path}: weights_dtype {metadata['weights_dtype']!r} is "
                          f"not one this tpr-keras reads {WEIGHTS_DTYPES}; upgrade tpr-keras.")
    for relative in files:
        head, _, name = relative.partition("/")
        inside = relative in (CONFIG_FILE, WEIGHTS_FILE) or (
            head == ASSETS_DIR and name not in ("", ".", "..") and "/" not in name)
        if not inside:
            raise PresetError(f"{metadata_path}: 'files' lists {relative!r}; a preset holds "
                              f"only {CONFIG_FILE}, {WEIGHTS_FILE} and {ASSETS_DIR}/<name>.")
    for relative, expected in sorted(files.items()):
        file_path = os.path.join(path, relative)
        if not os.path.isfile(file_path):
            raise PresetError(f"{file_path}: missing (listed in {METADATA_FILE}).")
        actual = sha256_file(file_path)
        if actual != expected:
            raise PresetError(f"{file_path}: SHA-256 {actual} differs from the expected "
                              f"{expected} ({METADATA_FILE}): the file is truncated or "
                              "altered; fetch the preset again.")
    config = _read_json(os.path.join(path, CONFIG_FILE))
    if not isinstance(config.get("class_name"), str) or not isinstance(
            config.get("config"), dict):
        raise PresetError(f"{os.path.join(path, CONFIG_FILE)}: expected "
                          "{'class_name': ..., 'config': {...}}.")
    return TrainedPreset(path=path, class_name=config["class_name"],
                         config=config["config"], metadata=metadata)


def save_preset(model, path: str | os.PathLike,
                assets: Mapping[str, str | os.PathLike | Callable[[str], None]] | None = None,
                metadata: Mapping[str, Any] | None = None, overwrite: bool = False,
                weights_dtype: str = "float32") -> str:
    """Writes ``model`` as a preset folder at ``path``; returns the path.

    Args:
        model: A model of this package (``get_config()`` round-trips).
        path: The folder to create.
        assets: ``{file name: source}``; a source is a file to copy or a function
            that writes the file at the path it is given (``vocab.save``).
        metadata: What to record beside the files (task, model_name, command, ...).
        overwrite: Replace an existing preset folder at ``path``.
        weights_dtype: How the weights file stores them: ``"float32"`` (Keras' file),
            ``"float16"`` (half the bytes) or ``"int8"`` (quantised matrices, the rest
            float16; in both the model's weights must already be rounded,
            :mod:`tpr_keras.presets.weight_storage`); recorded in ``metadata.json`` when
            not float32.

    The folder is written under a temporary name beside ``path``, synced and renamed
    into place (:func:`~tpr_keras.atomic_files.write_folder`; kill point
    ``mid-preset``), so an error or a kill leaves nothing at ``path``, or the old
    preset when replacing one.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is False.
        ValueError: an asset name that is not a plain file name, an unknown
            ``weights_dtype``, or weights it cannot hold exactly.
    """
    if weights_dtype not in WEIGHTS_DTYPES:
        raise ValueError(f"weights_dtype must be one of {WEIGHTS_DTYPES}, "
                         f"got {weights_dtype!r}")
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} already exists; pass overwrite=True to replace it.")
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def write(tmp):
        config = {"class_name": type(model).__name__, "config": model.get_config()}
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=1, sort_keys=True)
        model.save_weights(os.path.join(tmp, WEIGHTS_FILE))
        store_weights(os.path.join(tmp, WEIGHTS_FILE), weights_dtype)
        names = []
        for name, source in sorted((assets or {}).items()):
            if not name or os.path.basename(name) != name or name.startswith("."):
                raise ValueError(f"asset names are plain file names, got {name!r}")
            target = os.path.join(tmp, ASSETS_DIR, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if callable(source):
                source(target)
            else:
                shutil.copyfile(source, target)
            names.append(name)
        files = [CONFIG_FILE, WEIGHTS_FILE] + [f"{ASSETS_DIR}/{n}" for n in names]
        record = dict(metadata or {})
        if weights_dtype != "float32":
            record["weights_dtype"] = weights_dtype
        record.update(format_version=FORMAT_VERSION, name=os.path.basename(path),
                      class_name=config["class_name"], assets=names,
                      files={f: sha256_file(os.path.join(tmp, f)) for f in files})
        with open(os.path.join(tmp, METADATA_FILE), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, default=str)  # tables keep their row order
            f.write("\n")

    return write_folder(path, write, label="preset", replace=True)
