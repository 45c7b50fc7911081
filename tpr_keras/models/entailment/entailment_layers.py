"""The layers of the entailment classifiers (Tang, Smolensky & de Sa, 2018, §4-§5).

* :func:`make_recurrent_layer`: the recurrent unit (TPRU, LSTM or GRU) both models
  build their encoders with. The models call it through this module at build time
  (``entailment_layers.make_recurrent_layer(...)``), so a benchmark can replace it
  here to measure another implementation of the same unit.
* :class:`MaskedMaxPooling1D`: max over time of the non-padded steps.
* :class:`PairFeatures`: ``[u, v, |u − v|, u ∘ v]`` or ``[u, v]``.
* :class:`BiDAFAttention`: bi-directional attention flow (Seo et al., 2017, eq. 1-4).
* :class:`PairToBatch` and :class:`BatchToPair`: A and B through a shared layer in one call.
"""

import numpy as np  # noqa: F401  (the doctests use it)

import keras
from keras import ops

from tpr_keras.layers.tpru import TPRU
from tpr_keras.models.dtype_policy import FLOAT32, building_under
from tpr_keras.ops.masking import mask_value

CELLS = ("tpru", "lstm", "gru")
POOLINGS = ("last", "max")
FEATURES = ("full", "concat")
#: ``BiDAFAttention(output_mode=...)``: Seo et al.'s eq. 4, or Tang et al.'s [h; ũ].
ATTENTION_OUTPUTS = ("full", "context")


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
        # the fast sequence form of keras.layers.RNN(TPRUCell(...)), same function; its
        # normalised recurrence (eq. 6) is float32 under any policy
        with building_under(FLOAT32):
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

    With `output_mode="context"`, the output is `[h; ũ]` (`[batch, ·, 2k]`): a
    layer's output and its context vectors, which is what Tang et al. (2018)
    §5.2 feed their second recurrent layer ("the concatenation of the output
    from the first layer and the context vectors"); their BiDAF parameter
    counts in Table 1 match this input width, not eq. 4's.

    Args:
        output_mode: `"full"` (Seo et al. eq. 4, default) or `"context"`.
        kernel_initializer: of the similarity weights `[w_h; w_u; w_m]`.

    Example:
    >>> att = BiDAFAttention()
    >>> g_a, g_b = att([np.ones((2, 5, 8), "float32"),
    ...                 np.ones((2, 3, 8), "float32")])
    >>> g_a.shape, g_b.shape
    (TensorShape([2, 5, 32]), TensorShape([2, 3, 32]))
    """

    def __init__(self, output_mode="full", kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if output_mode not in ATTENTION_OUTPUTS:
            raise ValueError(
                f"output_mode must be one of {ATTENTION_OUTPUTS}, got {output_mode!r}")
        self.output_mode = output_mode
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
        g_h = self._flow(h, u, s, pair_mask, mh, self.output_mode)
        s_t = ops.transpose(s, (0, 2, 1))
        pair_mask_t = None if pair_mask is None else ops.transpose(pair_mask, (0, 2, 1))
        g_u = self._flow(u, h, s_t, pair_mask_t, mu, self.output_mode)
        return [g_h, g_u]

    @staticmethod
    def _flow(context, query, s, pair_mask, context_mask, output_mode="full"):
        # Context-to-query: each context step attends over the query.
        attended_query = ops.matmul(_masked_softmax(s, pair_mask, axis=-1), query)
        if output_mode == "context":
            return ops.concatenate([context, attended_query], axis=-1)
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
        width = 2 if self.output_mode == "context" else 4
        return [tuple(s[:-1]) + (width * s[-1],) for s in input_shape]

    def get_config(self):
        config = super().get_config()
        config["output_mode"] = self.output_mode
        config["kernel_initializer"] = keras.initializers.serialize(
            self.kernel_initializer
        )
        return config


@keras.saving.register_keras_serializable(package="tpr_keras")
class PairToBatch(keras.layers.Layer):
    """Stacks the A and B batches into one batch, `[a; b]`, for a shared layer.

    Both entailment models encode A and B with the same weights. One call of a recurrent
    layer on the `[2 · batch, T]` stack runs one time loop where two calls run two, one
    after the other, so each step's per-op overhead is paid once (on a 2-core CPU about
    1.1× the training pairs/s; the matrix work per step doubles instead). The outputs are
    the same, because every example is computed independently and padding is masked. Unmasked inputs (character ids) of different lengths are right-padded to the
    longer one's length with 0, the pad id, which the embedding then masks. Masked
    sequences (the outputs of a layer that already ran on a stack, split by
    :class:`BatchToPair`) must have the same length; their masks are stacked too.

    Example:
    >>> a, b = np.array([[6, 8, 7]]), np.array([[8, 0]])
    >>> PairToBatch()([a, b]).numpy()
    array([[6, 8, 7],
           [8, 0, 0]])
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    @staticmethod
    def _pad_time(x, length):
        rank = len(x.shape)
        paddings = [[0, 0], [0, length - ops.shape(x)[1]]] + [[0, 0]] * (rank - 2)
        return ops.pad(x, paddings)

    def call(self, inputs, mask=None):
        a, b = inputs
        la, lb = ops.shape(a)[1], ops.shape(b)[1]
        # Static lengths (JAX always, TF when known) stay Python ints, so the padding is static.
        length = max(la, lb) if isinstance(la, int) and isinstance(lb, int) else \
            ops.maximum(la, lb)
        return ops.concatenate([self._pad_time(a, length), self._pad_time(b, length)], axis=0)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        a, b = inputs
        if None not in (a.shape[1], b.shape[1]) and a.shape[1] != b.shape[1]:
            raise ValueError("PairToBatch stacks masked sequences of the same length only; "
                             f"got lengths {a.shape[1]} and {b.shape[1]}")
        masks = [ops.ones(ops.shape(x)[:2], "bool") if m is None else ops.cast(m, "bool")
                 for x, m in zip(inputs, mask)]
        return ops.concatenate(masks, axis=0)

    def compute_output_shape(self, input_shape):
        a, b = input_shape
        batch = None if a[0] is None or b[0] is None else a[0] + b[0]
        length = a[1] if a[1] == b[1] else None
        return (batch, length) + tuple(a[2:])


@keras.saving.register_keras_serializable(package="tpr_keras")
class BatchToPair(keras.layers.Layer):
    """Splits a :class:`PairToBatch` stack back into its A and B halves (masks too).

    Example:
    >>> BatchToPair()(np.array([[1.0], [2.0], [3.0], [4.0]]))[1].numpy()
    array([[3.],
           [4.]], dtype=float32)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        return ops.split(inputs, 2, axis=0)

    def compute_mask(self, inputs, mask=None):
        return [None, None] if mask is None else ops.split(mask, 2, axis=0)

    def compute_output_shape(self, input_shape):
        batch = None if input_shape[0] is None else input_shape[0] // 2
        return [(batch,) + tuple(input_shape[1:])] * 2
