"""The two ways every model family is built by name: trained presets and paper sizes.

A *trained preset* is a folder of config, weights and assets
(:mod:`tpr_keras.presets.preset_files`): :meth:`PresetMixin.from_preset` loads one by its
shipped name (``tpr_keras/presets/``) or its path, and :meth:`PresetMixin.save_to_preset`
writes a trained model as one.

A *paper size* (:class:`PaperSize`) names the constructor arguments that set a model's
sizes in a paper, e.g. ``TPRRNN.paper_sizes["all_tasks"]`` (Schlag & Schmidhuber 2018,
Appendix A): :meth:`PresetMixin.from_paper_size` builds an untrained model of it. The
optimizer that goes with each size lives in the training layer
(:mod:`tpr_keras.training.recipes`), keyed by the same names.
"""

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from tpr_keras.presets.preset_files import load_preset, save_preset


@dataclasses.dataclass(frozen=True)
class PaperSize:
    """A named model configuration from a paper: constructor arguments, no weights.

    Attributes:
        config: constructor arguments of the model (``None`` values mean "the
            model's default", e.g. a width equal to the vocabulary size).
        description: one line: the paper and section the numbers come from.

    Example:
    >>> PaperSize({"embedding_dim": 20}, "§4.4").config["embedding_dim"]
    20
    """

    config: Mapping = dataclasses.field(default_factory=dict)
    description: str = ""

    def __post_init__(self):
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))


def paper_size_config(sizes, size, overrides):
    """``sizes[size]``'s constructor arguments updated with the overrides that are not
    None. An entry is a :class:`PaperSize` or a plain dict of arguments.

    Raises:
        ValueError: ``size`` is not one of ``sizes``; the message lists them.

    Example:
    >>> paper_size_config({"a": PaperSize({"x": 1})}, "a", {"x": None, "y": 2})
    {'x': 1, 'y': 2}
    """
    if size not in sizes:
        raise ValueError(f"Unknown paper size {size!r}; choose from {sorted(sizes)}.")
    entry = sizes[size]
    config = dict(entry.config if isinstance(entry, PaperSize) else entry)
    config.update({k: v for k, v in overrides.items() if v is not None})
    return config


class PresetMixin:
    """``from_preset`` / ``save_to_preset`` (trained presets) and ``from_paper_size``
    (the untrained sizes of :attr:`paper_sizes`) for a model class.

    Example:
    >>> class MyModel(PresetMixin, keras.Model):
    ...     paper_sizes = {"small": PaperSize({"units": 8})}
    >>> model = MyModel.from_paper_size("small", vocabulary_size=40)
    >>> model.save_to_preset("my_preset", assets={"vocab.txt": vocab.save})
    >>> MyModel.from_preset("my_preset")  # the same sizes and trained weights
    """

    #: ``{name: PaperSize}``; set by each model class.
    paper_sizes = {}

    @classmethod
    def from_paper_size(cls, size, *args, **overrides):
        """An untrained model with the sizes a paper gives (:attr:`paper_sizes`).

        Args:
            size: A name in :attr:`paper_sizes` (e.g. ``"single_task"``).
            *args: Positional constructor arguments (e.g. ``vocabulary_size``).
            **overrides: Constructor arguments; those that are not None replace the
                size's.

        Raises:
            ValueError: ``size`` is not a paper size of this class (the message lists
                them).
        """
        if size not in cls.paper_sizes:
            raise ValueError(f"Unknown paper size {size!r} of {cls.__name__}; choose from "
                             f"{sorted(cls.paper_sizes)}. A trained preset (weights "
                             f"included) loads with {cls.__name__}.from_preset.")
        return cls(*args, **paper_size_config(cls.paper_sizes, size, overrides))

    @classmethod
    def from_preset(cls, preset, load_weights=True, **overrides):
        """The model of a trained preset: its config and, by default, its weights.

        Args:
            preset: A shipped preset's name (``tpr_keras/presets/``) or the path of a
                preset folder (:meth:`save_to_preset`). Both are verified
                (:func:`~tpr_keras.presets.preset_files.load_preset`).
            load_weights: False builds the preset's architecture with fresh weights.
            **overrides: Constructor arguments that replace the config's; ones that
                change a weight's shape fail when the weights load.

        Raises:
            ValueError: an unknown name (the message lists the trained presets and
                points to :meth:`from_paper_size`), an incomplete, altered or too new
                folder, or one holding another class.
        """
        sizes = ", ".join(sorted(cls.paper_sizes)) or "none"
        hint = (f"An untrained model of a paper's sizes: {cls.__name__}.from_paper_size"
                f"(<size>, ...), sizes: {sizes}.")
        if preset in cls.paper_sizes:
            hint = (f"{preset!r} is a paper size, not a trained preset: "
                    f"{cls.__name__}.from_paper_size({preset!r}, ...) builds it untrained.")
        loaded = load_preset(preset, hint=hint)
        return loaded.build_model(cls, load_weights=load_weights, **overrides)

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
