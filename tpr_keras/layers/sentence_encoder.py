"""Sentence encoder of TPR-RNN: word embeddings weighted by learned position vectors."""

import keras
from keras import ops


class _PadFreeEmbedding(keras.layers.Embedding):
    """``keras.layers.Embedding`` whose pad row (id 0) reads as zeros and gets no gradient.

    The layer does not autocast (as ``Embedding``): the lookup reads the ``float32``
    table and casts the gathered rows to the compute dtype.
    """

    zero_pad = True  # False: the pad row is an ordinary, trained row

    def call(self, inputs):
        table = ops.convert_to_tensor(self.embeddings)
        if self.zero_pad:
            not_pad = ops.expand_dims(ops.arange(self.input_dim) > 0, -1)
            table = ops.where(not_pad, table, 0.0)
        return ops.cast(ops.take(table, ops.cast(inputs, "int32"), axis=0),
                        self.compute_dtype)


@keras.saving.register_keras_serializable(package="tpr_keras")
class SentenceEncoder(keras.layers.Layer):
    """Encodes a padded sentence of word ids into one vector, eq. 5.

    Schlag & Schmidhuber (2018), eq. 5: ``s = Σ_i d_i ⊙ p_i``, where ``d_i`` is
    the embedding of word ``i`` and ``p_i`` a learned position vector shared by
    all sentences. Following Appendix A, embeddings start U(-0.01, 0.01) and
    position vectors start at ``1/k`` (``k`` = number of word slots).

    ``scaled_positions=True`` parametrises ``p_i`` as the authors' code does: a
    variable that starts at ones and is divided by ``k`` in the forward pass. The
    initial ``p_i`` is the same, but an adaptive optimizer (Adam's steps are about
    the lr whatever the gradient's scale) then moves ``p_i`` ``k`` times more slowly.

    Word id 0 is padding and contributes nothing: its embedding is masked out
    (the authors' code let the pad embedding leak into ``s``).

    Implementation: the pad row of the embedding table is zeroed before the
    lookup, and every sentence is one dense sum over its word slots, in
    ``keras.ops`` only (a fixed-shape computation that compiles under XLA and
    ``jax.jit``). Under a mixed policy the lookup reads the ``float32`` table and
    casts the rows it gathers, as ``keras.layers.Embedding`` does, so the gradient
    (a scatter-add into the table, most of it onto the pad row) accumulates in
    ``float32``: a ``bfloat16`` scatter-add rounds at every addition and, on a GPU,
    contends on the pad row's addresses (64x the whole step's time on an H200).

    Args:
        vocabulary_size: number of word ids, including pad (0) and unknown.
        symbol_dim: width of ``V_Symbol`` (the paper uses the vocabulary size).
        embeddings_initializer: initializer of the word embeddings.
        scaled_positions: store ``k · p_i`` and divide by ``k`` in ``call``.
        pad_row: ``"zero"`` (word id 0 reads as zeros and gets no gradient) or
            ``"trained"`` (id 0 is an ordinary trained word that enters eq. 5's sum, as
            in the authors' code).

    Input: int ids ``[..., k]``. Output: ``[..., symbol_dim]``.

    Masking:
        Word id 0 is padding whether or not a mask is given (with ``pad_row="zero"``).
        A boolean mask
        ``[..., k]`` (``mask=`` or the Keras mask of the ids) also removes the
        masked word slots from eq. 5's sum, as ``GlobalAveragePooling1D`` consumes
        the mask of the axis it reduces. The word axis is reduced, so the output
        mask is ``None`` for ``[batch, k]`` ids; for ids ``[batch, sentences, k]``
        it marks the sentences with at least one unmasked word (what
        :class:`TPRUpdate` takes as its sentence mask).

    Example:
    >>> encoder = SentenceEncoder(vocabulary_size=30, symbol_dim=30)
    >>> tuple(encoder(np.array([[4, 7, 2, 0, 0]])).shape)
    (1, 30)
    """

    def __init__(
        self,
        vocabulary_size,
        symbol_dim,
        embeddings_initializer=None,
        scaled_positions=False,
        pad_row="zero",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if pad_row not in ("zero", "trained"):
            raise ValueError(f"pad_row must be 'zero' or 'trained'; got {pad_row!r}.")
        self.pad_row = pad_row
        self.scaled_positions = bool(scaled_positions)
        self.vocabulary_size = int(vocabulary_size)
        self.symbol_dim = int(symbol_dim)
        self.supports_masking = True
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
            or keras.initializers.RandomUniform(-0.01, 0.01)
        )

    def build(self, input_shape):
        num_positions = input_shape[-1]
        if num_positions is None:
            raise ValueError(
                "SentenceEncoder needs a static number of word slots (last "
                f"input axis); got input shape {input_shape}."
            )
        self.embedding = _PadFreeEmbedding(
            self.vocabulary_size,
            self.symbol_dim,
            embeddings_initializer=self.embeddings_initializer,
            name="word_embedding", dtype=self.dtype_policy
        )
        self.embedding.zero_pad = self.pad_row == "zero"
        self.embedding.build((None,))
        self.positions = self.add_weight(
            name="positions",
            shape=(num_positions, self.symbol_dim),
            initializer=keras.initializers.Constant(
                1.0 if self.scaled_positions else 1.0 / num_positions),
        )
        self.built = True

    def call(self, word_ids, mask=None):
        word_ids = ops.cast(word_ids, "int32")
        # Pad words (id 0) contribute nothing and get no gradient; each sentence is
        # then one dense weighted sum (eq. 5).
        words = self.embedding(word_ids)
        if mask is not None:  # masked word slots contribute nothing either
            words = ops.where(ops.expand_dims(ops.cast(mask, "bool"), -1), words,
                              ops.zeros_like(words))
        positions = self.positions
        if self.scaled_positions:
            positions = positions / float(positions.shape[0])
        return ops.sum(words * positions, axis=-2)

    def compute_mask(self, inputs, mask=None):
        if mask is None or len(mask.shape) < 3:
            return None  # the word axis is reduced; nothing of it is left to mask
        return ops.any(ops.cast(mask, "bool"), axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.symbol_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "symbol_dim": self.symbol_dim,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "scaled_positions": self.scaled_positions,
                "pad_row": self.pad_row,
            }
        )
        return config
