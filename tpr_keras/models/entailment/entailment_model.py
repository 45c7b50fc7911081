"""Logical entailment classifiers of Tang, Smolensky & de Sa (2018), §5.

Two architectures, each with a TPRU, LSTM or GRU recurrent unit:

- `PlainEntailmentModel` (§4, §5.1): one shared character-level RNN encoder
  for A and B, sentence vectors `u`, `v` (last state or max-pool over time),
  features `[u, v, |u − v|, u ∘ v]`, a one-hidden-layer ReLU MLP, one logit.
- `BiDAFEntailmentModel` (§5.2, after Seo et al., 2017): a shared
  bidirectional encoder, bi-directional attention flow between A and B, a
  shared bidirectional modelling layer of the same width and unit type,
  pooling, the same features and MLP.

Both are functional `keras.Model` subclasses whose config is their
constructor arguments, so `.keras` files round-trip; their layers are in
:mod:`tpr_keras.models.entailment.entailment_layers`, their paper sizes in
:mod:`tpr_keras.models.entailment.entailment_sizes` (the §5.1 training recipe in
:mod:`tpr_keras.training.recipes.entailment`). Inputs are
`{"a": int32[batch, La], "b": int32[batch, Lb]}` character ids with
0 = padding (masked), as produced by `tpr_keras.data.entailment.make_dataset`;
the output is one logit `[batch, 1]` for "A entails B".
"""

import numpy as np

import keras

import tpr_keras.models.entailment.entailment_layers as entailment_layers  # swapped by bench/
from tpr_keras.data.entailment import VOCAB_SIZE
from tpr_keras.models.dtype_policy import building_under
from tpr_keras.models.entailment.entailment_layers import (
    CELLS,
    FEATURES,
    POOLINGS,
    BatchToPair,
    BiDAFAttention,
    MaskedMaxPooling1D,
    PairFeatures,
    PairToBatch,
)
from tpr_keras.models.entailment.entailment_sizes import BIDAF_PAPER_SIZES, PLAIN_PAPER_SIZES
from tpr_keras.models.presets import PresetMixin


#: ``embedding_init`` -> the character embedding's initializer.
EMBEDDING_INITS = {
    # Keras' default for Embedding: uniform on [-0.05, 0.05] (std 0.029).
    "uniform": lambda: keras.initializers.RandomUniform(-0.05, 0.05),
    # PyTorch's default for nn.Embedding: N(0, 1), a std 35 times larger.
    "normal": lambda: keras.initializers.RandomNormal(0.0, 1.0),
}


def _check_options(cell, pooling, features, embedding_init="uniform"):
    if embedding_init not in EMBEDDING_INITS:
        raise ValueError(f"embedding_init must be one of {tuple(EMBEDDING_INITS)}, "
                         f"got {embedding_init!r}")
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}")


def _draw_seed(seed):
    return int(np.random.randint(0, 2**31 - 1)) if seed is None else int(seed)


def _classifier(u, v, features, hidden_units):
    x = PairFeatures(mode=features, name="features")([u, v])
    x = keras.layers.Dense(hidden_units, activation="relu", name="mlp_hidden")(x)
    return keras.layers.Dense(1, name="logit")(x)


class _EntailmentModel(PresetMixin, keras.Model):
    """What both entailment models share: the arguments, the inputs, the shared
    (pad-masked) character embedding, the classifier, and the config.

    A subclass sets :attr:`default_pooling`, :attr:`default_name` and :attr:`presets`,
    and builds the sentence vectors in :meth:`encode_pair`.
    """

    _OPTIONS = ("vocabulary_size", "units", "cell", "num_roles", "embedding_dim",
                "hidden_units", "pooling", "features", "seed", "embedding_init")
    #: A subclass's options beyond ``_OPTIONS``: ``{name: default}``.
    _EXTRA_OPTIONS = {}
    default_pooling = "last"
    default_name = "entailment"

    def __init__(
        self,
        vocabulary_size=VOCAB_SIZE,
        units=64,
        cell="tpru",
        num_roles=32,
        embedding_dim=None,
        hidden_units=None,
        pooling=None,
        features="full",
        seed=None,
        embedding_init="uniform",
        **kwargs,
    ):
        pooling = pooling or self.default_pooling
        _check_options(cell, pooling, features, embedding_init)
        extra = {k: kwargs.pop(k, default) for k, default in self._EXTRA_OPTIONS.items()}
        config = {
            "vocabulary_size": int(vocabulary_size), "units": int(units), "cell": cell,
            "num_roles": int(num_roles), "embedding_dim": int(embedding_dim or units),
            "hidden_units": int(hidden_units or units), "pooling": pooling,
            "features": features, "seed": _draw_seed(seed),
            "embedding_init": embedding_init, **extra,
        }
        a = keras.Input(shape=(None,), dtype="int32", name="a")
        b = keras.Input(shape=(None,), dtype="int32", name="b")
        # Mixed precision: the TPRU recurrences stay float32 (make_recurrent_layer).
        with building_under(kwargs.pop("dtype", None)) as policy:
            embedding = keras.layers.Embedding(
                config["vocabulary_size"], config["embedding_dim"], mask_zero=True,
                embeddings_initializer=EMBEDDING_INITS[embedding_init](), name="embedding")
            u, v = self.encode_pair(embedding, a, b, config)
            logit = _classifier(u, v, features, config["hidden_units"])
        kwargs.setdefault("name", self.default_name)
        super().__init__(inputs={"a": a, "b": b}, outputs=logit, **kwargs)
        self.dtype_policy_name = policy
        for key in (*self._OPTIONS, *self._EXTRA_OPTIONS):
            setattr(self, key, config[key])

    @staticmethod
    def encode_pair(embedding, a, b, config):
        """The sentence vectors ``(u, v)`` of the inputs A and B: creates the layers, then
        calls them (``embedding`` included; this order fixes the initial weights that a
        seed gives)."""
        raise NotImplementedError

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype_policy_name, **{key: getattr(self, key)
                                      for key in (*self._OPTIONS, *self._EXTRA_OPTIONS)}}


