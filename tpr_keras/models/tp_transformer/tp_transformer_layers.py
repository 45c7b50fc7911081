"""TP-Transformer building blocks (Schlag et al., 2019, §2 and §4.1): feed-forward, encoder
and decoder layers.

With the authors' PyTorch code where the paper is silent or differs; every difference is
stated in the class docstrings. The attention (eq. 1-4) is the shared
:class:`~tpr_keras.layers.TPMultiHeadAttention`; the embedding is in
:mod:`~tpr_keras.models.tp_transformer.tp_transformer_embedding`.
"""

import keras
from keras import ops

from tpr_keras.layers.layer_norm import LayerNorm
from tpr_keras.layers.tp_attention import TPMultiHeadAttention

NORM_PLACEMENTS = ("code", "paper")


def _check_placement(norm_placement):
    if norm_placement not in NORM_PLACEMENTS:
        raise ValueError(
            f"norm_placement must be one of {NORM_PLACEMENTS}; got {norm_placement!r}."
        )
    return norm_placement


@keras.saving.register_keras_serializable(package="tpr_keras")
class PositionwiseFeedForward(keras.layers.Layer):
    """Position-wise feed-forward sub-layer, eq. 5: ``W_g ReLU(W_f x + b_f) + b_g``.

    Kernels Xavier uniform, biases zero (§4.1).

    Args:
        hidden_dim: ``d_f`` (the paper uses ``4 d``).
        dropout: dropout rate after the ReLU (the authors' code; 0 in their runs).

    Masking:
        Position-wise: a Keras mask on the input passes through to the output.

    Example:
    >>> feed_forward = PositionwiseFeedForward(hidden_dim=32)
    >>> feed_forward(np.zeros((2, 5, 8), "float32")).shape
    TensorShape([2, 5, 8])
    """

    def __init__(self, hidden_dim, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = int(hidden_dim)
        self.dropout = float(dropout)
        self.supports_masking = True

    def build(self, input_shape):
        self.inner = keras.layers.Dense(self.hidden_dim, activation="relu", name="inner",
                                        dtype=self.dtype_policy)
        self.inner.build(input_shape)
        self.outer = keras.layers.Dense(input_shape[-1], name="outer", dtype=self.dtype_policy)
        self.outer.build(tuple(input_shape[:-1]) + (self.hidden_dim,))
        self.inner_dropout = keras.layers.Dropout(self.dropout, name="dropout",
                                                  dtype=self.dtype_policy)
        self.built = True

    def call(self, x, training=None):
        return self.outer(self.inner_dropout(self.inner(x), training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_dim": self.hidden_dim, "dropout": self.dropout})
        return config


class _TransformerLayerBase(keras.layers.Layer):
    """Shared arguments and the two layer-norm placements."""

    num_sublayers = 0

    def __init__(
        self,
        num_heads,
        feed_forward_dim,
        use_role=True,
        norm_placement="code",
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        attention_form="matmul",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.attention_form = attention_form
        self.num_heads = int(num_heads)
        self.feed_forward_dim = int(feed_forward_dim)
        self.use_role = bool(use_role)
        self.norm_placement = _check_placement(norm_placement)
        self.dropout = float(dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        # Padding masks are consumed by the attention; the output keeps x's mask.
        self.supports_masking = True

    def _build_common(self, model_dim):
        self.model_dim = int(model_dim)
        shape = (None, None, self.model_dim)
        # One attribute per norm, not a Python list: tf.train.Checkpoint (what the
        # Trainer saves) does not see layers that Keras keeps in lists.
        for i in range(1, self.num_sublayers + 2):
            norm = LayerNorm(epsilon=self.layer_norm_epsilon, name=f"norm{i}",
                             dtype=self.dtype_policy)
            norm.build(shape)
            setattr(self, f"norm{i}", norm)
        self.feed_forward = PositionwiseFeedForward(
            self.feed_forward_dim, self.dropout, name="feed_forward"
        )
        self.feed_forward.build(shape)
        self.sublayer_dropout = keras.layers.Dropout(self.dropout, name="dropout",
                                                     dtype=self.dtype_policy)

    @property
    def norms(self):
        """The layer norms ``norm1 ..``, in the order of :meth:`_run`."""
        return [getattr(self, f"norm{i}") for i in range(1, self.num_sublayers + 2)]

    def _attention(self, name):
        layer = TPMultiHeadAttention(
            self.num_heads, use_role=self.use_role, dropout=self.dropout,
            attention_form=self.attention_form, name=name, dtype=self.dtype_policy
        )
        shape = (None, None, self.model_dim)
        layer.build(shape, shape)
        return layer

    def _run(self, x, sublayers, training):
        """Applies ``sublayers`` (callables ``h -> output``) with the chosen norms.

        ``"code"`` (authors' code): ``x = x + f(LN_i(x))`` for each sub-layer, then a
        last ``LN`` on the layer output. ``"paper"`` (§2): an initial ``LN``, then
        ``x = LN_i(x + f(x))`` for each sub-layer (the original Transformer's
        post-norm).
        """
        if self.norm_placement == "code":
            for norm, sublayer in zip(self.norms, sublayers):
                x = x + self.sublayer_dropout(sublayer(norm(x)), training=training)
            return self.norms[-1](x)
        x = self.norms[0](x)
        for norm, sublayer in zip(self.norms[1:], sublayers):
            x = norm(x + self.sublayer_dropout(sublayer(x), training=training))
        return x

    def compute_output_spec(self, x, *args, return_details=False, **kwargs):
        """The output of a symbolic call: ``x``'s shape in the compute dtype (a residual
        stream), without tracing :meth:`call`, which wiring a functional model would
        otherwise do once per layer (most of building a ``tiny`` TP-Transformer). Traced,
        as Keras does by default, when ``return_details`` asks for the attention maps."""
        if return_details:
            return super().compute_output_spec(x, *args, return_details=True, **kwargs)
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "feed_forward_dim": self.feed_forward_dim,
                "use_role": self.use_role,
                "norm_placement": self.norm_placement,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "attention_form": self.attention_form,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPTransformerEncoderLayer(_TransformerLayerBase):
    """One encoder cell: TPMHA self-attention (eq. 1-4) and feed-forward (eq. 5), §2.2.

    Layer-norm placement (``norm_placement``):

    * ``"code"`` (default, the authors' public PyTorch code): pre-norm sub-layers and
      an extra layer norm on the cell's output::

          x = x + TPMHA(LN1(x));  x = x + FF(LN2(x));  return LN3(x)

    * ``"paper"`` (§2: "an initial layer normalization ... each sub-layer is followed
      by layer normalization and by a residual connection (as in the original
      Transformer)", read as the original post-norm ``LN(x + f(x))``)::

          x = LN1(x);  x = LN2(x + TPMHA(x));  return LN3(x + FF(x))

    Both have three layer norms (same parameters). Layer-norm epsilon 1e-5 (PyTorch).

    Args:
        num_heads: attention heads.
        feed_forward_dim: ``d_f``.
        use_role: TP-Attention (``True``) or standard attention.
        norm_placement: ``"code"`` or ``"paper"``.
        dropout: dropout rate on sub-layer outputs, attention weights and the
            feed-forward hidden layer (the authors trained with 0).
        layer_norm_epsilon: epsilon of the layer norms.
        attention_form: ``"einsum"`` or ``"matmul"``, see :class:`TPMultiHeadAttention`.

    Call arguments:
        x: ``[B, T, d]``.
        padding_mask: boolean ``[B, T]``, ``True`` for real (non-pad) positions.
        return_details: also return ``{"attention": [B, H, T, T], "roles":
            [B, H, T, d_k]}`` of the self-attention (for analysis).
        mask: the Keras mask of ``x`` (filled in by Keras, e.g. from
            ``keras.layers.Embedding(mask_zero=True)``); used as ``padding_mask``
            when that is not given.

    Masking:
        Padded positions (``padding_mask`` or the Keras mask of ``x``) are masked as
        keys of the self-attention, so real positions do not depend on them; padded
        positions still get outputs. The output carries ``x``'s Keras mask. A Keras
        mask also reaches the inner attention as its query mask (Keras fills it from
        the normed ``x``, as for ``keras.layers.MultiHeadAttention``), so padded
        positions then attend to nothing; real positions are the same either way.

    Example:
    >>> encoder = TPTransformerEncoderLayer(num_heads=2, feed_forward_dim=32)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> encoder(x, padding_mask=np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)).shape
    TensorShape([2, 5, 8])
    """

    num_sublayers = 2

    def build(self, input_shape):
        self._build_common(input_shape[-1])
        self.self_attention = self._attention("self_attention")
        self.built = True

    def call(self, x, padding_mask=None, return_details=False, training=None, mask=None):
        padding_mask = mask if padding_mask is None else padding_mask
        mask = None if padding_mask is None else ops.cast(padding_mask, "bool")[:, None, :]
        details = {}

        def attend(h):
            out, weights, roles = self.self_attention(
                h, h, attention_mask=mask, return_attention_scores=True,
                return_roles=True, training=training,
            )
            details.update(attention=weights, roles=roles)
            return out

        ff = lambda h: self.feed_forward(h, training=training)  # noqa: E731
        out = self._run(x, [attend, ff], training)
        return (out, details) if return_details else out


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPTransformerDecoderLayer(_TransformerLayerBase):
    """One decoder cell: masked self-TPMHA, TPMHA over the encoder (eq. 1-4), eq. 5, §2.3.

    Same layer-norm placements as :class:`TPTransformerEncoderLayer`, with four norms
    (``"code"``: before each of the three sub-layers and on the output).

    In the attention over the encoder, queries *and roles* come from the decoder
    stream; keys and values from the final encoder states.

    Decoding uses :meth:`step` with a fixed-size key/value cache of the
    self-attention (positions ``<= t`` are valid) and the encoder keys/values of
    :meth:`encoder_key_value`, computed once per input.

    Args:
        num_heads, feed_forward_dim, use_role, norm_placement: as for
            :class:`TPTransformerEncoderLayer`.
        dropout, layer_norm_epsilon, attention_form: as for
            :class:`TPTransformerEncoderLayer`.

    Call arguments:
        x: ``[B, Tt, d]`` (teacher-forced, shifted targets).
        encoder_output: ``[B, Ts, d]``.
        encoder_padding_mask: boolean ``[B, Ts]``, ``True`` for real source positions.
        return_details: also return ``{"self_attention", "self_roles",
            "cross_attention", "cross_roles"}``.
        encoder_output_mask: the Keras mask of ``encoder_output`` (filled in by
            Keras); used as ``encoder_padding_mask`` when that is not given.

    Masking:
        Padded source positions (``encoder_padding_mask`` or the Keras mask of
        ``encoder_output``) are masked as keys of the attention over the encoder.
        The self-attention is causal, so with padding at the end real target
        positions never see padded ones. The output carries ``x``'s Keras mask.

    Example:
    >>> decoder = TPTransformerDecoderLayer(num_heads=2, feed_forward_dim=32)
    >>> targets = np.random.rand(2, 4, 8).astype("float32")
    >>> sources = np.random.rand(2, 6, 8).astype("float32")
    >>> decoder(targets, sources).shape
    TensorShape([2, 4, 8])
    """

    num_sublayers = 3

    def build(self, input_shape):
        self._build_common(input_shape[-1])
        self.self_attention = self._attention("self_attention")
        self.cross_attention = self._attention("cross_attention")
        self.built = True

    def call(
        self,
        x,
        encoder_output,
        encoder_padding_mask=None,
        return_details=False,
        training=None,
        encoder_output_mask=None,
    ):
        if encoder_padding_mask is None:
            encoder_padding_mask = encoder_output_mask
        source_mask = (
            None
            if encoder_padding_mask is None
            else ops.cast(encoder_padding_mask, "bool")[:, None, :]
        )
        details = {}

        def self_attend(h):
            out, weights, roles = self.self_attention(
                h, h, use_causal_mask=True, return_attention_scores=True,
                return_roles=True, training=training,
            )
            details.update(self_attention=weights, self_roles=roles)
            return out

        def cross_attend(h):
            out, weights, roles = self.cross_attention(
                h, encoder_output, attention_mask=source_mask,
                return_attention_scores=True, return_roles=True, training=training,
            )
            details.update(cross_attention=weights, cross_roles=roles)
            return out

        ff = lambda h: self.feed_forward(h, training=training)  # noqa: E731
        out = self._run(x, [self_attend, cross_attend, ff], training)
        return (out, details) if return_details else out

    # ------------------------------------------------------------ decoding
    def encoder_key_value(self, encoder_output):
        """Keys and values of the attention over the encoder: two ``[B, H, Ts, d_k]``."""
        return self.cross_attention.project_key_value(encoder_output)

    def step(self, x, position, cache_key, cache_value, encoder_kv, encoder_padding_mask):
        """One decoding step with a fixed-size self-attention cache (inference only).

        Args:
            x: ``[B, 1, d]`` the embedded input symbol at ``position``.
            position: scalar int, the step ``t`` (0 = the start symbol).
            cache_key, cache_value: ``[B, H, L, d_k]``; entries ``< t`` hold earlier
                steps, later entries are ignored.
            encoder_kv: ``(keys, values)`` from :meth:`encoder_key_value`.
            encoder_padding_mask: boolean ``[B, Ts]``.

        Returns:
            ``(output [B, 1, d], cache_key, cache_value)`` with slot ``t`` written.
        """
        length = cache_key.shape[2]
        slots = ops.arange(length)
        write = ops.equal(slots, position)[None, None, :, None]  # [1, 1, L, 1]
        visible = ops.less_equal(slots, position)[None, None, :]  # [1, 1, L]
        source_mask = ops.cast(encoder_padding_mask, "bool")[:, None, :]
        new_cache = {}

        def self_attend(h):
            q, r = self.self_attention.project_query(h)
            k, v = self.self_attention.project_key_value(h)  # [B, H, 1, d_k]
            keys = ops.where(write, k, cache_key)
            values = ops.where(write, v, cache_value)
            new_cache.update(key=keys, value=values)
            return self.self_attention.attend(q, r, keys, values, visible)[0]

        def cross_attend(h):
            q, r = self.cross_attention.project_query(h)
            return self.cross_attention.attend(q, r, *encoder_kv, source_mask)[0]

        out = self._run(x, [self_attend, cross_attend, self.feed_forward], False)
        return out, new_cache["key"], new_cache["value"]
