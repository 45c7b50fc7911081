"""Entailment presets: the sizes and training recipe of Tang, Smolensky & de Sa (2018), §5.1.

One preset per architecture and recurrent unit (``plain_tpru`` ... ``bidaf_gru``), all at
the paper's width d = 64 (the TPRU with N = 32 roles), all trained with the §5.1 recipe.
``bidaf_tpru`` alone draws its character embedding from N(0, 1) (:data:`EMBEDDING_INIT`);
the others keep Keras' uniform ±0.05.
On a machine without a GPU, :func:`resolve_recipe` adds a training-time budget and XLA to
that recipe (``"cpu"``), so that the default command finishes in minutes.
"""

from tpr_keras.models.presets import Preset, has_gpu

#: §5.1: Adam, learning rate 0.001 divided by 10 every 30 epochs, up to 90 epochs, batch 64,
#: gradients clipped (global norm 5), symbolic vocabulary permutation as augmentation.
RECIPE = {
    "optimizer": "adam", "learning_rate": 0.001, "decay_every_epochs": 30,
    "decay_factor": 0.1, "epochs": 90, "batch_size": 64, "clip_norm": 5.0, "augment": True,
}
#: The width d of §5.1 (state, character embedding and MLP hidden layer).
UNITS = 64
#: TPRU role vectors N of §5.1.
NUM_ROLES = 32
_SECTION = {"plain": "§4, §5.1", "bidaf": "§5.2"}
#: ``{preset: embedding_init}`` where a preset does not use the models' default ("uniform").
#: The paper does not give the embedding's initialisation. With Keras' uniform ±0.05 the
#: BiDAF TPRU's contextual layer starts blind to its input: the recurrent side of eq. 4
#: (std 7-9 at initialisation) outweighs the input side (std 0.2) 30-40 times, so the role
#: choice f (eq. 6) ignores the proposition; trained to the §5.1 protocol that model stays
#: at chance for 4 epochs and ends at 63.2 % validation (paper: 88.4). Drawn from N(0, 1)
#: (PyTorch's default for an embedding) it leaves chance in its first epoch and ends at
#: 89.4 % (seed 0, stopped on patience after 60 epochs). The plain TPRU-32 ends level with
#: either initialisation (75.6 % validation both), so the plain presets keep the default.
EMBEDDING_INIT = {"bidaf_tpru": "normal"}


def _presets(arch):
    presets = {}
    for cell in ("tpru", "lstm", "gru"):
        config = {"units": UNITS, "cell": cell}
        if cell == "tpru":
            config["num_roles"] = NUM_ROLES
        if arch == "bidaf":
            # §5.2: the second layer reads [output of the first; context vectors]
            config["attention_output"] = "context"
        details = f", N = {NUM_ROLES} roles" if cell == "tpru" else ""
        name = f"{arch}_{cell}"
        if name in EMBEDDING_INIT:
            config["embedding_init"] = EMBEDDING_INIT[name]
            details += f", {EMBEDDING_INIT[name]} embedding"
        presets[name] = Preset(
            config, RECIPE,
            f"Tang et al. (2018) {_SECTION[arch]}: {arch} architecture, {cell.upper()} "
            f"encoder, d = {UNITS}{details}; the §5.1 recipe.")
    return presets


#: ``plain_tpru``, ``plain_lstm``, ``plain_gru``: :class:`PlainEntailmentModel`.
PLAIN_PRESETS = _presets("plain")
#: ``bidaf_tpru``, ``bidaf_lstm``, ``bidaf_gru``: :class:`BiDAFEntailmentModel`.
BIDAF_PRESETS = _presets("bidaf")

#: Recipe names of :func:`resolve_recipe` (``"auto"`` picks one of them).
RECIPE_NAMES = ("paper", "cpu")
#: What the ``"cpu"`` recipe adds to §5.1: stop training after 15 minutes (keeping the
#: best-validation weights) and compile the training step with XLA. The §5.1 learning-rate
#: schedule is unchanged. Measured on the 2-core CPU with two rows at once (one core each):
#: after 15 minutes of the full 90-epoch runs, validation was TPRU-32 72.2 % (epoch 26),
#: GRU 71.4 %, LSTM 68.4 %, TPRU-8 67.7 %; the 90 epochs of TPRU-32 took 58 minutes.
CPU_LIMITS = {"max_train_minutes": 15.0, "jit_compile": True}


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