@keras.saving.register_keras_serializable(package="tpr_keras")
class PlainEntailmentModel(_EntailmentModel):
    """Plain (attentionless) entailment classifier (Tang et al., 2018, §4, §5.1).

    A shared encoder (character embedding, pad id 0 masked, then an RNN of
    TPRU / LSTM / GRU units) maps A and B to `u`, `v`; `[u, v, |u − v|, u ∘ v]`
    feeds a one-hidden-layer ReLU MLP with one output logit.

    Deviation: §5.1 says the two proposition vectors are "concatenated" for
    logical entailment; the default `features="full"` follows the authors'
    public code and the MNLI setup of §5.1; `features="concat"` gives `[u, v]`.

    Args:
        vocabulary_size: number of character ids (default: the
            `tpr_keras.data.entailment` vocabulary, 34).
        units: RNN state width d (the paper's "dim").
        cell: `"tpru"`, `"lstm"` or `"gru"`.
        num_roles: TPRU role vectors N.
        embedding_dim: character embedding width d' (default `units`).
        hidden_units: MLP hidden width (default `units`).
        pooling: `"last"` (state after the last non-pad step, §5.1) or
            `"max"` (masked max over time, as for MNLI in §5.1).
        features: `"full"` or `"concat"` (see above).
        seed: seed of the TPRU role basis (drawn if None; stored in config).
        embedding_init: the character embedding's initialisation: `"uniform"`
            (Keras' default, uniform on ±0.05) or `"normal"` (N(0, 1),
            PyTorch's default for `nn.Embedding`). The paper does not give
            it. It matters for the TPRU: with `"uniform"`, the input side of
            eq. 4 (`Uᵀ W x`) starts about 35 times smaller than the recurrent
            side (`Uᵀ b`), so at first a TPRU chooses its roles (eq. 6) by
            its own state rather than by the input; the BiDAF TPRU then
            stays near chance for several epochs (see `BiDAFEntailmentModel`).
        **kwargs: `keras.Model` arguments (e.g. `name`).

    Paper sizes (:meth:`from_paper_size`): ``plain_tpru``, ``plain_lstm``, ``plain_gru``
    (§5.1, d = 64); untrained, their §5.1 recipe in :mod:`tpr_keras.training.recipes`.

    Example:
    >>> model = PlainEntailmentModel(units=16, num_roles=8)
    >>> logits = model({"a": np.array([[6, 8, 3, 9, 7]]),
    ...                 "b": np.array([[8, 0, 0, 0, 0]])})  # (a&b) |= a ?
    >>> logits.shape
    TensorShape([1, 1])
    """

    default_pooling = "last"
    default_name = "plain_entailment"

    @staticmethod
    def encode_pair(embedding, a, b, config):
        """One shared encoder (and max pooling for ``pooling="max"``) for A and B."""
        encoder = entailment_layers.make_recurrent_layer(
            config["cell"], config["units"], config["num_roles"], config["seed"],
            return_sequences=config["pooling"] == "max", name="encoder",
        )
        pool = MaskedMaxPooling1D(name="pool") if config["pooling"] == "max" else None
        # A and B as one batch: one time loop instead of two (see PairToBatch)
        h = encoder(embedding(PairToBatch(name="pair_to_batch")([a, b])))
        u_v = BatchToPair(name="batch_to_pair")(pool(h) if pool is not None else h)
        return u_v[0], u_v[1]

    paper_sizes = PLAIN_PAPER_SIZES


