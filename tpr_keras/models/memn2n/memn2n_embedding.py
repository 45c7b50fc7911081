"""MemN2N's embedding (Sukhbaatar et al., 2015, §4.1): position encodings and one table.

* :func:`position_encoding` — the paper's ``l_kj`` (§4.1), ``J`` = the words
  of each sentence; :func:`coded_position_encoding` — the authors' MATLAB
  variant, ``J`` = the padded word slots, which the authors acknowledged as
  unintended: ``l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (d J)``.
* :func:`as_padding` — ids with masked words or sentences made padding (id 0).
* :class:`MemN2NEmbedding` — one embedding table (``A^k``, ``B``, ``C^k``)
  with its temporal rows (``T_A``/``T_C``), turning sentences into vectors;
  :class:`ZeroPadRow` keeps its pad row at zero where the pad word gets gradient.

The hop (eq. 1, 2, 4) is :mod:`~tpr_keras.models.memn2n.memn2n_hop`; the K-hop
network (eq. 3, weight tying) is :mod:`~tpr_keras.models.memn2n.memn2n_network`.
"""

import keras
from keras import ops

SENTENCE_ENCODINGS = ("bag_of_words", "position", "position_code")


def gaussian_initializer():
    """The paper's weight initialiser (§4.2): N(0, 0.1²).

    "initialized randomly from a Gaussian distribution with zero mean and σ = 0.1".

    Example:
    >>> gaussian_initializer().stddev
    0.1
    """
    return keras.initializers.RandomNormal(mean=0.0, stddev=0.1)


def position_encoding(sentence_lengths, num_slots, embedding_dim, dtype="float32"):
    """The paper's position encoding (§4.1), one ``J`` per sentence.

    ``l_kj = (1 - j/J) - (k/d)(1 - 2j/J)`` with 1-based word index ``j``,
    embedding index ``k``, ``d = embedding_dim`` and ``J`` the number of words
    of the sentence ("J being the number of words in the sentence").

    Args:
        sentence_lengths: number of real words of each sentence, ``[...]``.
        num_slots: word slots per sentence (``W``, static).
        embedding_dim: ``d``.
        dtype: float dtype of the result.

    Returns:
        ``[..., num_slots, embedding_dim]``; entries of slots ``j > J`` are
        defined by the same formula but belong to padding (masked by callers).

    Example:
    >>> position_encoding(np.array([2.0]), num_slots=3, embedding_dim=4).shape
    TensorShape([1, 3, 4])
    """
    length = ops.maximum(ops.cast(sentence_lengths, dtype), 1.0)[..., None, None]
    j = ops.cast(ops.arange(1, num_slots + 1), dtype)[:, None]
    k = ops.cast(ops.arange(1, embedding_dim + 1), dtype)[None, :]
    return (1.0 - j / length) - (k / embedding_dim) * (1.0 - 2.0 * j / length)


def coded_position_encoding(num_slots, embedding_dim, dtype="float32"):
    """The authors' coded position encoding (MATLAB ``build_model.m``).

    ``l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (d J)`` with ``J = num_slots``
    the *padded* sentence width (one more than the longest sentence when the
    time word is on, see :class:`MemN2NEmbedding`). The authors acknowledged
    the difference from the paper's formula as unintended.

    Returns:
        ``[num_slots, embedding_dim]``.

    Example:
    >>> coded_position_encoding(3, 4).shape
    TensorShape([3, 4])
    """
    j = ops.cast(ops.arange(1, num_slots + 1), dtype)[:, None]
    k = ops.cast(ops.arange(1, embedding_dim + 1), dtype)[None, :]
    return 1.0 + 4.0 * (k - (embedding_dim + 1) / 2.0) * (j - (num_slots + 1) / 2.0) / (
        embedding_dim * num_slots
    )


def as_padding(ids, mask=None):
    """``ids`` as int32 with the entries that a boolean ``mask`` masks set to the pad id 0.

    ``mask`` may lack trailing axes of ``ids`` (a sentence mask of word ids).

    Example:
    >>> np.asarray(as_padding(np.array([[4, 7], [5, 2]]), np.array([True, False]))).tolist()
    [[4, 7], [0, 0]]
    """
    ids = ops.cast(ids, "int32")
    if mask is None:
        return ids
    keep = ops.cast(mask, "bool")
    while len(keep.shape) < len(ids.shape):
        keep = ops.expand_dims(keep, -1)
    return ops.where(keep, ids, 0)


