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
constructor arguments, so `.keras` files round-trip. Inputs are
`{"a": int32[batch, La], "b": int32[batch, Lb]}` character ids with
0 = padding (masked), as produced by `tpr_keras.data.entailment.make_dataset`;
the output is one logit `[batch, 1]` for "A entails B".
"""

import numpy as np

import keras
from keras import ops

from tpr_keras.data.entailment import VOCAB_SIZE
from tpr_keras.layers.tpru import TPRU
from tpr_keras.ops.masking import mask_value

#: Size of the character vocabulary of `tpr_keras.data.entailment`
#: (pad, unk, `~ & | >`, `( )`, `a`–`z`).
ENTAILMENT_VOCAB_SIZE = VOCAB_SIZE
CELLS = ("tpru", "lstm", "gru")
POOLINGS = ("last", "max")
FEATURES = ("full", "concat")


def make_recurrent_layer(
    cell, units, num_roles=32, seed=None, return_sequences=False, name=None
):
    """A masking-aware RNN layer of the given unit type.

    Args:
        cell: `"tpru"`, `"lstm"` or `"gru"`.
        units: state width d.
        num_roles: TPRU roles N (ignored for LSTM/GRU).
        seed: seed of the TPRU role basis V (ignored for LSTM/GRU).
        return_sequences: return all steps instead of the last state.
        name: layer name.
    """
    if cell == "tpru":
        # the fast sequence form of keras.layers.RNN(TPRUCell(...)), same function
        return TPRU(units, num_roles=num_roles, seed=seed,
                    return_sequences=return_sequences, name=name)
    if cell == "lstm":
        return keras.layers.LSTM(units, return_sequences=return_sequences, name=name)
    if cell == "gru":
        return keras.layers.GRU(units, return_sequences=return_sequences, name=name)
    raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")


@keras.saving.register_keras_serializable(package="tpr_keras")
class MaskedMaxPooling1D(keras.layers.Layer):
    """Max over time of `[batch, time, dim]`, ignoring masked steps.

    Fully masked rows give 0.

    Example:
    >>> x = np.array([[[1.0], [5.0], [9.0]]], "float32")
    >>> MaskedMaxPooling1D()(x, mask=np.array([[True, True, False]])).numpy()
    array([[5.]], dtype=float32)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.max(inputs, axis=1)
        keep = ops.expand_dims(ops.cast(mask, "bool"), -1)
        pooled = ops.max(ops.where(keep, inputs, mask_value(inputs.dtype)), axis=1)
        return ops.where(ops.any(keep, axis=1), pooled, 0.0)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@keras.saving.register_keras_serializable(package="tpr_keras")
class PairFeatures(keras.layers.Layer):
    """Pair features of two sentence vectors.

    `mode="full"`: `[u, v, |u − v|, u ∘ v]` (§5.1 for MNLI; the authors' code
    for logical entailment). `mode="concat"`: `[u, v]` (§5.1's
    description of the logical entailment model).

    Args:
        mode: `"full"` or `"concat"`.
    """

    def __init__(self, mode="full", **kwargs):
        super().__init__(**kwargs)
        if mode not in FEATURES:
            raise ValueError(f"mode must be one of {FEATURES}, got {mode!r}")
        self.mode = mode

    def call(self, inputs):
        u, v = inputs
        if self.mode == "concat":
            return ops.concatenate([u, v], axis=-1)
        return ops.concatenate([u, v, ops.abs(u - v), u * v], axis=-1)

    def compute_output_shape(self, input_shape):
        dim = input_shape[0][-1]
        factor = 2 if self.mode == "concat" else 4
        return tuple(input_shape[0][:-1]) + (None if dim is None else factor * dim,)

    def get_config(self):
        config = super().get_config()
        config["mode"] = self.mode
        return config


def _masked_softmax(logits, mask, axis):
    if mask is not None:
        logits = ops.where(mask, logits, mask_value(logits.dtype))
    return ops.softmax(logits, axis=axis)


