import keras
import numpy as np

from tpr_keras.layers import SentenceEncoder


def test_eq5_and_padding_contributes_nothing():
    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4)
    ids = np.array([[3, 5, 0, 0]])
    out = encoder(ids).numpy()
    table = encoder.embedding.embeddings.numpy()
    positions = encoder.positions.numpy()
    np.testing.assert_allclose(positions, np.full((4, 4), 0.25))  # init 1/k
    expected = table[3] * positions[0] + table[5] * positions[1]
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)
    # Changing the pad row of the embedding does not change the output.
    table[0] = 100.0
    encoder.embedding.embeddings.assign(table)
    np.testing.assert_allclose(encoder(ids).numpy(), out, rtol=1e-6)


def test_embedding_init_range_and_batch_axes():
    encoder = SentenceEncoder(vocabulary_size=50, symbol_dim=8)
    out = encoder(np.ones((2, 3, 5), "int32"))
    assert out.shape == (2, 3, 8)
    table = encoder.embedding.embeddings.numpy()
    assert np.abs(table).max() <= 0.01 and table.std() > 0


def test_config_round_trip():
    encoder = SentenceEncoder(vocabulary_size=10, symbol_dim=4, name="enc")
    clone = SentenceEncoder.from_config(encoder.get_config())
    assert clone.get_config() == encoder.get_config()
    assert isinstance(keras.layers.deserialize(keras.layers.serialize(encoder)), SentenceEncoder)
