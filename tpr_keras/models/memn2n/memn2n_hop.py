"""MemN2N's memory hop (Sukhbaatar et al., 2015, §2): eq. 1, 2 and 4."""

import keras
from keras import ops

from tpr_keras.models.memn2n.memn2n_embedding import gaussian_initializer
from tpr_keras.ops.masking import mask_value


@keras.saving.register_keras_serializable(package="tpr_keras")
class MemN2NHop(keras.layers.Layer):
    """One memory hop of MemN2N: attention, read-out and state update.

    Sukhbaatar et al. (2015) §2: ``p_i = Softmax(uᵀ m_i)`` (eq. 1),
    ``o = Σ_i p_i c_i`` (eq. 2) and ``u' = u + o`` (eq. 4), or
    ``u' = H u + o`` with a learned ``d × d`` matrix ``H`` for layer-wise
    weight tying (§2.2).

    Empty memory slots (``memory_mask`` False) are masked out of the softmax,
    so the attention sums to 1 over the real memories and is 0 on empty slots.
    With ``mask_empty_memories=False`` they stay in the softmax as the
    authors' code has them (their ``m_i = 0`` gives logit 0).

    Linear start (§4.2): with ``linear`` true the softmax is removed and
    ``p_i = uᵀ m_i`` (0 on masked slots). ``linear`` may be a Python bool or a
    scalar boolean tensor (read in-graph, no retracing when it changes).

    Args:
        use_projection: learn ``H`` (layer-wise tying); default False.
        mask_empty_memories: mask empty slots out of the softmax.
        kernel_initializer: initializer of ``H``; default N(0, 0.1).

    Call arguments:
        inputs: ``[u [batch, d], m [batch, slots, d], c [batch, slots, d]]``.
        memory_mask: boolean ``[batch, slots]``, ``True`` for real memories.
        linear: linear-start mode (a Python bool or a scalar boolean tensor).
        mask: the Keras masks of ``inputs`` (filled in by Keras); the masks of
            ``m`` and ``c`` are used as ``memory_mask`` when that is not given.

    Inputs: ``[u [batch, d], m [batch, slots, d], c [batch, slots, d]]``.
    Outputs: ``(u' [batch, d], p [batch, slots])``.

    Masking:
        Consumes the memory padding mask: ``memory_mask``, or else the Keras masks
        of ``m`` and ``c`` (their AND), e.g. from :class:`MemN2NEmbedding` with
        ``mask_zero=True``. Keras fills them in when ``inputs`` is the only tensor
        argument (pass ``memory_mask`` when ``linear`` is a tensor). With
        ``mask_empty_memories`` a masked slot gets ``p_i = 0`` and adds nothing
        to ``o``, so padded memories give the ``u'`` of the unpadded ones; with
        ``mask_empty_memories=False`` the mask is read and ignored, as in the
        authors' code. ``u'`` and ``p`` have no sequence axis to mask: the
        outputs carry no mask.

    Example:
    >>> hop = MemN2NHop()
    >>> u, p = hop([np.ones((2, 20)), np.ones((2, 5, 20)), np.ones((2, 5, 20))],
    ...            memory_mask=np.array([[1, 1, 1, 0, 0]] * 2, bool))
    >>> tuple(u.shape), np.asarray(p, "float64")[0].round(3).tolist()
    ((2, 20), [0.333, 0.333, 0.333, 0.0, 0.0])
    """

    def __init__(
        self,
        use_projection=False,
        mask_empty_memories=True,
        kernel_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.use_projection = bool(use_projection)
        self.mask_empty_memories = bool(mask_empty_memories)
        self.kernel_initializer = keras.initializers.get(
            kernel_initializer or gaussian_initializer()
        )
        # The memory masks are consumed in call(); the outputs carry none.
        self.supports_masking = True

    def build(self, input_shape):
        query_shape = input_shape[0]
        dim = query_shape[-1]
        self.projection = None
        if self.use_projection:
            self.projection = self.add_weight(
                name="projection", shape=(dim, dim), initializer=self.kernel_initializer
            )
        self.built = True

    def attention(self, query, memory_in, memory_mask=None, linear=False):
        """``p`` of eq. 1 (or the raw scores in linear-start mode)."""
        scores = ops.einsum("bd,bmd->bm", query, memory_in)
        if memory_mask is not None and self.mask_empty_memories:
            keep = ops.cast(memory_mask, "bool")
            keep_f = ops.cast(keep, scores.dtype)
            soft = ops.softmax(
                ops.where(keep, scores, mask_value(scores.dtype)), axis=-1
            ) * keep_f  # an all-empty memory gives p = 0, not NaN
            raw = scores * keep_f
        else:
            soft = ops.softmax(scores, axis=-1)
            raw = scores
        if isinstance(linear, bool):
            return raw if linear else soft
        return ops.where(ops.cast(linear, "bool"), raw, soft)

    def call(self, inputs, memory_mask=None, linear=False, mask=None):
        query, memory_in, memory_out = inputs
        if memory_mask is None and mask is not None:  # the Keras masks of m and c
            for keras_mask in mask[1:]:
                if keras_mask is not None:
                    keras_mask = ops.cast(keras_mask, "bool")
                    memory_mask = (keras_mask if memory_mask is None
                                   else ops.logical_and(memory_mask, keras_mask))
        p = self.attention(query, memory_in, memory_mask, linear)
        read = ops.einsum("bm,bmd->bd", p, memory_out)
        if self.projection is not None:
            query = ops.matmul(query, ops.transpose(self.projection))
        return query + read, p

    def compute_mask(self, inputs, mask=None):
        return None  # u' has no slot axis; p is the attention, not a sequence

    def compute_output_shape(self, input_shape):
        query_shape, memory_shape = input_shape[0], input_shape[1]
        return tuple(query_shape), tuple(memory_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "use_projection": self.use_projection,
                "mask_empty_memories": self.mask_empty_memories,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
