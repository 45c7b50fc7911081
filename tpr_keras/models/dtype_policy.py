"""The dtype policy a model is built under, kept in its config.

Mixed precision runs a model's matrix products in ``bfloat16`` or ``float16`` with
``float32`` variables (Keras' ``mixed_*`` policies). The numerically sensitive parts stay
``float32`` whatever the policy: every model builds them with ``dtype=FLOAT32`` (the TPR
memory and its reads, TPRU's normalised recurrence, MemN2N's memory hops), and the
softmax of the attention (:func:`tpr_keras.ops.masking.softmax`), the layer norm
(:class:`~tpr_keras.layers.ScalarLayerNorm`) and the losses
(:mod:`tpr_keras.training.losses`) compute in ``float32``.
"""

import contextlib

import keras

#: The policies the models are built and tested under.
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
#: The policy of the numerically sensitive layers.
FLOAT32 = "float32"


def resolve(dtype=None):
    """The policy name for ``dtype`` (None: Keras' global policy); a clear error for
    one outside :data:`POLICIES`."""
    if dtype is None:
        dtype = keras.config.dtype_policy()
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    if name not in POLICIES:
        raise ValueError(f"Unknown dtype policy {name!r}: choose one of {list(POLICIES)}.")
    return name


@contextlib.contextmanager
def building_under(dtype=None):
    """Creates the layers inside the block under ``dtype``'s policy (Keras' global
    policy for the block, restored after); yields the policy name.

    Example:
    >>> with building_under("mixed_bfloat16") as policy:
    ...     dense = keras.layers.Dense(4)
    >>> dense.compute_dtype, policy
    ('bfloat16', 'mixed_bfloat16')
    """
    name = resolve(dtype)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield name
    finally:
        keras.config.set_dtype_policy(previous)