@keras.saving.register_keras_serializable(package="tpr_keras")
class ZeroPadRow(keras.constraints.Constraint):
    """Sets row 0 (the pad word) of a table back to zero after each optimizer step.

    The authors' code zeroes its nil word's column after every update ("the embedding
    of the null symbol was constrained to be zero", §4.2).

    Example:
    >>> np.asarray(ZeroPadRow()(np.ones((3, 2), "float32"))).tolist()
    [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
    """

    def __call__(self, w):
        keep = ops.cast(ops.arange(ops.shape(w)[0]) > 0, w.dtype)
        return w * keep[:, None]


@keras.saving.register_keras_serializable(package="tpr_keras")
class MemN2NEmbedding(keras.layers.Layer):
    """Sentence (or question) embedding of MemN2N with temporal encoding, §4.1.

    Sukhbaatar et al. (2015) §4.1 builds the memory vectors ``m_i`` of eq. 1 (and
    ``c_i`` of eq. 2) and the question vector ``u`` of eq. 1:
    ``m_i = Σ_j l_j ⊙ A x_ij + T_A(i)`` for a memory, ``u = Σ_j l_j ⊙ B q_j`` for
    the question; bag of words uses ``l_j = 1``. One instance is one matrix of the
    paper (``A^k``, ``B`` or ``C^k``, with its ``T_A``/``T_C`` rows); weight tying
    reuses instances.

    The pad word (id 0) is masked in the lookup: the pad row never contributes
    and gets no gradient, and it is initialised to zero, so it stays exactly
    zero ("the embedding of the null symbol was constrained to be zero",
    §4.2). :meth:`project` uses the table as the answer matrix ``W = C^K``
    (adjacent tying), with the pad row still zero (its logit is 0).

    Args:
        vocabulary_size: number of word ids, including pad (0) and unknown.
        embedding_dim: ``d``.
        sentence_encoding: ``"bag_of_words"``, ``"position"`` (the paper's
            formula, :func:`position_encoding`) or ``"position_code"`` (the
            authors' coded formula, :func:`coded_position_encoding`).
        memory_size: rows of the temporal matrix ``T`` (time index 1 = most
            recent sentence); ``None`` for a table without temporal encoding.
        time_word_slot: only for ``"position_code"``: the authors' code stores
            the time index as an extra last word, so ``J`` is the word slots
            plus one and the temporal vector is scaled by ``l_{·J}``. Default:
            whether ``memory_size`` is set. Pass it explicitly for a question
            table without ``T`` in a model with temporal encoding.
        embeddings_initializer: initializer of the word and temporal tables;
            default N(0, 0.1).
        pad_gradient: look the pad word up like any other word, as the authors'
            code does with its nil word: its row (zero, and set back to zero
            after every optimizer step by :class:`ZeroPadRow`) then gets the
            gradient of every pad slot, and of the time slot of every empty
            memory, which per-matrix clipping (§4.2) counts in the table's
            norm. The outputs are the same either way; the clipped steps are
            not. Default False: the pad row gets no gradient.
        mask_zero: for ids ``[batch, sentences, W]``, give the output the Keras
            mask of the memory slots, ``True`` for a sentence with a non-pad word
            (an all-pad row is an empty memory), so that :class:`MemN2NHop`
            masks the empty slots out of eq. 1. Only the mask changes, not the
            values; default False.

    Call arguments:
        word_ids: int ids ``[..., W]``.
        time_index: optional ``[...]`` temporal index (int, 0 = no temporal term).
        mask: optional boolean ``[..., W]``: a masked word slot counts as padding.

    Input word ids ``[..., W]``; output ``[..., embedding_dim]``.

    Masking:
        Word id 0 is padding whether or not a mask is given. A boolean mask
        ``[..., W]`` (``mask=``, or the Keras mask of the ids, which Keras fills
        in when ``time_index`` is not a tensor) makes the masked word slots
        padding, bit for bit as id 0. The word axis is reduced, so ids
        ``[batch, W]`` (a question) give no output mask. Ids
        ``[batch, sentences, W]`` give the mask ``[batch, sentences]`` of the
        sentences with a word slot that is unmasked (and, with ``mask_zero``, not
        pad): the memory padding mask that :class:`MemN2NHop` consumes. With no
        word mask and no ``mask_zero``, no mask.

    Example:
    >>> table = MemN2NEmbedding(30, 20, memory_size=50, mask_zero=True)
    >>> story = np.array([[[4, 7, 2, 0], [5, 0, 0, 0], [0, 0, 0, 0]]])
    >>> tuple(table(story, time_index=np.array([[2, 1, 0]])).shape)
    (1, 3, 20)
    >>> np.asarray(table.compute_mask(story)).tolist()
    [[True, True, False]]
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim,
        sentence_encoding="position",
        memory_size=None,
        time_word_slot=None,
        embeddings_initializer=None,
        pad_gradient=False,
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if sentence_encoding not in SENTENCE_ENCODINGS:
            raise ValueError(
                f"sentence_encoding must be one of {SENTENCE_ENCODINGS}; "
                f"got {sentence_encoding!r}."
            )
        self.vocabulary_size = int(vocabulary_size)
        self.embedding_dim = int(embedding_dim)
        self.sentence_encoding = sentence_encoding
        self.memory_size = None if memory_size is None else int(memory_size)
        self.time_word_slot = bool(
            self.memory_size is not None if time_word_slot is None else time_word_slot
        )
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer or gaussian_initializer()
        )
        self.pad_gradient = bool(pad_gradient)
        self.mask_zero = bool(mask_zero)
        # Word masks are consumed; the sentence axis keeps a mask (compute_mask).
        self.supports_masking = True

    def build(self, input_shape=None):
        base = self.embeddings_initializer

        def zero_pad_row(shape, dtype=None):
            keep = ops.cast(ops.arange(shape[0]) > 0, dtype or "float32")[:, None]
            return base(shape, dtype=dtype) * keep

        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.embedding_dim),
            initializer=zero_pad_row,
            constraint=ZeroPadRow() if self.pad_gradient else None,
        )
        self.temporal = None
        if self.memory_size is not None:
            self.temporal = self.add_weight(
                name="temporal",
                shape=(self.memory_size, self.embedding_dim),
                initializer=base,
            )
        self.built = True

    def _position_weights(self, keep):
        """``[..., W, d]`` word weights and the time-word weight ``[d]`` or None."""
        num_slots = keep.shape[-1]
        if num_slots is None:
            raise ValueError("MemN2NEmbedding needs a static number of word slots.")
        if self.sentence_encoding == "position":
            lengths = ops.sum(keep, axis=-1)
            return position_encoding(lengths, num_slots, self.embedding_dim, keep.dtype), None
        total = num_slots + 1 if self.time_word_slot else num_slots
        weights = coded_position_encoding(total, self.embedding_dim, keep.dtype)
        time_weight = weights[num_slots] if self.time_word_slot else None
        return weights[:num_slots], time_weight

    def call(self, word_ids, time_index=None, mask=None):
        word_ids = as_padding(word_ids, mask)  # a masked word slot is padding
        keep = ops.cast(ops.not_equal(word_ids, 0), self.compute_dtype)
        words = ops.take(self.embeddings, word_ids, axis=0)
        if not self.pad_gradient:  # else the pad row is zero and takes its gradient
            words = words * keep[..., None]
        time_weight = None
        if self.sentence_encoding != "bag_of_words":
            weights, time_weight = self._position_weights(keep)
            words = words * weights
        sentence = ops.sum(words, axis=-2)
        if time_index is None:
            return sentence
        if self.temporal is None:
            raise ValueError("time_index given to a MemN2NEmbedding without memory_size.")
        time_index = ops.cast(time_index, "int32")
        rows = ops.clip(time_index - 1, 0, self.memory_size - 1)
        has_time = ops.cast(ops.greater(time_index, 0), self.compute_dtype)
        temporal = ops.take(self.temporal, rows, axis=0) * has_time[..., None]
        if self.pad_gradient:  # an empty memory's time word is the (zero) pad word
            temporal = temporal + (1.0 - has_time[..., None]) * self.embeddings[0]
        if time_weight is not None:
            temporal = temporal * time_weight
        return sentence + temporal

    def project(self, vectors):
        """Logits ``vectors Wᵀ`` with this table as ``W`` (pad logit fixed at 0)."""
        if self.pad_gradient:  # the pad row is zero: its logit is 0, its gradient kept
            return ops.matmul(vectors, ops.transpose(self.embeddings))
        keep = ops.cast(ops.arange(self.vocabulary_size) > 0, self.embeddings.dtype)
        return ops.matmul(vectors, ops.transpose(self.embeddings * keep[:, None]))

    def compute_mask(self, inputs, mask=None):
        if len(inputs.shape) < 3 or (mask is None and not self.mask_zero):
            return None  # the word axis is reduced; nothing of it is left to mask
        real = None if mask is None else ops.cast(mask, "bool")
        if self.mask_zero:
            nonzero = ops.not_equal(inputs, 0)
            real = nonzero if real is None else ops.logical_and(real, nonzero)
        return ops.any(real, axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.embedding_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "sentence_encoding": self.sentence_encoding,
                "memory_size": self.memory_size,
                "time_word_slot": self.time_word_slot,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "pad_gradient": self.pad_gradient,
                "mask_zero": self.mask_zero,
            }
        )
        return config
