"""MemN2NNetwork: which sentences the memory keeps and their time indices, the temporal
encoding and random noise, adjacent and layer-wise weight tying (the adjacent network
against a NumPy forward pass), the linear-start switch without retracing, invalid
arguments and the layers' configs round-tripping."""

import keras
import numpy as np
import pytest
from keras import ops

from tests.models.memn2n_inputs import story_batch
from tpr_keras import testing
from tpr_keras.models.memn2n import MemN2NEmbedding, MemN2NHop, MemN2NNetwork
from tpr_keras.models.memn2n.memn2n_embedding import position_encoding

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend


# -------------------------------------------------------------------- network
def test_memory_keeps_last_sentences_and_most_recent_has_time_index_1():
    story, _ = story_batch()
    net = MemN2NNetwork(30, 8, memory_size=4)
    ids, mask, count = (testing.numpy(t) for t in net.memory_slots(story))
    assert ids.shape == (3, 4, 4)
    np.testing.assert_array_equal(count, [4, 2, 0])
    # Example 0: 6 sentences, the last 4 kept, most recent first.
    np.testing.assert_array_equal(ids[0, :, :2], [[7, 15], [6, 14], [5, 13], [4, 12]])
    # Example 1: 2 real sentences followed by 4 padding rows.
    np.testing.assert_array_equal(ids[1, 0], [6, 0, 0, 0])
    np.testing.assert_array_equal(ids[1, 1], [3, 4, 5, 0])
    np.testing.assert_array_equal(ids[1, 2:], 0)
    np.testing.assert_array_equal(mask, [[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]])
    time = testing.numpy(net.time_indices(mask, count))
    np.testing.assert_array_equal(time, [[1, 2, 3, 4], [1, 2, 0, 0], [0, 0, 0, 0]])
    # Time counts from the end of the real story: leading padding is ignored too.
    shifted = np.concatenate([np.zeros((3, 3, 4), "int32"), story], axis=1)
    np.testing.assert_array_equal(testing.numpy(net.memory_slots(shifted)[0]), ids)


def test_temporal_encoding_uses_row_of_the_recency_index():
    story, question = story_batch()
    net = MemN2NNetwork(30, 8, memory_size=4, num_hops=1, sentence_encoding="bag_of_words")
    net([story, question])
    # Example 1 has 2 sentences: the most recent ([6]) must get T row 0.
    table = net.tables[0]
    ids, mask, count = net.memory_slots(story)
    m = testing.numpy(table(ids, time_index=net.time_indices(mask, count)))
    a, t = testing.numpy(table.embeddings), testing.numpy(table.temporal)
    np.testing.assert_allclose(m[1, 0], a[6] + t[0], rtol=1e-6)
    np.testing.assert_allclose(m[1, 1], a[3] + a[4] + a[5] + t[1], rtol=1e-6)
    np.testing.assert_array_equal(m[1, 2:], 0.0)


def test_random_noise_only_in_training():
    story = np.ones((16, 30, 4), "int32")
    story[8:, 20:] = 0  # 20 sentences in half of the batch
    question = np.ones((16, 4), "int32")
    net = MemN2NNetwork(30, 8, memory_size=25, random_noise=0.1, seed=3)
    first = testing.numpy(net([story, question], training=False))
    np.testing.assert_array_equal(testing.numpy(net([story, question])), first)
    ids, mask, count = net.memory_slots(story)
    base = testing.numpy(net.time_indices(mask, count, training=False))
    moved = False
    for _ in range(5):
        noisy = testing.numpy(net.time_indices(mask, count, training=True))
        np.testing.assert_array_equal(noisy == 0, base == 0)  # empty stays empty
        for row, n in zip(noisy, testing.numpy(count)):
            real = row[:n]
            assert real.min() >= 1 and real.max() <= 25
            assert (np.diff(real) >= 0).all()  # order kept
            assert real[-1] <= min(n + int(np.ceil(0.1 * n)), 25)
        moved |= bool((noisy != base).any())
    assert moved
    assert not np.allclose(testing.numpy(net([story, question], training=True)), first)
    quiet = MemN2NNetwork(30, 8, memory_size=25, random_noise=0.0)
    np.testing.assert_array_equal(
        testing.numpy(quiet([story, question], training=True)),
        testing.numpy(quiet([story, question], training=False)),
    )


