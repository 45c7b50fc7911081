"""Entailment presets: the sizes and training recipe of Tang, Smolensky & de Sa (2018), §5.1.

One preset per architecture and recurrent unit (``plain_tpru`` ... ``bidaf_gru``), all at
the paper's width d = 64 (the TPRU with N = 32 roles), all trained with the §5.1 recipe.
"""

from tpr_keras.models.presets import Preset

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


def _presets(arch):
    presets = {}
    for cell in ("tpru", "lstm", "gru"):
        config = {"units": UNITS, "cell": cell}
        if cell == "tpru":
            config["num_roles"] = NUM_ROLES
        roles = f", N = {NUM_ROLES} roles" if cell == "tpru" else ""
        presets[f"{arch}_{cell}"] = Preset(
            config, RECIPE,
            f"Tang et al. (2018) {_SECTION[arch]}: {arch} architecture, {cell.upper()} "
            f"encoder, d = {UNITS}{roles}; the §5.1 recipe.")
    return presets


#: ``plain_tpru``, ``plain_lstm``, ``plain_gru``: :class:`PlainEntailmentModel`.
PLAIN_PRESETS = _presets("plain")
#: ``bidaf_tpru``, ``bidaf_lstm``, ``bidaf_gru``: :class:`BiDAFEntailmentModel`.
BIDAF_PRESETS = _presets("bidaf")
