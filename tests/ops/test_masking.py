"""tpr_keras.ops.masking: one masked-logit value per dtype, used by every masked softmax."""

import warnings

import numpy as np
from keras import ops

from tpr_keras.ops.masking import MASK_VALUE, MASK_VALUE_FLOAT16, mask_value, softmax


def test_mask_value_per_dtype():
    assert mask_value("float32") == MASK_VALUE == -1.0e9
    assert mask_value("float64") == MASK_VALUE
    assert mask_value("bfloat16") == MASK_VALUE
    assert mask_value("float16") == MASK_VALUE_FLOAT16
    assert np.isfinite(np.float16(MASK_VALUE_FLOAT16))
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(MASK_VALUE))  # why float16 needs its own value


def test_masked_softmax_gives_zero_weight_and_no_nan_in_float16():
    scores = np.array([[3.0, -2.0, 7.0], [1.0, 2.0, 3.0]], np.float16)
    keep = np.array([[True, True, False], [False, False, False]])
    masked = ops.where(keep, scores, ops.cast(mask_value("float16"), "float16"))
    weights = ops.convert_to_numpy(ops.softmax(masked, axis=-1)).astype(np.float32)
    assert weights[0, 2] == 0.0
    np.testing.assert_allclose(weights[0, :2], np.exp([5.0, 0.0]) / np.exp([5.0, 0.0]).sum(),
                               rtol=2e-3)
    np.testing.assert_allclose(weights[1], [1 / 3] * 3, rtol=2e-3)  # all masked: uniform


def test_layers_and_models_use_the_shared_value():
    """The layers and models that mask read this module's value (no local constant)."""
    import tpr_keras.models.memn2n.memn2n_hop as memn2n
    import tpr_keras.layers.tp_attention as tp_attention
    import tpr_keras.models.entailment.entailment_layers as entailment
    import tpr_keras.models.tp_transformer.decoding as tp_transformer

    assert memn2n.mask_value is mask_value and tp_attention.mask_value is mask_value
    assert entailment.mask_value is mask_value and tp_transformer.MASK_VALUE == MASK_VALUE
    for module in (memn2n, tp_attention, entailment, tp_transformer):
        assert not {"_large_negative", "_mask_value", "_NEG", "_NEG_INF"} & set(vars(module))


def test_softmax_is_keras_softmax_and_exactly_one_over_one_key():
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2, 3, 5)), "float32")
    np.testing.assert_allclose(ops.convert_to_numpy(softmax(x)),
                               ops.convert_to_numpy(ops.softmax(x)), atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # keras.ops.softmax warns over an axis of size 1
        one = ops.convert_to_numpy(softmax(x[..., :1] * 1e3))
    assert one.shape == (2, 3, 1) and (one == 1.0).all()