def test_random_noise_is_seeded():
    story = np.ones((4, 30, 4), "int32")
    outs = []
    for _ in range(2):
        net = MemN2NNetwork(30, 8, memory_size=25, seed=7)
        _, mask, count = net.memory_slots(story)
        outs.append(testing.numpy(net.time_indices(mask, count, training=True)))
    np.testing.assert_array_equal(outs[0], outs[1])


def trainable_count(layer):
    return sum(int(np.prod(w.shape)) for w in layer.trainable_weights)


def test_adjacent_weight_tying_shares_tables():
    story, question = story_batch()
    vocab, dim, hops, size = 30, 8, 3, 4
    net = MemN2NNetwork(vocab, dim, num_hops=hops, memory_size=size)
    net([story, question])
    assert len(net.tables) == hops + 1
    assert net.question_table is net.input_tables[0]  # B = A^1
    for k in range(hops - 1):
        assert net.output_tables[k] is net.input_tables[k + 1]  # A^{k+1} = C^k
    assert net.output_matrix is None  # W^T = C^K
    assert all(hop.projection is None for hop in net.hops)
    assert trainable_count(net) == (hops + 1) * (vocab * dim + size * dim)
    _, attention = net([story, question], return_attention=True)
    assert attention.shape == (3, hops, size)
    no_time = MemN2NNetwork(vocab, dim, num_hops=hops, memory_size=size, temporal_encoding=False)
    no_time([story, question])
    assert trainable_count(no_time) == (hops + 1) * vocab * dim


def reference_forward(net, story, question):
    """NumPy eq. 1-4 for adjacent tying with the paper's PE and temporal encoding."""
    tables = [(testing.numpy(t.embeddings), testing.numpy(t.temporal)) for t in net.tables]

    def embed(table, words, time=None):
        words = [w for w in words if w]
        encoding = testing.numpy(
            position_encoding(np.array(float(len(words))), len(words), net.embedding_dim))
        vec = sum(encoding[j] * table[0][w] for j, w in enumerate(words))
        return vec + (table[1][time - 1] if time else 0.0)

    logits = []
    for b in range(story.shape[0]):
        real = [s for s in story[b] if s.any()][-net.memory_size:][::-1]  # most recent first
        u = embed(tables[0], question[b])
        for k in range(net.num_hops):
            m = np.array([embed(tables[k], s, i + 1) for i, s in enumerate(real)])
            c = np.array([embed(tables[k + 1], s, i + 1) for i, s in enumerate(real)])
            p = np.exp(m @ u) / np.exp(m @ u).sum()
            u = u + p @ c
        w = tables[-1][0].copy()
        w[0] = 0.0
        logits.append(w @ u)  # W^T = C^K
    return np.array(logits)


def test_adjacent_network_matches_numpy_reference():
    story, question = story_batch()
    story, question = story[:2], question[:2]  # example 2 has no memories
    net = MemN2NNetwork(30, 8, num_hops=2, memory_size=4)
    np.testing.assert_allclose(
        testing.numpy(net([story, question])), reference_forward(net, story, question),
        rtol=1e-4, atol=1e-5,
    )


