"""Trained presets: the folder format (:mod:`.preset_files`) and the presets shipped here.

Each sub-folder ``tpr_keras/presets/<name>/`` is one trained preset (config, weights,
vocabulary, metadata); ``<Model>.from_preset("<name>")`` loads it. The folder is the one
list of shipped presets: :func:`shipped_presets` and ``TRAINED_PRESET_NAMES`` (its names,
read on each access) come from it.
"""

from tpr_keras.presets import preset_files
from tpr_keras.presets.preset_files import (  # noqa: F401
    FORMAT_VERSION,
    PresetError,
    TrainedPreset,
    load_preset,
    save_preset,
    sha256_file,
    shipped_presets,
)


def __getattr__(name: str):
    """``TRAINED_PRESET_NAMES``: :data:`preset_files.TRAINED_PRESET_NAMES`, read on access."""
    if name == "TRAINED_PRESET_NAMES":
        return preset_files.TRAINED_PRESET_NAMES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
