"""Entailment paper sizes: Tang, Smolensky & de Sa (2018), §5.1-5.2.

One size per architecture and recurrent unit (``plain_tpru`` ... ``bidaf_gru``), all at
the paper's width d = 64 (the TPRU with N = 32 roles). ``bidaf_tpru`` alone draws its
character embedding from N(0, 1) (:data:`EMBEDDING_INIT`); the others keep Keras'
uniform ±0.05. The §5.1 training recipe they share is
:mod:`tpr_keras.training.recipes.entailment`'s.
"""

from tpr_keras.models.presets import PaperSize

#: The width d of §5.1 (state, character embedding and MLP hidden layer).
UNITS = 64
#: TPRU role vectors N of §5.1.
NUM_ROLES = 32
_SECTION = {"plain": "§4, §5.1", "bidaf": "§5.2"}
#: ``{size: embedding_init}`` where a size does not use the models' default ("uniform").
#: The paper does not give the embedding's initialisation. With Keras' uniform ±0.05 the
#: BiDAF TPRU's contextual layer starts blind to its input: the recurrent side of eq. 4
#: (std 7-9 at initialisation) outweighs the input side (std 0.2) 30-40 times, so the role
#: choice f (eq. 6) ignores the proposition; trained to the §5.1 protocol that model stays
#: at chance for 4 epochs and ends at 63.2 % validation (paper: 88.4). Drawn from N(0, 1)
#: (PyTorch's default for an embedding) it leaves chance in its first epoch and ends at
#: 89.4 % (seed 0, stopped on patience after 60 epochs). The plain TPRU-32 ends level with
#: either initialisation (75.6 % validation both), so the plain sizes keep the default.
EMBEDDING_INIT = {"bidaf_tpru": "normal"}


def _sizes(arch):
    sizes = {}
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
        sizes[name] = PaperSize(
            config, f"Tang et al. (2018) {_SECTION[arch]}: {arch} architecture, "
            f"{cell.upper()} encoder, d = {UNITS}{details}.")
    return sizes


#: ``plain_tpru``, ``plain_lstm``, ``plain_gru``: :class:`PlainEntailmentModel`.
PLAIN_PAPER_SIZES = _sizes("plain")
#: ``bidaf_tpru``, ``bidaf_lstm``, ``bidaf_gru``: :class:`BiDAFEntailmentModel`.
BIDAF_PAPER_SIZES = _sizes("bidaf")