def test_layer_wise_weight_tying_shares_a_c_and_h():
    story, question = story_batch()
    vocab, dim, hops, size = 30, 8, 3, 4
    net = MemN2NNetwork(vocab, dim, num_hops=hops, memory_size=size, weight_tying="layer_wise")
    net([story, question])
    assert all(t is net.input_tables[0] for t in net.input_tables)
    assert all(t is net.output_tables[0] for t in net.output_tables)
    assert net.input_tables[0] is not net.output_tables[0]
    assert net.question_table not in (net.input_tables[0], net.output_tables[0])
    assert net.question_table.temporal is None
    assert all(hop is net.hops[0] for hop in net.hops)
    assert net.hops[0].projection.shape == (dim, dim)
    # A, B, C, W (V x d each), H (d x d), T_A, T_C (M x d each).
    assert trainable_count(net) == 4 * vocab * dim + dim * dim + 2 * size * dim


# An already traced tf.function reads the switch variable at each call; jax.jit instead
# bakes in the values of the variables it closes over (see the stateless test below).
@pytest.mark.tensorflow_backend
def test_network_linear_start_switch_without_retracing():
    import tensorflow as tf

    story, question = story_batch()
    net = MemN2NNetwork(30, 8, memory_size=4, linear_start=True)
    net([story, question])  # build outside the tf.function
    traces = []

    @tf.function
    def attention(story, question):
        traces.append(1)
        return net([story, question], return_attention=True)[1]

    p = testing.numpy(attention(story, question))
    assert net.linear_start_enabled() and net.get_config()["linear_start"] is True
    assert not np.allclose(p[0].sum(-1), 1.0)  # raw scores
    np.testing.assert_array_equal(p[1, :, 2:], 0.0)
    net.set_linear_start(False)
    p = testing.numpy(attention(story, question))
    np.testing.assert_allclose(p[:2].sum(-1), 1.0, rtol=1e-5)
    assert len(traces) == 1
    assert net.get_config()["linear_start"] is False
    assert not net.linear_start.trainable


def test_network_linear_start_switch_is_state_of_a_compiled_call():
    """The switch is a (non-trainable) variable: one compiled stateless call serves both
    modes, on every backend."""
    story, question = story_batch()
    net = MemN2NNetwork(30, 8, memory_size=4, linear_start=True)
    net([story, question])  # build outside the compiled function
    traces = []

    def attention(trainable, non_trainable, story, question):
        traces.append(1)
        (_, p), _ = net.stateless_call(trainable, non_trainable, [story, question],
                                       return_attention=True)
        return p

    attention = testing.compiled(attention)

    def state():
        return ([ops.convert_to_tensor(v) for v in net.trainable_variables],
                [ops.convert_to_tensor(v) for v in net.non_trainable_variables])

    p = testing.numpy(attention(*state(), story, question))
    assert net.linear_start_enabled()
    assert not np.allclose(p[0].sum(-1), 1.0)  # raw scores
    np.testing.assert_array_equal(p[1, :, 2:], 0.0)
    net.set_linear_start(False)
    p = testing.numpy(attention(*state(), story, question))
    np.testing.assert_allclose(p[:2].sum(-1), 1.0, rtol=1e-5)
    assert len(traces) == 1
    assert not net.linear_start_enabled()


def test_invalid_arguments():
    with pytest.raises(ValueError, match="sentence_encoding"):
        MemN2NNetwork(30, sentence_encoding="ngram")
    with pytest.raises(ValueError, match="weight_tying"):
        MemN2NNetwork(30, weight_tying="none")
    with pytest.raises(ValueError, match="random_noise"):
        MemN2NNetwork(30, random_noise=2.0)


def test_layer_configs_round_trip():
    for layer in (
        MemN2NEmbedding(10, 4, sentence_encoding="position_code", memory_size=5, name="e"),
        MemN2NHop(use_projection=True, mask_empty_memories=False, name="h"),
        MemN2NNetwork(10, 4, num_hops=2, weight_tying="layer_wise", seed=1, name="n"),
    ):
        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()
        restored = keras.layers.deserialize(keras.layers.serialize(layer))
        assert isinstance(restored, type(layer))
