import keras
import numpy as np
import pytest
from keras import ops

from tests.layers.masking import check_propagates
from tpr_keras import testing
from tpr_keras.layers import LayerNorm

EPS32 = np.finfo("float32").eps


def pair(shape, axis=-1, **kwargs):
    """A LayerNorm and Keras' LayerNormalization built for ``shape`` with the same random
    gamma and beta."""
    rng = np.random.default_rng(0)
    ours = LayerNorm(axis=axis, epsilon=1e-5, **kwargs)
    keras_norm = keras.layers.LayerNormalization(axis=axis, epsilon=1e-5, **kwargs)
    for norm in (ours, keras_norm):
        norm.build(shape)
    for weight in ours.weights:
        weight.assign(rng.normal(1.0, 0.5, weight.shape).astype("float32"))
    keras_norm.set_weights(ours.get_weights())
    return ours, keras_norm


def gradients(norm, x, upstream):
    """``(y, [dgamma, dbeta], dx)`` of ``sum(norm(x) * upstream)``, compiled."""
    fn = testing.compiled(lambda x: testing.value_and_gradients(
        lambda x: ops.sum(norm(x) * upstream), norm.trainable_weights, [x]))
    value, weight_grads, (dx,) = fn(x)
    return [testing.numpy(g) for g in weight_grads], testing.numpy(dx)


@pytest.mark.parametrize("scale", [1.0, 50.0])
def test_values_and_gradients_equal_keras_layer_normalization(scale):
    rng = np.random.default_rng(1)
    x = (rng.normal(0.3, scale, (3, 5, 16))).astype("float32")
    upstream = rng.normal(size=(3, 5, 16)).astype("float32")
    ours, keras_norm = pair(x.shape)
    y, y_keras = testing.numpy(ours(x)), testing.numpy(keras_norm(x))
    # Normalised values are O(1) times gamma: a few roundings of each, over 16 features.
    tolerance = 8 * EPS32 * np.sqrt(16) * np.abs(y_keras).max()
    np.testing.assert_allclose(y, y_keras, atol=tolerance)
    (dg, db), dx = gradients(ours, x, upstream)
    (dg_k, db_k), dx_k = gradients(keras_norm, x, upstream)
    # dgamma, dbeta sum 15 rows; dx is O(|gamma| |dy| / sigma) over 16 features.
    for ours_g, keras_g in ((dg, dg_k), (db, db_k), (dx, dx_k)):
        tolerance = 16 * EPS32 * np.sqrt(16 * 15) * np.abs(keras_g).max()
        np.testing.assert_allclose(ours_g, keras_g, atol=tolerance)
    # ... and the input gradient against the closed form evaluated in float64.
    x64, g64 = x.astype("float64"), testing.numpy(ours.gamma).astype("float64")
    sigma = np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    x_hat = (x64 - x64.mean(-1, keepdims=True)) / sigma
    d_hat = upstream * g64
    expected = (d_hat - d_hat.mean(-1, keepdims=True)
                - x_hat * (d_hat * x_hat).mean(-1, keepdims=True)) / sigma
    np.testing.assert_allclose(dx, expected, atol=16 * EPS32 * 4 * np.abs(expected).max())


def test_a_one_position_change_moves_only_its_own_gradient_row():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    upstream = rng.normal(size=x.shape).astype("float32")
    ours, _ = pair(x.shape)
    _, dx = gradients(ours, x, upstream)
    changed = x.copy()
    changed[1, 2] *= 3.0
    _, dx_changed = gradients(ours, changed, upstream)
    moved = np.abs(dx_changed - dx).max(-1) > 1e-6
    assert moved.tolist() == [[False] * 4, [False, False, True, False]]


def test_other_axes_or_no_shift_or_scale_fall_back_to_keras():
    x = np.random.default_rng(3).normal(size=(2, 3, 4)).astype("float32")
    for kwargs in ({"axis": 1}, {"axis": [1, 2]}, {"center": False}, {"scale": False}):
        ours, keras_norm = pair(x.shape, **kwargs)
        np.testing.assert_array_equal(testing.numpy(ours(x)), testing.numpy(keras_norm(x)))


def test_mixed_precision_normalises_in_float32_and_returns_the_compute_dtype():
    x = np.random.default_rng(4).normal(3.0, 2.0, (2, 3, 8)).astype("float32")
    ours, keras_norm = pair(x.shape, dtype="mixed_bfloat16")
    y, y_keras = ours(ops.cast(x, "bfloat16")), keras_norm(ops.cast(x, "bfloat16"))
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    assert keras.backend.standardize_dtype(ours.gamma.dtype) == "float32"
    # Both normalise the same bfloat16 input in float32 and round once to bfloat16.
    np.testing.assert_allclose(testing.numpy(ops.cast(y, "float32")),
                               testing.numpy(ops.cast(y_keras, "float32")),
                               atol=2 * 2.0 ** -8 * 4)


def test_config_and_weights_are_layer_normalization_s():
    x = np.ones((2, 8), "float32")
    ours, keras_norm = pair(x.shape)
    assert [w.path.split("/")[-1] for w in ours.weights] == ["gamma", "beta"]
    restored = keras.layers.deserialize(keras.layers.serialize(ours))
    assert type(restored) is LayerNorm and restored.get_config() == ours.get_config()
    keras_config = keras_norm.get_config()
    assert {k: v for k, v in ours.get_config().items() if k != "name"} == {
        k: v for k, v in keras_config.items() if k != "name"}


@pytest.mark.tensorflow_backend
def test_its_gradient_graph_has_fewer_ops_than_autodiff_of_the_moments():
    import tensorflow as tf

    x = tf.constant(np.random.default_rng(5).normal(size=(2, 3, 8)).astype("float32"))
    counts = []
    for norm in pair(x.shape):
        fn = tf.function(lambda x, norm=norm: testing.value_and_gradients(
            lambda x: tf.reduce_sum(norm(x) * x), norm.trainable_weights, [x]),
            autograph=False)
        graph = fn.get_concrete_function(x).graph
        counts.append(sum(op.type not in ("Const", "Identity", "NoOp", "ReadVariableOp",
                                          "Placeholder") for op in graph.get_operations()))
    ours, keras_ops = counts
    assert ours < 0.8 * keras_ops, counts


def test_passes_a_keras_mask_through():
    norm = LayerNorm()
    model, _ = check_propagates(norm, 4, 4, 4)  # mean, variance, scale over width 4
    assert model.get_layer(norm.name) is norm
