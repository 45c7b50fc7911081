"""The TP-Transformer's embedding (Schlag et al., 2019, §2 and §4.1): symbols, positions, output.

Sinusoidal positions and :class:`TPTransformerEmbedding`, the symbol table shared by the
encoder's and decoder's inputs and the output projection. The encoder and decoder
layers are in :mod:`~tpr_keras.models.tp_transformer.tp_transformer_layers`.
"""

import math

import keras
import numpy as np
from keras import ops


def sinusoidal_positions(positions, dim):
    """Sinusoidal position encodings (Vaswani et al. 2017) at ``positions``.

    Same layout as the authors' code: ``pe[:, 2i] = sin(p / 10000^(2i/d))`` and
    ``pe[:, 2i+1] = cos(p / 10000^(2i/d))``. Computed on the fly, so there is no
    maximum length.

    Args:
        positions: ``[T]`` integer positions.
        dim: even encoding width.

    Returns:
        ``float32[T, dim]``.
    """
    if dim % 2:
        raise ValueError(f"sinusoidal positions need an even width; got {dim}.")
    inverse = np.exp(np.arange(0, dim, 2, dtype=np.float64) * -(math.log(10000.0) / dim))
    angles = ops.cast(positions, "float32")[:, None] * ops.convert_to_tensor(
        inverse.astype(np.float32)
    )[None, :]
    interleaved = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)  # [T, d/2, 2]
    return ops.reshape(interleaved, (-1, dim))


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPTransformerEmbedding(keras.layers.Layer):
    """Shared symbol embedding ``E`` of encoder and decoder, and the output map of eq. 6.

    Schlag et al. (2019), §2 and §4.1. Forward (the authors' code,
    ``EmbeddingMultilinearSinusoidal``)::

        x = E[ids] * sqrt(d) + PE(positions)
        z = x * (W_p x + b_p + 1)          # multiplicative=True

    The factor ``W_p x + b_p + 1`` is the paper's "W(p) ~ N(1, 1)" (§4.1): with
    ``W_p ~ N(0, 1/d)`` and ``x`` of unit variance it starts around ``N(1, 1)``.
    ``multiplicative=False`` gives the plain ``x`` of the Transformer baseline
    (the authors' ``TokenEmbedding``).

    Reverse (``reverse=True``): logits ``ẑ E^T`` without bias, eq. 6 (softmax in the
    loss).

    Differences from the paper's text, following the authors' code:

    * ``E`` starts ``N(0, 1/d)`` and is scaled by ``sqrt(d)`` on input, so input
      embeddings are ``N(0, 1)`` as in §4.1 while the output map uses the unscaled
      ``E``. ``b_p`` starts at zero (PyTorch's default is a small uniform).

    Args:
        vocabulary_size: number of symbols ``V``.
        model_dim: ``d`` (even).
        multiplicative: multiply by ``W_p x + b_p + 1`` (TP-Transformer) or not.
        dropout: dropout rate on the output (forward direction only).
        embeddings_initializer: initializer of ``E``; default ``N(0, 1/sqrt(d))``.
        mask_zero: as in ``keras.layers.Embedding``: id 0 (the pad symbol) is
            padding, and the forward output carries the Keras mask ``ids != 0``.
            Only the mask changes, not the values; default False.

    Call arguments:
        inputs: int ids ``[B, T]`` (forward) or hidden states ``[B, T, d]`` (reverse).
        start_position: position of the first id (decoding steps); default 0.
        reverse: compute logits ``[B, T, V]`` instead.
        training: run the output dropout.

    Input ``[B, T]`` ids; output ``[B, T, d]``. Reverse: input ``[B, T, d]``; output
    ``[B, T, V]``.

    Masking:
        Forward, with ``mask_zero=True`` the output's Keras mask is ``ids != 0``
        (AND the ids' own Keras mask, if any), so the encoder and decoder layers
        after it take it as their padding mask; without it, a Keras mask on the
        ids passes through (each position is embedded on its own). Reverse, each
        position is projected on its own, so the Keras mask of the hidden states
        passes through to the logits. Positions are counted from the start of the
        sequence, so padding belongs at the end, where it changes no real position.

    Example:
    >>> embedding = TPTransformerEmbedding(vocabulary_size=12, model_dim=8, mask_zero=True)
    >>> ids = np.array([[4, 7, 2, 0, 0]])
    >>> z = embedding(ids)
    >>> tuple(z.shape), np.asarray(embedding.compute_mask(ids)).tolist()
    ((1, 5, 8), [[True, True, True, False, False]])
    >>> tuple(embedding(z, reverse=True).shape)
    (1, 5, 12)
    """

    def __init__(
        self,
        vocabulary_size,
        model_dim,
        multiplicative=True,
        dropout=0.0,
        embeddings_initializer=None,
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.model_dim = int(model_dim)
        if self.model_dim % 2:
            raise ValueError(f"model_dim must be even (sinusoids); got {model_dim}.")
        self.multiplicative = bool(multiplicative)
        self.dropout = float(dropout)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
            or keras.initializers.RandomNormal(0.0, 1.0 / math.sqrt(self.model_dim))
        )
        self.mask_zero = bool(mask_zero)
        # Position-wise in both directions: masks pass through (compute_mask).
        self.supports_masking = True

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.model_dim),
            initializer=self.embeddings_initializer,
            # Read in float32 and cast after the lookup (keras.layers.Embedding's way):
            # the lookup's gradient, a scatter-add, then accumulates in float32.
            autocast=False,
        )
        if self.multiplicative:
            self.multiplier = keras.layers.Dense(
                self.model_dim,
                kernel_initializer=keras.initializers.RandomNormal(
                    0.0, 1.0 / math.sqrt(self.model_dim)
                ),
                name="multiplier", dtype=self.dtype_policy
            )
            self.multiplier.build((None, None, self.model_dim))
        self.output_dropout = keras.layers.Dropout(self.dropout, name="dropout",
                                                   dtype=self.dtype_policy)
        self.built = True

    def call(self, inputs, start_position=0, reverse=False, training=None):
        if reverse:
            return ops.einsum("btd,vd->btv", inputs, ops.cast(self.embeddings, inputs.dtype))
        ids = ops.cast(inputs, "int32")
        tokens = ops.cast(ops.take(self.embeddings, ids, axis=0),
                          self.compute_dtype) * math.sqrt(self.model_dim)
        positions = ops.arange(ops.shape(ids)[1]) + ops.cast(start_position, "int32")
        x = tokens + ops.cast(sinusoidal_positions(positions, self.model_dim), tokens.dtype)[None]
        if self.multiplicative:
            x = x * (self.multiplier(x) + 1.0)
        return self.output_dropout(x, training=training)

    def compute_output_spec(self, inputs, start_position=0, reverse=False, training=None):
        """The output of a symbolic call, without tracing :meth:`call` (wiring a
        functional model): ``[B, T, d]`` in the compute dtype; reversed, ``[B, T, V]`` in
        the dtype of ``inputs``."""
        if reverse:
            return keras.KerasTensor(tuple(inputs.shape[:-1]) + (self.vocabulary_size,),
                                     dtype=inputs.dtype)
        return keras.KerasTensor(tuple(inputs.shape) + (self.model_dim,),
                                 dtype=self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        if len(inputs.shape) == 3 or not self.mask_zero:  # reverse, or no pad mask
            return mask
        real = ops.not_equal(inputs, 0)
        return real if mask is None else ops.logical_and(real, ops.cast(mask, "bool"))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "model_dim": self.model_dim,
                "multiplicative": self.multiplicative,
                "dropout": self.dropout,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "mask_zero": self.mask_zero,
            }
        )
        return config
