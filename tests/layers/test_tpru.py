"""TPRU (the sequence layer) computes exactly keras.layers.RNN(TPRUCell), in each loop the
backend has (``keras.ops.scan`` everywhere; TensorFlow's ``tf.while_loop`` and ``tf.scan``
on TensorFlow) and unrolled, values and gradients, eagerly and compiled."""

import keras
import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.layers import TPRUCell
from tpr_keras.layers.tpru import TPRU
from tests.layers.masking import IDS, REAL, check_propagates, masked_model, tolerance, unpadded

ON_TF = keras.backend.backend() == "tensorflow"
LOOPS = ("while", "scan", "ops") if ON_TF else ("ops",)
# XLA cannot differentiate Keras' TensorFlow scan (no trip count): on TensorFlow, the
# layer's own loops are the ones it compiles.
XLA_LOOPS = ("while", "scan") if ON_TF else ("ops",)


def pair(return_sequences, go_backwards=False, units=6, roles=5, loop="auto"):
    fast = TPRU(units, num_roles=roles, seed=3, return_sequences=return_sequences,
                go_backwards=go_backwards)
    fast.loop = loop
    slow = keras.layers.RNN(TPRUCell(units, num_roles=roles, seed=3),
                            return_sequences=return_sequences, go_backwards=go_backwards)
    x = np.random.default_rng(0).normal(size=(3, 7, 4)).astype("float32")
    fast(x)
    slow(x)
    slow.set_weights(fast.get_weights())
    return fast, slow, x


def run(layer, x, mask):
    """The layer's outputs and the gradients of a weighted sum of them."""
    def loss():
        out = layer(x, mask=mask)
        return ops.sum(out * np.arange(out.shape[-1], dtype="float32"))

    _, grads, _ = testing.value_and_gradients(loss, layer.trainable_weights)
    return layer(x, mask=mask), grads


def values_and_gradients(layer, x, mask, compiled):
    fn = lambda x, mask: run(layer, x, mask)  # noqa: E731
    if compiled and ON_TF:  # a traced graph with an unknown time dimension, as in training
        import tensorflow as tf

        fn = tf.function(fn, input_signature=[tf.TensorSpec([None, None, 4]),
                                              tf.TensorSpec([None, None], tf.bool)])
    elif compiled:
        fn = testing.compiled(fn)
    out, grads = fn(ops.convert_to_tensor(x), ops.convert_to_tensor(mask))
    return testing.numpy(out), [testing.numpy(g) for g in grads]


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_equals_the_generic_rnn_with_masks_values_and_gradients(loop, return_sequences,
                                                                go_backwards):
    fast, slow, x = pair(return_sequences, go_backwards, loop=loop)
    mask = np.ones((3, 7), bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    results = [values_and_gradients(layer, x, mask, compiled=layer is fast)
               for layer in (fast, slow)]
    # Outputs of order 1 after 7 steps whose sums (over 4 inputs and 6 units) a compiled
    # loop fuses and orders differently: 7 * 10 * float32 eps (1.2e-7) ~ 1e-5 of the scale
    # (seen: 1.3e-6 on XLA's CPU under load).
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-5)
    # A gradient entry sums products over the 7 steps whose sizes are those of all the
    # gradients (up to ~70 here), so a reordered sum errs by ~1e-5 of that scale (7 steps *
    # ~10 terms * float32 eps), not of the entry: seen 1.1e-4 on an entry of 0.9 under XLA's
    # CPU on a loaded machine (a fifth of that when quiet), and 4.4e-6 on a scalar weight's
    # gradient of 0.014, whose own size says nothing of the terms summed into it.
    scale = max(np.abs(g).max() for g in results[1][1])
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * scale)
    assert len(fast.trainable_weights) == 7  # W_x, W_b, W, W_u, W_r, b_b, b_x
    if return_sequences and not go_backwards:  # a masked step repeats the last output
        np.testing.assert_array_equal(results[0][0][2, 2:],
                                      np.repeat(results[0][0][2, 1:2], 5, axis=0))


