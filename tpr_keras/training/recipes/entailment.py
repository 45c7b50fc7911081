"""Entailment training recipe: Tang, Smolensky & de Sa (2018), §5.1, for every size of
:mod:`tpr_keras.models.entailment.entailment_sizes` (``plain_tpru`` ... ``bidaf_gru``).

On a machine without a GPU, :func:`resolve_recipe` adds a training-time budget and XLA to
that recipe (``"cpu"``), so that the default ``train.entailment`` command finishes in
minutes.
"""

from types import MappingProxyType

from tpr_keras.backend.devices import has_gpu

#: §5.1: Adam, learning rate 0.001 divided by 10 every 30 epochs, up to 90 epochs, batch 64,
#: gradients clipped (global norm 5), symbolic vocabulary permutation as augmentation.
PAPER_RECIPE = MappingProxyType({
    "optimizer": "adam", "learning_rate": 0.001, "decay_every_epochs": 30,
    "decay_factor": 0.1, "epochs": 90, "batch_size": 64, "clip_norm": 5.0, "augment": True,
})
#: ``{size: recipe}``: every entailment size trains with §5.1's recipe.
RECIPES = MappingProxyType({f"{arch}_{cell}": PAPER_RECIPE for arch in ("plain", "bidaf")
                            for cell in ("tpru", "lstm", "gru")})

#: Recipe names of :func:`resolve_recipe` (``"auto"`` picks one of them).
RECIPE_NAMES = ("paper", "cpu")
#: What the ``"cpu"`` recipe adds to §5.1: stop training after 15 minutes (keeping the
#: best-validation weights) and compile the training step with XLA. The §5.1 learning-rate
#: schedule is unchanged. Measured on the 2-core CPU with two rows at once (one core each):
#: after 15 minutes of the full 90-epoch runs, validation was TPRU-32 72.2 % (epoch 26),
#: GRU 71.4 %, LSTM 68.4 %, TPRU-8 67.7 %; the 90 epochs of TPRU-32 took 58 minutes.
CPU_LIMITS = MappingProxyType({"max_train_minutes": 15.0, "jit_compile": True})


def auto_recipe(devices):
    """The recipe ``"auto"`` stands for on ``devices``: ``"paper"`` when any of them is a
    GPU, otherwise ``"cpu"``.

    Example:
    >>> auto_recipe(["CPU"])
    'cpu'
    """
    return "paper" if has_gpu(devices) else "cpu"


def resolve_recipe(name, devices=None, max_train_minutes=None, jit_compile=None,
                   budget_given=False):
    """The training limits of recipe ``name``, with ``"auto"`` resolved.

    Args:
        name: ``"paper"`` (§5.1 as published: up to 90 epochs, no time limit),
            ``"cpu"`` (§5.1 plus :data:`CPU_LIMITS`) or ``"auto"`` (see
            :func:`auto_recipe`).
        devices: for ``"auto"``: the devices to train on (default: the running
            backend's, :func:`tpr_keras.backend.devices.device_types`).
        max_train_minutes, jit_compile: values given explicitly (``None`` = take
            the recipe's).
        budget_given: ``--epochs`` or ``--steps`` was given; it lifts the
            ``"cpu"`` recipe's time budget, so that the count given is what stops
            training.

    Returns:
        ``(name, limits)``: the concrete recipe name and a dict with
        ``max_train_minutes`` (``None`` = no time limit) and ``jit_compile``.

    Raises:
        ValueError: an unknown recipe name.

    Example:
    >>> resolve_recipe("auto", devices=["CPU"])
    ('cpu', {'max_train_minutes': 15.0, 'jit_compile': True})
    >>> resolve_recipe("cpu", budget_given=True, jit_compile=False)
    ('cpu', {'max_train_minutes': None, 'jit_compile': False})
    """
    if name == "auto":
        if devices is None:
            from tpr_keras.backend.devices import device_types

            devices = device_types()
        name = auto_recipe(devices)
    if name not in RECIPE_NAMES:
        raise ValueError(f"Unknown recipe {name!r}; choose from {['auto', *RECIPE_NAMES]}.")
    limits = dict(CPU_LIMITS) if name == "cpu" else {"max_train_minutes": None,
                                                      "jit_compile": False}
    if budget_given:
        limits["max_train_minutes"] = None
    if max_train_minutes is not None:
        limits["max_train_minutes"] = max_train_minutes or None
    if jit_compile is not None:
        limits["jit_compile"] = bool(jit_compile)
    return name, limits
