"""TP-Transformer training recipes: Schlag et al. (2019), §4.1, for each size of
:mod:`tpr_keras.models.tp_transformer.tp_transformer_sizes`.

Each recipe holds what ``train.math`` reads: Adam's learning rate and betas,
global-norm clipping, global batch, and the budget (optimizer ``steps``; ``epochs`` as
an upper bound; ``max_train_minutes`` as a wall-clock guard). The paper's four sizes
train with §4.1's recipe (lr 1e-4, β 0.9/0.995, clip 0.1, batch 1024) for Table 1's
1,000k steps; the CPU sizes with a 10x larger learning rate at batch 128 and a budget of
a few thousand steps, enough for single modules such as ``numbers__place_value``.

:func:`resolve_size` turns ``train.math``'s ``--preset`` (a size name or ``"auto"``,
:func:`auto_size`) and the recipe flags given on the command line into the concrete
size and recipe.
"""

from types import MappingProxyType

from tpr_keras.backend.devices import has_gpu

#: §4.1's optimisation, for the paper's sizes.
PAPER_RECIPE = MappingProxyType(dict(
    learning_rate=1e-4, beta_1=0.9, beta_2=0.995, clip_norm=0.1, batch_size=1024,
    steps=1_000_000, epochs=1_000_000, max_train_minutes=None,
))
#: The CPU sizes' recipe (not from the paper): lr 1e-3 at batch 128, 2,000 steps,
#: at most 14 minutes of training.
CPU_RECIPE = MappingProxyType(dict(
    learning_rate=1e-3, beta_1=0.9, beta_2=0.995, clip_norm=0.1, batch_size=128,
    steps=2000, epochs=1000, max_train_minutes=14.0,
))
#: ``{size: recipe}``.
RECIPES = MappingProxyType({
    **{name: PAPER_RECIPE for name in ("tp_transformer", "tp_transformer_b",
                                       "tp_transformer_c", "transformer")},
    **{name: CPU_RECIPE for name in ("small", "tiny", "small_transformer",
                                     "tiny_transformer")},
})


def auto_size(devices, use_role=True):
    """The size ``"auto"`` stands for on ``devices``.

    The paper's size (``tp_transformer``, or ``transformer`` without roles) when
    any device is a GPU, otherwise ``tiny``, the size whose recipe trains a single
    module on a few CPU cores.

    Args:
        devices: ``tf.config.list_physical_devices()`` or device-type strings
            (``"CPU"``, ``"GPU"``).
        use_role: TP-Transformer (True) or the Transformer baseline.

    Example:
    >>> auto_size(["CPU"])
    'tiny'
    """
    if has_gpu(devices):
        return "tp_transformer" if use_role else "transformer"
    return "tiny"


def resolve_size(size, devices=None, use_role=True, **overrides):
    """The size ``size`` stands for and its training recipe, with ``"auto"`` resolved.

    Args:
        size: a name in :data:`RECIPES` (the sizes of ``TPTransformer.paper_sizes``) or
            ``"auto"`` (see :func:`auto_size`).
        devices: for ``"auto"``: the devices to train on (default: the running
            backend's, :func:`tpr_keras.backend.devices.device_types`).
        use_role: for ``"auto"``: TP-Transformer or the Transformer baseline.
        **overrides: recipe fields given explicitly (``None`` = take the
            recipe's). An explicit ``epochs`` without ``steps`` lifts the
            recipe's step budget, so the epoch count is what stops training;
            an explicit ``steps`` or ``epochs`` without ``max_train_minutes``
            lifts the recipe's time guard, which belongs to its own budget.

    Returns:
        ``(size, recipe)``: the concrete size name and a copy of its recipe
        with the overrides applied.

    Raises:
        ValueError: an unknown size or recipe field.

    Example:
    >>> resolve_size("auto", devices=["CPU"], batch_size=64)[1]["batch_size"]
    64
    """
    if size == "auto":
        if devices is None:
            from tpr_keras.backend.devices import device_types

            devices = device_types()
        size = auto_size(devices, use_role=use_role)
    if size not in RECIPES:
        raise ValueError(f"Unknown size {size!r}; choose from {['auto'] + sorted(RECIPES)}.")
    unknown = set(overrides) - set(RECIPES[size])
    if unknown:
        raise ValueError(f"Unknown recipe fields {sorted(unknown)}; "
                         f"choose from {sorted(RECIPES[size])}.")
    recipe = dict(RECIPES[size])
    if overrides.get("epochs") is not None and overrides.get("steps") is None:
        recipe["steps"] = None
    budget_given = overrides.get("steps") is not None or overrides.get("epochs") is not None
    if budget_given and overrides.get("max_train_minutes") is None:
        recipe["max_train_minutes"] = None
    recipe.update({k: v for k, v in overrides.items() if v is not None})
    return size, recipe
