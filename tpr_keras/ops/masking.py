"""The logit that masked positions get before a softmax (or a max), one value per dtype.

Every masked softmax and masked max of the package (MemN2N's memory attention, TPMHA,
the entailment models' pooling and BiDAF attention) and the TP-Transformer's beam search
(the score of an impossible continuation) use :func:`mask_value` / :data:`MASK_VALUE`.

The masked positions are *replaced* (``where(mask, x, mask_value)``), so the value only
has to lie far below every real logit: ``exp`` of the difference then underflows to
exactly 0 and masked positions get weight 0; a row with every position masked gets equal
weights, not NaN. TPMHA adds it instead (a bias of the mask's shape, one pass fewer in
the backward pass): the same weights in every row with an allowed position, and it
zeroes the rows without one itself. ``-1e9`` does that in ``float32``/``bfloat16``/
``float64``. ``float16`` cannot hold it (it would become ``-inf``, and an all-masked row
NaN), so it gets ``-3e4``, the value of ``keras.layers.Softmax``. MemN2N used ``-6e4``
for ``float16`` before the values were merged; the two give the same weights for every
real logit above ``-3e4``, and nothing in this package runs in ``float16``.
"""

import keras

#: Masked logit for ``float32`` and wider (and ``bfloat16``, which has float32's range).
MASK_VALUE = -1.0e9
#: Masked logit for ``float16`` (largest finite float16 is 65504).
MASK_VALUE_FLOAT16 = -3.0e4


def mask_value(dtype):
    """The masked-position logit for tensors of ``dtype`` (a Python float)."""
    if keras.backend.standardize_dtype(dtype) == "float16":
        return MASK_VALUE_FLOAT16
    return MASK_VALUE


def softmax(x, axis=-1):
    """``keras.ops.softmax`` over ``axis`` in ``float32``, without Keras' warning for an
    axis of size 1.

    Low-precision logits (mixed precision) are cast to ``float32`` for the softmax and
    the weights back to their dtype.

    TP-Transformer's first decoding step attends over one key (eq. 3 with ``Tk = 1``);
    the softmax of one logit is exactly 1, which this returns (``ones_like``) when the
    axis's size is known to be 1, so no backend op and no warning are spent on it.
    """
    if x.shape[axis] == 1:
        return keras.ops.ones_like(x)
    dtype = keras.backend.standardize_dtype(x.dtype)
    if dtype in ("float16", "bfloat16"):
        return keras.ops.cast(keras.ops.softmax(keras.ops.cast(x, "float32"), axis=axis),
                              dtype)
    return keras.ops.softmax(x, axis=axis)
