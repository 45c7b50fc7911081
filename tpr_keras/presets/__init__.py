"""Trained presets: the folder format (:mod:`.preset_files`) and the presets shipped here.

Each sub-folder ``tpr_keras/presets/<name>/`` is one trained preset (config, weights,
vocabulary, metadata); ``<Model>.from_preset("<name>")`` loads it.
"""

from tpr_keras.presets.preset_files import (  # noqa: F401
    FORMAT_VERSION,
    TRAINED_PRESET_NAMES,
    PresetError,
    TrainedPreset,
    load_preset,
    save_preset,
    sha256_file,
    shipped_presets,
)
