"""The preset mechanism every model family shares: one ``from_preset``, one lookup.

A preset names a configuration from a paper: the constructor arguments that set
the model's sizes (:attr:`Preset.config`) and, for the families trained by a
``train.*`` command, the paper's training recipe (:attr:`Preset.recipe`: the
optimizer and its hyper-parameters), which the command reads instead of
restating it.
"""

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType


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
    """``from_preset`` and ``preset_recipe`` for a model class with a ``presets`` table.

    Example:
    >>> class MyModel(PresetMixin, keras.Model):
    ...     presets = {"small": Preset({"units": 8})}
    >>> model = MyModel.from_preset("small", vocabulary_size=40)
    """

    #: ``{name: Preset}``; set by each model class.
    presets = {}

    @classmethod
    def from_preset(cls, preset, *args, **overrides):
        """Builds the model with ``preset``'s sizes; ``args`` and the overrides that are
        not None go to the constructor (overrides replace the preset's values).

        Raises:
            ValueError: ``preset`` is not one of :attr:`presets`.
        """
        return cls(*args, **preset_config(cls.presets, preset, overrides))

    @classmethod
    def preset_recipe(cls, preset):
        """The training recipe of ``preset`` as a new dict.

        Raises:
            ValueError: ``preset`` is not one of :attr:`presets`.
        """
        return dict(_lookup(cls.presets, preset).recipe)