@keras.saving.register_keras_serializable(package="tpr_keras")
class BiDAFEntailmentModel(_EntailmentModel):
    """BiDAF entailment classifier (Tang et al., 2018, §5.2; Seo et al., 2017).

    1. Shared character embedding (pad masked) and shared bidirectional
       encoder of width `units` per direction (contextual layer).
    2. `BiDAFAttention` between the encoded A and B (attention flow both
       ways), giving per step of each sequence `[h; ũ]` (the layer's output and
       its context vectors, §5.2; `attention_output="context"`, the presets')
       or Seo et al.'s `[h; ũ; h ∘ ũ; h ∘ h̃]` (`"full"`, the constructor's
       default, which files saved before the option keep).
    3. A shared bidirectional modelling layer over that, with the same width
       and unit type (and, for TPRU, the same number of roles) as layer 1.
    4. Pooling (`"max"`: masked max over time, default; `"last"`: the final
       forward and backward states), features `[u, v, |u − v|, u ∘ v]`,
       one-hidden-layer ReLU MLP, one logit.

    §5.2 specifies the two recurrent layers and the attention; the pooling
    and classifier follow the plain architecture ("other learning details as
    in the plain architecture") with max pooling as in the GLUE BiDAF-style
    baseline the paper cites [41].

    The paper's BiDAF parameter counts (Table 1) fit the `"context"` input of
    the second layer, 4d wide: for d = 64 the recurrent layers of that model
    have 230,400 (LSTM), 173,568 (GRU) and 131,080 (TPRU, any N) trainable
    weights against the paper's 230.0k, 172.4k and 131.3k; with eq. 4's 8d
    input they would have 361k, 272k and 197k.

    Args:
        vocabulary_size, units, cell, num_roles, embedding_dim, seed,
            embedding_init: as in `PlainEntailmentModel` (the modelling
            layer's TPRU basis uses `seed + 1`). With the TPRU, `"uniform"`
            (the constructor's default) leaves the contextual layer's role
            choices (eq. 6) set by its own state at first; measured on the
            entailment data with §5.1's protocol, that model is at chance for 4
            epochs and ends at 63.2 % validation, while `"normal"` (the
            ``bidaf_tpru`` preset's) leaves chance in its first epoch and ends
            at 89.4 % (paper: 88.4; `results/entailment.md`).
        hidden_units: MLP hidden width (default `units`).
        pooling: `"max"` or `"last"`.
        features: `"full"` or `"concat"`.
        attention_output: `"full"` or `"context"` (see step 2).
        **kwargs: `keras.Model` arguments (e.g. `name`).

    Paper sizes (:meth:`from_paper_size`): ``bidaf_tpru``, ``bidaf_lstm``, ``bidaf_gru``
    (d = 64); untrained, their §5.1 recipe in :mod:`tpr_keras.training.recipes`. Trained
    presets (sizes and weights, :meth:`from_preset`): ``tpru32_entailment``.

    Example:
    >>> model = BiDAFEntailmentModel.from_paper_size("bidaf_lstm", units=8)
    >>> model({"a": np.array([[6, 8, 3, 9, 7]]), "b": np.array([[8, 0, 0, 0, 0]])}).shape
    TensorShape([1, 1])
    """

    default_pooling = "max"
    default_name = "bidaf_entailment"
    _EXTRA_OPTIONS = {"attention_output": "full"}

    @staticmethod
    def encode_pair(embedding, a, b, config):
        """Contextual layer, attention flow both ways, modelling layer, pooling."""
        cell, units, roles, seed = (config[k] for k in ("cell", "units", "num_roles", "seed"))
        max_pool = config["pooling"] == "max"
        # Each template stays referenced until encode_pair returns. Bidirectional
        # serialises its template inside `load_model`'s object-sharing scope, which
        # keys objects by id(): were the contextual template freed and its address
        # reused by the modelling one, Keras would hand back the contextual backward
        # layer as both directions of the modelling layer (a rare, order-dependent load
        # failure).
        contextual_template = entailment_layers.make_recurrent_layer(
            cell, units, roles, seed, True)
        contextual = keras.layers.Bidirectional(contextual_template, name="contextual")
        attention = BiDAFAttention(output_mode=config["attention_output"], name="attention")
        modelling_template = entailment_layers.make_recurrent_layer(
            cell, units, roles, seed + 1, return_sequences=max_pool)
        modelling = keras.layers.Bidirectional(modelling_template, name="modelling")
        pool = MaskedMaxPooling1D(name="pool") if max_pool else None
        # Each shared recurrent layer sees A and B as one batch: one time loop per
        # direction instead of two (see PairToBatch).
        h = contextual(embedding(PairToBatch(name="pair_to_batch")([a, b])))
        g_a, g_b = attention(BatchToPair(name="batch_to_pair")(h))
        m = modelling(PairToBatch(name="attended_to_batch")([g_a, g_b]))
        u_v = BatchToPair(name="modelled_to_pair")(pool(m) if pool is not None else m)
        return u_v[0], u_v[1]

    paper_sizes = BIDAF_PAPER_SIZES