@pytest.mark.parametrize("loop", XLA_LOOPS)
def test_compiles_with_xla_values_and_gradients(loop):
    """Compiled by XLA (``jit_compile=True`` / ``jax.jit``), the layer gives its eager values
    and gradients, last state only."""
    layer = TPRU(6, num_roles=5, seed=3)
    layer.loop = loop
    x = ops.convert_to_tensor(np.random.default_rng(2).normal(size=(3, 7, 4)).astype("float32"))
    mask = ops.convert_to_tensor(np.arange(7)[None] < np.array([[7], [5], [2]]))
    layer(x)

    eager = run(layer, x, mask)
    compiled = testing.compiled(lambda x, mask: run(layer, x, mask), jit_compile=True)(x, mask)
    np.testing.assert_allclose(testing.numpy(compiled[0]), testing.numpy(eager[0]),
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_allclose(testing.numpy(a), testing.numpy(b), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("loop", LOOPS)
def test_bidirectional_zero_outputs_for_masked_steps(loop):
    fast = TPRU(6, num_roles=5, seed=3, return_sequences=True)
    fast.loop = loop
    fast = keras.layers.Bidirectional(fast)
    slow = keras.layers.Bidirectional(
        keras.layers.RNN(TPRUCell(6, num_roles=5, seed=3), return_sequences=True))
    x = np.random.default_rng(1).normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    fast(x)
    slow(x)
    slow.set_weights(fast.get_weights())
    out = testing.numpy(fast(x, mask=mask))
    np.testing.assert_allclose(out, testing.numpy(slow(x, mask=mask)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[0, 3:], 0.0)  # zero_output_for_mask, both halves
    assert np.abs(out[0, :3]).min() > 0.0


def test_keras_round_trip(tmp_path):
    x = np.random.default_rng(1).normal(size=(2, 5, 4)).astype("float32")
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, TPRU(6, num_roles=5, seed=3, name="tpru")(inputs))
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(testing.numpy(loaded(x)), testing.numpy(model(x)))
    assert loaded.get_layer("tpru").get_config() == model.get_layer("tpru").get_config()
    assert loaded.get_layer("tpru").loop == TPRU.loop == "auto"


@pytest.mark.parametrize("return_sequences", [False, True])
def test_unrolled_equals_the_generic_rnn_with_masks(return_sequences):
    fast, slow, x = pair(return_sequences)
    fast.unroll = True
    mask = np.arange(7)[None] < np.array([[7], [4], [1]])
    np.testing.assert_allclose(testing.numpy(fast(x, mask=mask)), testing.numpy(slow(x, mask=mask)),
                               rtol=1e-5, atol=1e-6)


def test_an_unknown_loop_is_a_named_error():
    layer = TPRU(6, num_roles=5, seed=3)
    layer.loop = "fast"
    with pytest.raises(ValueError, match="Unknown TPRU loop 'fast': choose auto, ops"):
        layer(np.zeros((1, 3, 4), "float32"))


@pytest.mark.skipif(ON_TF, reason="TensorFlow has these loops")
@pytest.mark.parametrize("loop", ["while", "scan"])
def test_a_tensorflow_loop_off_tensorflow_is_a_named_error(loop):
    layer = TPRU(6, num_roles=5, seed=3)
    layer.loop = loop
    with pytest.raises(ValueError, match=f"TPRU loop '{loop}' is TensorFlow's; Keras runs on"):
        layer(np.zeros((1, 3, 4), "float32"))


def test_consumes_an_embedding_mask():
    # The last state: trailing padding leaves it as the unpadded sequence's; no mask out.
    last = TPRU(6, num_roles=5, seed=3)
    model, warned = masked_model(last, pool=False)
    assert warned == []
    out = testing.numpy(model(IDS))
    scale = max(1.0, np.abs(out).max())
    for i, row in enumerate(unpadded(model)):  # T steps of width-4 and width-6 matmuls
        np.testing.assert_allclose(out[i], row, rtol=0, atol=tolerance(*[4 + 6] * 6, scale=scale))
    mask = ops.convert_to_tensor(REAL)
    assert last.compute_mask(IDS, mask) is None
    # With return_sequences the time axis stays, and so does the mask.
    sequences = TPRU(6, num_roles=5, seed=3, return_sequences=True)
    check_propagates(sequences, *[4 + 6] * 6)
    np.testing.assert_array_equal(testing.numpy(sequences.compute_mask(IDS, mask)), REAL)
