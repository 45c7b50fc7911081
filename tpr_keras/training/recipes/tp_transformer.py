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
#: The weights the authors' code leaves at PyTorch's ``nn.Linear`` default (uniform in
#: ``±1/√in``; :func:`tpr_keras.training.torch_init.torch_linear_init`): every attention
#: projection, kernel and bias (``SelfAttention.reset_parameters`` is never called), the
#: feed-forward biases and the embedding multiplier's bias (their ``reset_parameters``
#: set only the kernels). The port's default: Xavier-uniform kernels, zero biases.
TORCH_DEFAULT_INIT = ("*_attention/*", "*/feed_forward/*/bias", "embedding/multiplier/bias")
#: The training step of the authors' released code (github.com/ischlag/TP-Transformer,
#: ``train.sh``, ``main.py``), for every size: ``torch.optim.Adam`` (lr 1e-4, β
#: 0.9/0.995, ε 1e-8 on the bias-corrected ``√v̂``: ``optimizer="torch_adam"``), the
#: mean over the batch's answer tokens (``loss_reduction="batch_token_mean"`` of
#: :func:`~tpr_keras.training.losses.sequence_cross_entropy`), so that the global-norm
#: clip of 0.1 cuts in their units; batch 128 (the paper: 1,024); their 5,000,000
#: steps; the initialisation above; plain shuffled batches over all examples
#: (``bucket_boundaries=None``, ``balance_modules=False``). What it still leaves
#: different: docs/authors_code.md.
AUTHORS_CODE_RECIPE = MappingProxyType(dict(
    learning_rate=1e-4, beta_1=0.9, beta_2=0.995, clip_norm=0.1, batch_size=128,
    steps=5_000_000, epochs=1_000_000, max_train_minutes=None,
    optimizer="torch_adam", epsilon=1e-8, loss_reduction="batch_token_mean",
    torch_default_init=TORCH_DEFAULT_INIT, bucket_boundaries=None, balance_modules=False,
))
#: Recipe names of :func:`resolve_size`: ``"size"`` (the size's own recipe, below) or
#: ``"authors_code"`` (:data:`AUTHORS_CODE_RECIPE`, any size).
RECIPE_NAMES = ("size", "authors_code")
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


def resolve_size(size, devices=None, use_role=True, recipe_name="size", **overrides):
    """The size ``size`` stands for and its training recipe, with ``"auto"`` resolved.

    Args:
        size: a name in :data:`RECIPES` (the sizes of ``TPTransformer.paper_sizes``) or
            ``"auto"`` (see :func:`auto_size`).
        devices: for ``"auto"``: the devices to train on (default: the running
            backend's, :func:`tpr_keras.backend.devices.device_types`).
        use_role: for ``"auto"``: TP-Transformer or the Transformer baseline.
        recipe_name: a name in :data:`RECIPE_NAMES`: the size's recipe, or the
            authors' code's step (:data:`AUTHORS_CODE_RECIPE`) at this size.
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
    >>> resolve_size("tiny", recipe_name="authors_code")[1]["optimizer"]
    'torch_adam'
    """
    if size == "auto":
        if devices is None:
            from tpr_keras.backend.devices import device_types

            devices = device_types()
        size = auto_size(devices, use_role=use_role)
    if size not in RECIPES:
        raise ValueError(f"Unknown size {size!r}; choose from {['auto'] + sorted(RECIPES)}.")
    if recipe_name not in RECIPE_NAMES:
        raise ValueError(f"Unknown recipe {recipe_name!r}; choose from {list(RECIPE_NAMES)}.")
    base = AUTHORS_CODE_RECIPE if recipe_name == "authors_code" else RECIPES[size]
    unknown = set(overrides) - set(base)
    if unknown:
        raise ValueError(f"Unknown recipe fields {sorted(unknown)}; "
                         f"choose from {sorted(base)}.")
    recipe = dict(base)
    if overrides.get("epochs") is not None and overrides.get("steps") is None:
        recipe["steps"] = None
    budget_given = overrides.get("steps") is not None or overrides.get("epochs") is not None
    if budget_given and overrides.get("max_train_minutes") is None:
        recipe["max_train_minutes"] = None
    recipe.update({k: v for k, v in overrides.items() if v is not None})
    return size, recipe
