"""TPRU (the sequence layer) computes exactly keras.layers.RNN(TPRUCell)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.layers import TPRUCell
from tpr_keras.layers.tpru import TPRU


def pair(return_sequences, go_backwards=False, units=6, roles=5):
    fast = TPRU(units, num_roles=roles, seed=3, return_sequences=return_sequences,
                go_backwards=go_backwards)
    slow = keras.layers.RNN(TPRUCell(units, num_roles=roles, seed=3),
                            return_sequences=return_sequences, go_backwards=go_backwards)
    x = np.random.default_rng(0).normal(size=(3, 7, 4)).astype("float32")
    fast(x)
    slow(x)
    slow.set_weights(fast.get_weights())
    return fast, slow, x


@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_equals_the_generic_rnn_with_masks_values_and_gradients(return_sequences, go_backwards):
    fast, slow, x = pair(return_sequences, go_backwards)
    mask = np.ones((3, 7), bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    results = []
    for layer in (fast, slow):
        with tf.GradientTape() as tape:
            out = layer(x, mask=mask)
            loss = tf.reduce_sum(out * np.arange(out.shape[-1], dtype="float32"))
        results.append((out.numpy(), tape.gradient(loss, layer.trainable_weights)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert len(fast.trainable_weights) == 7  # W_x, W_b, W, W_u, W_r, b_b, b_x


def test_bidirectional_and_keras_round_trip(tmp_path):
    fast = keras.layers.Bidirectional(TPRU(6, num_roles=5, seed=3, return_sequences=True))
    slow = keras.layers.Bidirectional(
        keras.layers.RNN(TPRUCell(6, num_roles=5, seed=3), return_sequences=True))
    x = np.random.default_rng(1).normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    fast(x)
    slow(x)
    slow.set_weights(fast.get_weights())
    np.testing.assert_allclose(fast(x, mask=mask), slow(x, mask=mask), rtol=1e-5, atol=1e-6)

    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, TPRU(6, num_roles=5, seed=3, name="tpru")(inputs))
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded(x), model(x))
    assert loaded.get_layer("tpru").get_config() == model.get_layer("tpru").get_config()