@keras.saving.register_keras_serializable(package="tpr_keras")
class BiDAFAttention(keras.layers.Layer):
    """Bi-directional attention flow between two sequences (Seo et al., 2017).

    With `h_t` (A, `[batch, T, k]`) and `u_j` (B, `[batch, J, k]`): trilinear
    similarity `S_tj = w_hᵀ h_t + w_uᵀ u_j + w_mᵀ (h_t ∘ u_j)` (Seo et al.
    eq. 1); A-to-B attention `ũ_t = Σ_j softmax_j(S_t:) u_j` and B-to-A
    attention `h̃ = Σ_t softmax_t(max_j S_tj) h_t` (eq. 2–3); output
    `G_A = [h; ũ; h ∘ ũ; h ∘ h̃]` (eq. 4). Because entailment compares two
    sequences, the same `S` is also used the other way round (softmax over
    `t` of `S_:j`, `max_t`) to give `G_B`, so both sequences get an
    attention-augmented representation `[batch, ·, 4k]`. Masks (padding) of
    both inputs are respected and propagated.

    Example:
    >>> att = BiDAFAttention()
    >>> g_a, g_b = att([np.ones((2, 5, 8), "float32"),
    ...                 np.ones((2, 3, 8), "float32")])
    >>> g_a.shape, g_b.shape
    (TensorShape([2, 5, 32]), TensorShape([2, 3, 32]))
    """

    def __init__(self, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        dim = input_shape[0][-1]
        self.similarity_kernel = self.add_weight(
            shape=(3, dim), initializer=self.kernel_initializer,
            name="similarity_kernel",
        )

    def call(self, inputs, mask=None):
        h, u = inputs
        mask_h, mask_u = (None, None) if mask is None else mask
        w_h, w_u, w_m = (self.similarity_kernel[i] for i in range(3))
        s = (
            ops.expand_dims(ops.matmul(h, w_h), 2)
            + ops.expand_dims(ops.matmul(u, w_u), 1)
            + ops.einsum("btk,bjk->btj", h * w_m, u)
        )  # [batch, T, J]
        mh = None if mask_h is None else ops.cast(mask_h, "bool")
        mu = None if mask_u is None else ops.cast(mask_u, "bool")
        pair_mask = None
        if mh is not None or mu is not None:
            row = mh if mh is not None else ops.ones_like(s[:, :, 0], "bool")
            col = mu if mu is not None else ops.ones_like(s[:, 0, :], "bool")
            pair_mask = ops.logical_and(
                ops.expand_dims(row, 2), ops.expand_dims(col, 1)
            )
        g_h = self._flow(h, u, s, pair_mask, mh)
        s_t = ops.transpose(s, (0, 2, 1))
        pair_mask_t = None if pair_mask is None else ops.transpose(pair_mask, (0, 2, 1))
        g_u = self._flow(u, h, s_t, pair_mask_t, mu)
        return [g_h, g_u]

    @staticmethod
    def _flow(context, query, s, pair_mask, context_mask):
        # Context-to-query: each context step attends over the query.
        attended_query = ops.matmul(_masked_softmax(s, pair_mask, axis=-1), query)
        # Query-to-context: one attention over context steps.
        masked = s if pair_mask is None else ops.where(pair_mask, s, mask_value(s.dtype))
        best = ops.max(masked, axis=-1)
        weights = _masked_softmax(best, context_mask, axis=-1)
        attended_context = ops.einsum("bt,btk->bk", weights, context)
        return ops.concatenate(
            [
                context,
                attended_query,
                context * attended_query,
                context * ops.expand_dims(attended_context, 1),
            ],
            axis=-1,
        )

    def compute_mask(self, inputs, mask=None):
        return [None, None] if mask is None else list(mask)

    def compute_output_shape(self, input_shape):
        return [tuple(s[:-1]) + (4 * s[-1],) for s in input_shape]

    def get_config(self):
        config = super().get_config()
        config["kernel_initializer"] = keras.initializers.serialize(
            self.kernel_initializer
        )
        return config


def _check_options(cell, pooling, features):
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}")


def _front_end(vocabulary_size, units, cell, num_roles, embedding_dim, hidden_units,
               pooling, features, seed):
    """Checks the options; returns the resolved config, the two inputs and the shared
    (pad-masked) character embedding."""
    _check_options(cell, pooling, features)
    config = {
        "vocabulary_size": int(vocabulary_size), "units": int(units), "cell": cell,
        "num_roles": int(num_roles), "embedding_dim": int(embedding_dim or units),
        "hidden_units": int(hidden_units or units), "pooling": pooling,
        "features": features, "seed": _draw_seed(seed),
    }
    a = keras.Input(shape=(None,), dtype="int32", name="a")
    b = keras.Input(shape=(None,), dtype="int32", name="b")
    embedding = keras.layers.Embedding(
        config["vocabulary_size"], config["embedding_dim"], mask_zero=True, name="embedding"
    )
    return config, a, b, embedding


class _EntailmentModel(keras.Model):
    """What both entailment models share: their options as attributes and config."""

    _OPTIONS = ("vocabulary_size", "units", "cell", "num_roles", "embedding_dim",
                "hidden_units", "pooling", "features", "seed")

    def _set_options(self, config):
        for key in self._OPTIONS:
            setattr(self, key, config[key])

    def get_config(self):
        return {"name": self.name, **{key: getattr(self, key) for key in self._OPTIONS}}


