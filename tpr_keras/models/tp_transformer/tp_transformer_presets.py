"""TP-Transformer presets: the sizes and training recipe of Schlag et al. (2019), §4.1.

Each :class:`~tpr_keras.models.presets.Preset` holds the constructor sizes and the
training recipe ``train.math`` reads: Adam's learning rate and betas, global-norm
clipping, global batch, and the budget (optimizer ``steps``; ``epochs`` as an upper
bound; ``max_train_minutes`` as a wall-clock guard).

* ``tp_transformer``: the Transformer's sizes (d_z 512, d_f 2048, H 8, L 6), §4.1;
  ``tp_transformer_b`` shrinks to multiples of 60 (d_z 480, d_f 1920);
  ``tp_transformer_c`` keeps d_z 512 with d_f 512; ``transformer`` is the authors'
  baseline (standard attention, additive embedding). All four train with §4.1's recipe
  (lr 1e-4, β 0.9/0.995, clip 0.1, batch 1024) for Table 1's 1,000k steps.
* ``tiny`` / ``small`` (and their ``*_transformer`` baselines) are CPU sizes for tests
  and quick runs: a 10x larger learning rate at batch 128 and a budget of a few thousand
  steps, enough for single modules such as ``numbers__place_value``.

:func:`resolve_preset` turns a name (or ``"auto"``, :func:`auto_preset`) and the recipe
flags given on the command line into the concrete preset and recipe.
"""


from tpr_keras.models.presets import Preset, has_gpu

#: §4.1's optimisation, for the paper's sizes.
PAPER_RECIPE = dict(
    learning_rate=1e-4, beta_1=0.9, beta_2=0.995, clip_norm=0.1, batch_size=1024,
    steps=1_000_000, epochs=1_000_000, max_train_minutes=None,
)
#: The CPU sizes' recipe (not from the paper): lr 1e-3 at batch 128, 2,000 steps,
#: at most 14 minutes of training.
CPU_RECIPE = dict(
    learning_rate=1e-3, beta_1=0.9, beta_2=0.995, clip_norm=0.1, batch_size=128,
    steps=2000, epochs=1000, max_train_minutes=14.0,
)


def _sizes(model_dim, feed_forward_dim, num_heads, num_layers, use_role):
    return dict(model_dim=model_dim, num_heads=num_heads, num_encoder_layers=num_layers,
                num_decoder_layers=num_layers, feed_forward_dim=feed_forward_dim,
                use_role=use_role, multiplicative_embedding=use_role)


_PAPER = "Schlag et al. (2019) §4.1"
#: ``{name: Preset}``; :class:`TPTransformer.presets <TPTransformer>`.
PRESETS = {
    "tp_transformer": Preset(_sizes(512, 2048, 8, 6, True), PAPER_RECIPE,
                             f"{_PAPER}: TP-Transformer, d_z 512, d_f 2048, H 8, L 6."),
    "tp_transformer_b": Preset(_sizes(480, 1920, 8, 6, True), PAPER_RECIPE,
                               f"{_PAPER}: TP-Transformer B, d_z 480, d_f 1920."),
    "tp_transformer_c": Preset(_sizes(512, 512, 8, 6, True), PAPER_RECIPE,
                               f"{_PAPER}: TP-Transformer C, d_z 512, d_f 512."),
    "transformer": Preset(_sizes(512, 2048, 8, 6, False), PAPER_RECIPE,
                          f"{_PAPER}: the Transformer baseline, d_z 512, d_f 2048."),
    "small": Preset(_sizes(128, 512, 4, 3, True), CPU_RECIPE,
                    "CPU size: TP-Transformer, d_z 128, d_f 512, H 4, L 3."),
    "tiny": Preset(_sizes(64, 256, 4, 2, True), CPU_RECIPE,
                   "CPU size: TP-Transformer, d_z 64, d_f 256, H 4, L 2."),
    "small_transformer": Preset(_sizes(128, 512, 4, 3, False), CPU_RECIPE,
                                "CPU size: Transformer baseline, d_z 128, d_f 512."),
    "tiny_transformer": Preset(_sizes(64, 256, 4, 2, False), CPU_RECIPE,
                               "CPU size: Transformer baseline, d_z 64, d_f 256."),
}
#: ``{name: recipe}``, read from :data:`PRESETS` (a view, not a second definition).
RECIPES = {name: preset.recipe for name, preset in PRESETS.items()}


def auto_preset(devices, use_role=True):
    """The preset ``"auto"`` stands for on ``devices``.

    The paper's size (``tp_transformer``, or ``transformer`` without roles) when
    any device is a GPU, otherwise ``tiny``, the size whose recipe trains a single
    module on a few CPU cores.

    Args:
        devices: ``tf.config.list_physical_devices()`` or device-type strings
            (``"CPU"``, ``"GPU"``).
        use_role: TP-Transformer (True) or the Transformer baseline.

    Example:
    >>> auto_preset(["CPU"])
    'tiny'
    """
    if has_gpu(devices):
        return "tp_transformer" if use_role else "transformer"
    return "tiny"


def resolve_preset(preset, devices=None, use_role=True, **overrides):
    """Sizes and training recipe of ``preset``, with ``"auto"`` resolved.

    Args:
        preset: a name in ``PRESETS`` or ``"auto"`` (see :func:`auto_preset`).
        devices: for ``"auto"``: the devices to train on (default: the running
            backend's, :func:`tpr_keras.backend.devices.device_types`).
        use_role: for ``"auto"``: TP-Transformer or the Transformer baseline.
        **overrides: recipe fields given explicitly (``None`` = take the
            recipe's). An explicit ``epochs`` without ``steps`` lifts the
            recipe's step budget, so the epoch count is what stops training;
            an explicit ``steps`` or ``epochs`` without ``max_train_minutes``
            lifts the recipe's time guard, which belongs to its own budget.

    Returns:
        ``(name, recipe)``: the concrete preset name and a copy of its recipe
        with the overrides applied.

    Raises:
        ValueError: an unknown preset or recipe field.
    """
    if preset == "auto":
        if devices is None:
            from tpr_keras.backend.devices import device_types

            devices = device_types()
        preset = auto_preset(devices, use_role=use_role)
    if preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}; choose from {['auto'] + sorted(PRESETS)}.")
    unknown = set(overrides) - set(RECIPES[preset])
    if unknown:
        raise ValueError(f"Unknown recipe fields {sorted(unknown)}; "
                         f"choose from {sorted(RECIPES[preset])}.")
    recipe = dict(RECIPES[preset])
    if overrides.get("epochs") is not None and overrides.get("steps") is None:
        recipe["steps"] = None
    budget_given = overrides.get("steps") is not None or overrides.get("epochs") is not None
    if budget_given and overrides.get("max_train_minutes") is None:
        recipe["max_train_minutes"] = None
    recipe.update({k: v for k, v in overrides.items() if v is not None})
    return preset, recipe
