import keras
import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.layers import SentenceEncoder


def test_eq5_and_padding_contributes_nothing():
    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4)
    ids = np.array([[3, 5, 0, 0]])
    out = testing.numpy(encoder(ids))
    table = testing.numpy(encoder.embedding.embeddings)
    positions = testing.numpy(encoder.positions)
    np.testing.assert_allclose(positions, np.full((4, 4), 0.25))  # init 1/k
    expected = table[3] * positions[0] + table[5] * positions[1]
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)
    # Changing the pad row of the embedding does not change the output.
    table[0] = 100.0
    encoder.embedding.embeddings.assign(table)
    np.testing.assert_allclose(testing.numpy(encoder(ids)), out, rtol=1e-6)


def test_embedding_init_range_and_batch_axes():
    encoder = SentenceEncoder(vocabulary_size=50, symbol_dim=8)
    out = encoder(np.ones((2, 3, 5), "int32"))
    assert out.shape == (2, 3, 8)
    table = testing.numpy(encoder.embedding.embeddings)
    assert np.abs(table).max() <= 0.01 and table.std() > 0


def test_config_round_trip():
    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4, name="enc")
    clone = SentenceEncoder.from_config(encoder.get_config())
    assert clone.get_config() == encoder.get_config()
    assert isinstance(keras.layers.deserialize(keras.layers.serialize(encoder)), SentenceEncoder)


def test_pad_words_anywhere_and_empty_sentences():
    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4)
    ids = np.array([[[3, 0, 5, 0], [0, 0, 0, 0]], [[9, 9, 1, 2], [0, 7, 0, 0]]])
    out = testing.numpy(encoder(ids))
    table = testing.numpy(encoder.embedding.embeddings)
    positions = testing.numpy(encoder.positions)
    expected = np.zeros((2, 2, 4), "float32")
    for b, s, i in zip(*np.nonzero(ids)):
        expected[b, s] += table[ids[b, s, i]] * positions[i]
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert not out[0, 1].any()  # an all-pad sentence encodes to zero


# The error is TensorFlow's (its CPU gather checks ids); on JAX, take fills the row with NaN.
@pytest.mark.tensorflow_backend
def test_id_outside_the_vocabulary_raises():
    import tensorflow as tf

    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4)
    with pytest.raises(tf.errors.InvalidArgumentError):
        encoder(np.array([[3, 10, 0, 0]]))  # id outside the vocabulary


def test_gradients_equal_the_dense_formula():
    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4)
    ids = np.array([[[3, 0, 5, 0], [0, 0, 0, 0]], [[9, 9, 1, 2], [0, 7, 0, 0]]])
    probe = np.random.default_rng(0).normal(size=(2, 2, 4)).astype("float32")
    encoder(ids)
    weights = [encoder.embedding.embeddings, encoder.positions]

    def fast():
        return ops.sum(encoder(ids) * probe)

    def dense():
        words = ops.take(weights[0], ids, axis=0) * ops.cast(ids > 0, "float32")[..., None]
        return ops.sum(ops.sum(words * weights[1], axis=-2) * probe)

    _, got, _ = testing.value_and_gradients(fast, weights)
    _, want, _ = testing.value_and_gradients(dense, weights)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(testing.numpy(g), testing.numpy(w), rtol=1e-5, atol=1e-7)


def test_scaled_positions_store_ones_and_compute_eq5_as_the_direct_ones():
    """The authors' parametrisation (a variable at ones, divided by k) gives the sentence
    vectors that the direct one (a variable at 1/k) gives, and round-trips its config."""
    ids = np.array([[3, 5, 7, 0], [2, 2, 9, 4]])
    direct = SentenceEncoder(vocabulary_size=10, symbol_dim=6)
    scaled = SentenceEncoder(vocabulary_size=10, symbol_dim=6, scaled_positions=True)
    direct.build(ids.shape)
    scaled.build(ids.shape)
    scaled.embedding.embeddings.assign(direct.embedding.embeddings)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(scaled.positions), 1.0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(scaled(ids)),
                               keras.ops.convert_to_numpy(direct(ids)), rtol=1e-6)
    assert SentenceEncoder.from_config(scaled.get_config()).scaled_positions


def test_mixed_precision_gradient_of_a_frequent_word_accumulates_in_float32():
    """Under ``mixed_bfloat16`` the table's gradient is summed in ``float32``: 4,000
    occurrences of one word, each contributing ``bfloat16(1/5)``, sum to exactly
    ``4000 · bfloat16(1/5)`` (a ``bfloat16`` running sum stalls at 64, where its spacing
    of 0.5 swallows each 0.2), and the pad row still gets none."""
    encoder = SentenceEncoder(vocabulary_size=6, symbol_dim=2, scaled_positions=True,
                              dtype="mixed_bfloat16")
    ids = np.full((1000, 5), 3)
    ids[:, 4] = 0  # pad slots gather row 0 and must leave it without gradient
    encoder.build(ids.shape)
    _, (table, _), _ = testing.value_and_gradients(
        lambda: ops.sum(ops.cast(encoder(ids), "float32")),
        [encoder.embedding.embeddings, encoder.positions])
    table = testing.numpy(table)
    assert table.dtype == np.float32
    one_fifth_bf16 = float(ops.convert_to_numpy(ops.cast(ops.cast(1.0, "bfloat16") / 5.0,
                                                         "float32")))
    np.testing.assert_allclose(table[3], 4000 * one_fifth_bf16, rtol=1e-6)
    np.testing.assert_array_equal(table[[0, 1, 2, 4, 5]], 0.0)


def test_a_mask_removes_word_slots_and_the_word_axis_from_the_mask():
    encoder = SentenceEncoder(vocabulary_size=12, symbol_dim=4)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 12, size=(2, 3, 5))
    mask = rng.random((2, 3, 5)) < 0.6
    mask[1, 2] = False  # a sentence with every word masked
    encoder(ids)
    encoder.positions.assign(rng.normal(size=(5, 4)).astype("float32"))
    # A masked word slot counts as padding (id 0), bit for bit.
    np.testing.assert_array_equal(testing.numpy(encoder(ids, mask=mask)),
                                  testing.numpy(encoder(np.where(mask, ids, 0))))
    assert not np.allclose(testing.numpy(encoder(ids, mask=mask)), testing.numpy(encoder(ids)))
    # The word axis is reduced: a sentence stays unmasked if any of its words is.
    np.testing.assert_array_equal(testing.numpy(encoder.compute_mask(ids, mask)), mask.any(-1))
    assert encoder.compute_mask(ids[:, 0], mask[:, 0]) is None
    assert encoder.compute_mask(ids, None) is None
