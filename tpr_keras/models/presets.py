"""The preset mechanism every model family shares: one ``from_preset``, one lookup.

A size preset names a configuration from a paper: the constructor arguments that set
the model's sizes (:attr:`Preset.config`) and, for the families trained by a
``train.*`` command, the paper's training recipe (:attr:`Preset.recipe`: the
optimizer and its hyper-parameters), which the command reads instead of
restating it.

A trained preset is a folder of config, weights and assets
(:mod:`tpr_keras.presets.preset_files`): ``from_preset`` loads one by its shipped name
or its path, and ``save_to_preset`` writes a trained model as one.
"""

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from tpr_keras.presets.preset_files import load_preset, save_preset


def has_gpu(devices):
    """Whether any of ``devices`` is a GPU: what a preset or recipe ``"auto"`` decides on.

    Args:
        devices: ``tf.config.list_physical_devices()`` or device-type strings
            (``"CPU"``, ``"GPU"``).

    Example:
    >>> has_gpu(["CPU", "GPU"]), has_gpu(["CPU"])
    (True, False)
    """
    return "GPU" in {str(getattr(d, "device_type", d)).upper() for d in devices}


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named configuration: model sizes and the training recipe that goes with them.

    Attributes:
        config: constructor arguments of the model (``None`` values mean "the
            model's default", e.g. a width equal to the vocabulary size).
        recipe: training hyper-parameters (``optimizer``, ``learning_rate``,
            ``batch_size``, ...); empty when the paper gives none.
        description: one line: the paper and section the numbers come from.

    Example:
    >>> Preset({"embedding_dim": 20}, {"batch_size": 32}).config["embedding_dim"]
    20
    """

    config: Mapping = dataclasses.field(default_factory=dict)
    recipe: Mapping = dataclasses.field(default_factory=dict)
    description: str = ""

    def __post_init__(self):
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))
        object.__setattr__(self, "recipe", MappingProxyType(dict(self.recipe)))


def _lookup(presets, preset):
    if preset not in presets:
        raise ValueError(f"Unknown preset {preset!r}; choose from {sorted(presets)}.")
    return presets[preset]


def preset_config(presets, preset, overrides):
    """``presets[preset]``'s constructor arguments updated with the overrides that are
    not None. A preset is a :class:`Preset` or a plain dict of arguments.

    Raises:
        ValueError: ``preset`` is not one of ``presets``; the message lists them.
    """
    entry = _lookup(presets, preset)
    config = dict(entry.config if isinstance(entry, Preset) else entry)
    config.update({k: v for k, v in overrides.items() if v is not None})
    return config


class PresetMixin:
    """``from_preset``, ``save_to_preset`` and ``preset_recipe`` for a model class with a
    ``presets`` table.

    Example:
    >>> class MyModel(PresetMixin, keras.Model):
    ...     presets = {"small": Preset({"units": 8})}
    >>> model = MyModel.from_preset("small", vocabulary_size=40)
    >>> model.save_to_preset("my_preset", assets={"vocab.txt": vocab.save})
    >>> MyModel.from_preset("my_preset")  # the same sizes and trained weights
    """

    #: ``{name: Preset}``; set by each model class.
    presets = {}

    @classmethod
    def from_preset(cls, preset, *args, **overrides):
        """The model of a size preset (untrained) or of a trained preset (with weights).

        A name in :attr:`presets` builds a new model with those sizes; ``args`` and the
        overrides that are not None go to the constructor. Otherwise ``preset`` is a
        trained preset's name (``tpr_keras/presets/``) or folder: its config and weights
        are verified (:func:`~tpr_keras.presets.preset_files.load_preset`) and loaded;
        overrides replace config values (ones that change a weight's shape fail).

        Raises:
            ValueError: ``preset`` is neither (the message lists both kinds), the
                folder is incomplete, altered or too new, or holds another class.
        """
        if preset in cls.presets:
            return cls(*args, **preset_config(cls.presets, preset, overrides))
        if args:
            raise TypeError("a trained preset takes its sizes from its config; pass "
                            "overrides by keyword")
        return load_preset(preset, size_presets=cls.presets).build_model(cls, **overrides)

    def save_to_preset(self, path, assets=None, metadata=None, overwrite=False):
        """Writes this model as a trained preset folder that :meth:`from_preset` loads.

        Args:
            path: The folder to create.
            assets: ``{file name: file path or writer function}``, e.g.
                ``{"vocab.txt": vocab.save}``.
            metadata: What to record in ``metadata.json`` (task, command, results).
            overwrite: Replace an existing folder.

        Returns:
            The folder's path.
        """
        return save_preset(self, path, assets=assets, metadata=metadata, overwrite=overwrite)

    @classmethod
    def preset_recipe(cls, preset):
        """The training recipe of ``preset`` as a new dict.

        Raises:
            ValueError: ``preset`` is not one of :attr:`presets`.
        """
        return dict(_lookup(cls.presets, preset).recipe)
