"""TP-Multi-Head Attention (TPMHA) of the TP-Transformer, Schlag et al. (2019) eq. 1-4."""

import math

import keras
from keras import ops

from tpr_keras.ops.masking import mask_value, softmax

#: The values of ``TPMultiHeadAttention(attention_form=...)``.
ATTENTION_FORMS = ("einsum", "matmul")


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPMultiHeadAttention(keras.layers.Layer):
    """Multi-head attention whose per-head result is bound to a role vector, eq. 1-4.

    Schlag et al. (2019), §2.1. Every head ``h`` projects the states with separate
    affine maps (eq. 1)::

        k_i = W_k z_i + b_k    v_i = W_v z_i + b_v    q_t = W_q z_t + b_q    r_t = W_r z_t + b_r

    attends with scaled dot-products (eq. 3) to form the filler (eq. 2)::

        α_{t,i} = softmax_i(q_t · k_i / sqrt(d_k))      v̄_t = Σ_i α_{t,i} v_i

    and binds the filler to the role by the elementwise (Hadamard) product, the
    diagonal of the tensor product, before the output map (eq. 4)::

        TPMHA(z_t, z_{1:T}) = Σ_h [ W_o^h (v̄^h_t ⊙ r^h_t) + b_o^h ]

    The role ``r_t`` comes from the *query-side* stream (the decoder state in the
    decoder's attention over the encoder), with a bias and no activation, as in
    eq. 1 and the authors' code. ``use_role=False`` skips the role projection and
    the binding, which is standard multi-head attention (Vaswani et al. 2017): the
    Transformer baseline and the TP-Transformer share this code path.

    Implementation notes:

    * The per-head maps are stored as one ``[d_model, heads * key_dim]`` kernel per
      projection (and ``[heads * key_dim, d_model]`` for ``W_o``), so Xavier-uniform
      initialisation sees the fan-in/fan-out of the whole projection, as PyTorch's
      ``nn.Linear`` in the authors' code does.
    * The per-head output biases ``b_o^h`` of eq. 4 only ever appear summed over
      heads, so they are one bias of width ``d_model`` (same function, fewer
      redundant parameters).
    * Initialisation: all kernels Xavier uniform (paper §4.1), biases zero. (The
      authors' TP-Transformer code never calls its ``reset_parameters``, so it
      ran with PyTorch's default ``nn.Linear`` initialisation.)

    Args:
        num_heads: number of heads ``H``.
        key_dim: per-head width ``d_k`` of queries, keys, values and roles;
            default ``d_model // num_heads`` (the paper's ``d_k = d_z / H``).
        use_role: bind each head's filler to its role vector (TP-Attention);
            ``False`` gives standard multi-head attention.
        dropout: dropout rate on the attention weights (the authors trained
            without dropout).
        kernel_initializer: initializer of the five projection kernels.
        bias_initializer: initializer of their biases.
        attention_form: how eq. 1's head projections and eq. 4's output map are
            computed, with the same weights and the same values (tested equal):
            ``"matmul"`` (default) projects a stream for all its uses (``q, r, k, v``
            of a self-attention) in one ``[B·T, d] x [d, n·H·d_k]`` product, then a
            reshape and transpose (the heads concatenated before ``W_o``); ``"einsum"``
            contracts the input with each kernel viewed as ``[d, H, d_k]``
            (``[H, d_k, d]`` for ``W_o``), the form of files saved before the argument.

    Call arguments (those of ``keras.layers.MultiHeadAttention``, plus ``return_roles``):
        query: ``[batch, Tq, d_model]``, the querying stream (also the role source).
        value: ``[batch, Tk, d_v]``, the attended stream.
        key: ``[batch, Tk, d_v]``; default ``value``.
        query_mask: boolean ``[batch, Tq]``, ``True`` for real query positions.
        value_mask: boolean ``[batch, Tk]``, ``True`` for real value positions.
        key_mask: boolean ``[batch, Tk]``, ``True`` for real key positions.
        attention_mask: boolean, broadcastable to ``[batch, Tq, Tk]``; ``True``
            means "may attend".
        return_attention_scores: also return the weights ``α``
            ``[batch, heads, Tq, Tk]``.
        training: run the attention dropout.
        use_causal_mask: also forbid attending to later positions.
        return_roles: also return the role vectors ``r`` ``[batch, heads, Tq, key_dim]``
            (``None`` when ``use_role=False``).

    Returns ``[batch, Tq, d_model]`` (``d_model`` = the query width), followed by
    the weights and then the roles if requested.

    Masking:
        As in ``keras.layers.MultiHeadAttention``. Keras fills ``query_mask``,
        ``value_mask`` and ``key_mask`` from the Keras masks of ``query``, ``value``
        and ``key`` (e.g. ``keras.layers.Embedding(mask_zero=True)``) when they are
        not passed. The masks are combined with a logical AND into one
        ``[batch, Tq, Tk]`` mask: ``query_mask[:, :, None]``, ``value_mask[:, None, :]``,
        ``key_mask[:, None, :]``, the causal mask and ``attention_mask``. A masked
        (query, key) pair gets weight exactly 0 (eq. 3 over the allowed keys only), so a
        query row with every key masked, e.g. a padded query, gets all-zero weights and
        the output ``b_o`` (Keras' masked softmax does the same). The output carries
        the query's Keras mask. Unlike Keras, which reads the query mask only from the
        query tensor, an explicitly passed ``query_mask`` is honoured. The causal mask
        lets query ``i`` see keys ``j <= i + (Tk - Tq)`` (the same as Keras' when
        ``Tq == Tk``; Keras aligns the first query with the first key otherwise).

    Example:
    >>> attention = TPMultiHeadAttention(num_heads=2)
    >>> z = np.random.rand(3, 5, 8).astype("float32")
    >>> attention(z, z).shape
    TensorShape([3, 5, 8])
    """

    def __init__(
        self,
        num_heads,
        key_dim=None,
        use_role=True,
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        attention_form="matmul",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if attention_form not in ATTENTION_FORMS:
            raise ValueError(f"attention_form must be one of {ATTENTION_FORMS}; "
                             f"got {attention_form!r}.")
        self.attention_form = attention_form
        self.num_heads = int(num_heads)
        self.key_dim = None if key_dim is None else int(key_dim)
        self.use_role = bool(use_role)
        self.dropout = float(dropout)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        # The input masks are consumed in call(); the output carries the query's mask.
        self.supports_masking = True

    def build(self, query_shape, value_shape=None, key_shape=None):
        query_dim = query_shape[-1]
        value_dim = query_dim if value_shape is None else value_shape[-1]
        key_dim_in = value_dim if key_shape is None else key_shape[-1]
        if self.key_dim is None:
            if query_dim % self.num_heads:
                raise ValueError(
                    f"d_model={query_dim} is not divisible by num_heads={self.num_heads}; "
                    "pass key_dim explicitly."
                )
            self.key_dim = query_dim // self.num_heads
        self.model_dim = int(query_dim)
        width = self.num_heads * self.key_dim

        def projection(name, fan_in, fan_out):
            kernel = self.add_weight(
                name=f"{name}_kernel",
                shape=(fan_in, fan_out),
                initializer=self.kernel_initializer,
            )
            bias = self.add_weight(
                name=f"{name}_bias", shape=(fan_out,), initializer=self.bias_initializer
            )
            return kernel, bias

        self.query_kernel, self.query_bias = projection("query", query_dim, width)
        self.key_kernel, self.key_bias = projection("key", key_dim_in, width)
        self.value_kernel, self.value_bias = projection("value", value_dim, width)
        if self.use_role:
            self.role_kernel, self.role_bias = projection("role", query_dim, width)
        self.output_kernel, self.output_bias = projection("output", width, query_dim)
        self.attention_dropout = keras.layers.Dropout(self.dropout, name="attention_dropout",
                                                    dtype=self.dtype_policy)
        self.built = True

    # --------------------------------------------------------------- pieces
    def _heads(self, x, kernel, bias):
        """Eq. 1 for all heads at once: ``[B, T, d] -> [B, H, T, d_k]``."""
        if self.attention_form == "matmul":
            return self._fused_heads(x, [(kernel, bias)])[0]
        d_in = kernel.shape[0]
        w = ops.reshape(kernel, (d_in, self.num_heads, self.key_dim))
        b = ops.reshape(bias, (self.num_heads, 1, self.key_dim))
        return ops.einsum("btd,dhk->bhtk", x, w) + b

    def project_query(self, query):
        """Queries and roles (eq. 1) of the query stream: two ``[B, H, Tq, d_k]``.

        The role is ``None`` when ``use_role=False``.
        """
        q = self._heads(query, self.query_kernel, self.query_bias)
        r = self._heads(query, self.role_kernel, self.role_bias) if self.use_role else None
        return q, r

    def project_key_value(self, key, value=None):
        """Keys and values (eq. 1) of the attended stream: two ``[B, H, Tk, d_k]``.

        Decoders cache these (self-attention) or compute them once per input
        sequence (attention over the encoder).
        """
        value = key if value is None else value
        k = self._heads(key, self.key_kernel, self.key_bias)
        v = self._heads(value, self.value_kernel, self.value_bias)
        return k, v

    def attend(self, q, r, k, v, attention_mask=None, training=None):
        """Eq. 2-4 from projected heads.

        Args:
            q, r: ``[B, H, Tq, d_k]`` queries and roles (``r`` may be ``None``).
            k, v: ``[B, H, Tk, d_k]`` keys and values.
            attention_mask: boolean, broadcastable to ``[B, Tq, Tk]`` (or to
                ``[B, H, Tq, Tk]`` if 4-D); ``True`` = may attend. A masked pair gets
                weight exactly 0; a row with every key masked gets all-zero weights.

        Returns:
            ``(output [B, Tq, d_model], weights [B, H, Tq, Tk])``.
        """
        return self._attend(q * (1.0 / math.sqrt(self.key_dim)), r, k, v, attention_mask,
                            training)

    def _attend(self, q, r, k, v, attention_mask, training):
        """:meth:`attend` with the queries already scaled by eq. 3's ``1/sqrt(d_k)``.

        The values of a masked softmax with fewer passes over ``[B, H, Tq, Tk]``: ``q``
        scaled instead of the scores; the mask added once as a bias of its own shape (0
        or :func:`mask_value`: ``exp`` of a masked logit underflows to exactly 0 in a row
        with an allowed key, as after a ``where``); a row with no allowed key zeroed on
        the ``[B, H, Tq, d_k]`` filler, not on the weights.
        """
        scores = ops.einsum("bhqd,bhkd->bhqk", q, k)
        row_valid = None
        if attention_mask is not None:
            mask = ops.cast(attention_mask, "bool")
            while len(mask.shape) < 4:  # the heads axis (and a missing batch axis)
                mask = ops.expand_dims(mask, -3)
            blocked = ops.cast(ops.logical_not(mask), scores.dtype)
            scores = scores + blocked * ops.cast(mask_value(scores.dtype), scores.dtype)
            row_valid = ops.cast(ops.any(mask, axis=-1, keepdims=True), scores.dtype)
        weights = softmax(scores, axis=-1)  # eq. 3
        dropped = self.attention_dropout(weights, training=training)
        filler = ops.einsum("bhqk,bhkd->bhqd", dropped, v)  # eq. 2
        if row_valid is not None:  # exactly 0 in a row with every key masked
            filler = filler * row_valid
            weights = weights * row_valid  # the weights returned (unused ones are pruned)
        bound = filler * r if (self.use_role and r is not None) else filler  # eq. 4, ⊙
        return self._output(bound), weights

    def _fused_heads(self, x, projections, scale=None):
        """Eq. 1 for several projections of one stream in one ``[B·T, d] x [d, n·H·d_k]``
        product (the ``matmul`` form): one ``[B, H, T, d_k]`` per ``(kernel, bias)``.

        The kernels stay separate weights, concatenated for the product, so the stream is
        read once and the bias gradients are one row sum. ``scale`` multiplies the first
        projection (eq. 3's ``1/sqrt(d_k)`` on the queries, exact when it is a power of
        two, e.g. ``d_k`` 4, 16, 64).
        """
        kernels, biases = [k for k, _ in projections], [b for _, b in projections]
        if scale is not None:
            kernels[0], biases[0] = kernels[0] * scale, biases[0] * scale
        count = len(projections)
        kernel = ops.concatenate(kernels, axis=1) if count > 1 else kernels[0]
        bias = ops.concatenate(biases, axis=0) if count > 1 else biases[0]
        shape = ops.shape(x)
        y = ops.matmul(ops.reshape(x, (-1, x.shape[-1])), kernel) + bias
        y = ops.reshape(y, (shape[0], shape[1], count, self.num_heads, self.key_dim))
        return ops.unstack(ops.transpose(y, (2, 0, 3, 1, 4)), count, axis=0)

    def _project_all(self, query, key, value):
        """``q`` (times ``1/sqrt(d_k)``), ``r`` (or None), ``k``, ``v``; ``matmul``: one
        product per distinct stream."""
        scale = 1.0 / math.sqrt(self.key_dim)
        if self.attention_form != "matmul":
            q, r = self.project_query(query)
            return (q * scale, r) + self.project_key_value(key, value)
        query_side = [(self.query_kernel, self.query_bias)]
        if self.use_role:
            query_side.append((self.role_kernel, self.role_bias))
        key_value = [(self.key_kernel, self.key_bias), (self.value_kernel, self.value_bias)]
        if key is query and value is query:  # self-attention: q, (r,) k, v at once
            heads = self._fused_heads(query, query_side + key_value, scale)
        elif key is value:
            heads = (self._fused_heads(query, query_side, scale)
                     + self._fused_heads(key, key_value))
        else:
            heads = (self._fused_heads(query, query_side, scale)
                     + self._fused_heads(key, key_value[:1])
                     + self._fused_heads(value, key_value[1:]))
        if not self.use_role:
            heads = [heads[0], None] + list(heads[1:])
        return tuple(heads)

    def _output(self, bound):
        """Eq. 4's ``Σ_h W_o^h x_h + b_o``: ``[B, H, T, d_k] -> [B, T, d_model]``."""
        if self.attention_form == "matmul":
            shape = ops.shape(bound)
            merged = ops.reshape(ops.transpose(bound, (0, 2, 1, 3)),
                                 (-1, self.num_heads * self.key_dim))
            out = ops.matmul(merged, self.output_kernel) + self.output_bias
            return ops.reshape(out, (shape[0], shape[2], self.model_dim))
        w_o = ops.reshape(self.output_kernel, (self.num_heads, self.key_dim, self.model_dim))
        return ops.einsum("bhqd,hdo->bqo", bound, w_o) + self.output_bias

    @staticmethod
    def causal_mask(query_length, key_length):
        """``[Tq, Tk]`` boolean: query ``i`` may attend to keys ``j <= i + (Tk - Tq)``."""
        i = ops.expand_dims(ops.arange(query_length), 1)
        j = ops.expand_dims(ops.arange(key_length), 0)
        return ops.greater_equal(i + (key_length - query_length), j)

    def compute_attention_mask(self, query, value, query_mask=None, value_mask=None,
                               key_mask=None, attention_mask=None, use_causal_mask=False):
        """The combined boolean mask, broadcastable to ``[B, Tq, Tk]`` (``None`` if none).

        The AND of ``query_mask[:, :, None]``, ``value_mask[:, None, :]``,
        ``key_mask[:, None, :]``, the causal mask and ``attention_mask``, as
        ``keras.layers.MultiHeadAttention._compute_attention_mask``.
        """
        parts = []
        if query_mask is not None:
            parts.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
        for mask in (value_mask, key_mask):
            if mask is not None:
                parts.append(ops.expand_dims(ops.cast(mask, "bool"), -2))
        if use_causal_mask:
            parts.append(self.causal_mask(ops.shape(query)[1], ops.shape(value)[1])[None])
        if attention_mask is not None:
            parts.append(ops.cast(attention_mask, "bool"))
        if not parts:
            return None
        combined = parts[0]
        for mask in parts[1:]:
            combined = ops.logical_and(combined, mask)
        return combined

    # ----------------------------------------------------------------- call
    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        return_roles=False,
    ):
        key = value if key is None else key
        mask = self.compute_attention_mask(
            query, value, query_mask=query_mask, value_mask=value_mask, key_mask=key_mask,
            attention_mask=attention_mask, use_causal_mask=use_causal_mask)
        q, r, k, v = self._project_all(query, key, value)
        output, weights = self._attend(q, r, k, v, mask, training)
        if not (return_attention_scores or return_roles):
            return output
        extras = [output]
        if return_attention_scores:
            extras.append(weights)
        if return_roles:
            extras.append(r)
        return tuple(extras)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape, value_shape = tuple(query_shape), tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(
                "All dimensions of `value` and `key`, except the last one, must be equal. "
                f"Received: value_shape={value_shape} and key_shape={key_shape}")
        return query_shape

    def compute_output_spec(self, query, value, key=None, query_mask=None, value_mask=None,
                            key_mask=None, attention_mask=None, return_attention_scores=False,
                            training=None, use_causal_mask=False, return_roles=False):
        shape = self.compute_output_shape(query.shape, value.shape,
                                          None if key is None else key.shape)
        output = keras.KerasTensor(shape, dtype=self.compute_dtype)
        if not (return_attention_scores or return_roles):
            return output
        extras = [output]
        heads = (query.shape[0], self.num_heads, query.shape[1])
        if return_attention_scores:
            extras.append(keras.KerasTensor(heads + (value.shape[1],), dtype=self.compute_dtype))
        if return_roles:
            key_dim = self.key_dim or query.shape[-1] // self.num_heads
            extras.append(keras.KerasTensor(heads + (key_dim,), dtype=self.compute_dtype)
                          if self.use_role else None)
        return tuple(extras)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "use_role": self.use_role,
                "dropout": self.dropout,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "attention_form": self.attention_form,
            }
        )
        return config