def _classifier(u, v, features, hidden_units):
    x = PairFeatures(mode=features, name="features")([u, v])
    x = keras.layers.Dense(hidden_units, activation="relu", name="mlp_hidden")(x)
    return keras.layers.Dense(1, name="logit")(x)


def _draw_seed(seed):
    return int(np.random.randint(0, 2**31 - 1)) if seed is None else int(seed)


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
        **kwargs: `keras.Model` arguments (e.g. `name`).

    Example:
    >>> model = PlainEntailmentModel(units=16, num_roles=8)
    >>> logits = model({"a": np.array([[6, 8, 3, 9, 7]]),
    ...                 "b": np.array([[8, 0, 0, 0, 0]])})  # (a&b) |= a ?
    >>> logits.shape
    TensorShape([1, 1])
    """

    def __init__(
        self,
        vocabulary_size=ENTAILMENT_VOCAB_SIZE,
        units=64,
        cell="tpru",
        num_roles=32,
        embedding_dim=None,
        hidden_units=None,
        pooling="last",
        features="full",
        seed=None,
        **kwargs,
    ):
        config, a, b, embedding = _front_end(
            vocabulary_size, units, cell, num_roles, embedding_dim, hidden_units, pooling,
            features, seed,
        )
        seed, hidden_units = config["seed"], config["hidden_units"]
        encoder = make_recurrent_layer(
            cell, units, num_roles, seed,
            return_sequences=pooling == "max", name="encoder",
        )
        pool = MaskedMaxPooling1D(name="pool") if pooling == "max" else None

        def encode(x):
            h = encoder(embedding(x))
            return pool(h) if pool is not None else h

        logit = _classifier(encode(a), encode(b), features, hidden_units)
        kwargs.setdefault("name", "plain_entailment")
        super().__init__(inputs={"a": a, "b": b}, outputs=logit, **kwargs)
        self._set_options(config)


@keras.saving.register_keras_serializable(package="tpr_keras")
class BiDAFEntailmentModel(_EntailmentModel):
    """BiDAF entailment classifier (Tang et al., 2018, §5.2; Seo et al., 2017).

    1. Shared character embedding (pad masked) and shared bidirectional
       encoder of width `units` per direction (contextual layer).
    2. `BiDAFAttention` between the encoded A and B (attention flow both
       ways), giving `[h; ũ; h ∘ ũ; h ∘ h̃]` per step for each sequence.
    3. A shared bidirectional modelling layer over that, with the same width
       and unit type (and, for TPRU, the same number of roles) as layer 1.
    4. Pooling (`"max"`: masked max over time, default; `"last"`: the final
       forward and backward states), features `[u, v, |u − v|, u ∘ v]`,
       one-hidden-layer ReLU MLP, one logit.

    §5.2 specifies the two recurrent layers and the attention; the pooling
    and classifier follow the plain architecture ("other learning details as
    in the plain architecture") with max pooling as in the GLUE BiDAF-style
    baseline the paper cites [41].

    Args:
        vocabulary_size, units, cell, num_roles, embedding_dim, seed: as in
            `PlainEntailmentModel` (the modelling layer's TPRU basis uses
            `seed + 1`).
        hidden_units: MLP hidden width (default `units`).
        pooling: `"max"` or `"last"`.
        features: `"full"` or `"concat"`.
        **kwargs: `keras.Model` arguments (e.g. `name`).
    """

    def __init__(
        self,
        vocabulary_size=ENTAILMENT_VOCAB_SIZE,
        units=64,
        cell="tpru",
        num_roles=32,
        embedding_dim=None,
        hidden_units=None,
        pooling="max",
        features="full",
        seed=None,
        **kwargs,
    ):
        config, a, b, embedding = _front_end(
            vocabulary_size, units, cell, num_roles, embedding_dim, hidden_units, pooling,
            features, seed,
        )
        seed, hidden_units = config["seed"], config["hidden_units"]
        contextual = keras.layers.Bidirectional(
            make_recurrent_layer(cell, units, num_roles, seed, True),
            name="contextual",
        )
        attention = BiDAFAttention(name="attention")
        modelling = keras.layers.Bidirectional(
            make_recurrent_layer(
                cell, units, num_roles, seed + 1, return_sequences=pooling == "max"
            ),
            name="modelling",
        )
        pool = MaskedMaxPooling1D(name="pool") if pooling == "max" else None

        g_a, g_b = attention([contextual(embedding(a)), contextual(embedding(b))])

        def summarise(g):
            m = modelling(g)
            return pool(m) if pool is not None else m

        logit = _classifier(summarise(g_a), summarise(g_b), features, hidden_units)
        kwargs.setdefault("name", "bidaf_entailment")
        super().__init__(inputs={"a": a, "b": b}, outputs=logit, **kwargs)
        self._set_options(config)
