import keras
import numpy as np
import pytest
from keras import ops

from tests.layers.masking import mask_warnings
from tpr_keras import testing
from tpr_keras.models.memn2n import MemN2NEmbedding, MemN2NHop, MemN2NNetwork
from tpr_keras.models.memn2n.memn2n_embedding import coded_position_encoding, position_encoding


def story_batch():
    """3 stories of 6 rows x 4 word slots; lengths 6, 2 and 0 real sentences."""
    story = np.zeros((3, 6, 4), "int32")
    for s in range(6):
        story[0, s, :2] = [2 + s, 10 + s]
    story[1, 0, :3] = [3, 4, 5]
    story[1, 1, :1] = [6]
    question = np.array([[7, 8, 0, 0], [9, 0, 0, 0], [2, 3, 4, 0]], "int32")
    return story, question


# --------------------------------------------------------------- position enc.
def test_paper_position_encoding_matches_formula():
    lengths = np.array([2.0, 3.0])
    out = testing.numpy(position_encoding(lengths, num_slots=3, embedding_dim=4))
    assert out.shape == (2, 3, 4)
    for b, big_j in enumerate([2, 3]):
        for j in range(1, 4):
            for k in range(1, 5):
                expected = (1 - j / big_j) - (k / 4) * (1 - 2 * j / big_j)
                assert out[b, j - 1, k - 1] == pytest.approx(expected, abs=1e-6)
    # One-word sentence: l_k1 = k / d.
    single = testing.numpy(position_encoding(np.array([1.0]), 1, 4))[0, 0]
    np.testing.assert_allclose(single, [0.25, 0.5, 0.75, 1.0], rtol=1e-6)


def test_coded_position_encoding_matches_formula():
    out = testing.numpy(coded_position_encoding(num_slots=3, embedding_dim=4))
    for j in range(1, 4):
        for k in range(1, 5):
            expected = 1 + 4 * (k - 2.5) * (j - 2.0) / (4 * 3)
            assert out[j - 1, k - 1] == pytest.approx(expected, abs=1e-6)
    np.testing.assert_allclose(out[1], 1.0)  # the middle word is unscaled


def test_embedding_position_encodings_and_temporal_term():
    ids = np.array([[3, 5, 0]])
    for encoding in ("bag_of_words", "position", "position_code"):
        table = MemN2NEmbedding(10, 4, sentence_encoding=encoding, memory_size=5)
        out = testing.numpy(table(ids, time_index=np.array([2])))[0]
        a, t = testing.numpy(table.embeddings), testing.numpy(table.temporal)
        if encoding == "bag_of_words":
            weights, time_weight = np.ones((3, 4)), np.ones(4)
        elif encoding == "position":  # J = 2 real words, T unscaled
            weights, time_weight = testing.numpy(position_encoding(np.array(2.0), 3, 4)), np.ones(4)
        else:  # J = 3 slots + 1 time word, which takes the last column
            full = testing.numpy(coded_position_encoding(4, 4))
            weights, time_weight = full[:3], full[3]
        expected = weights[0] * a[3] + weights[1] * a[5] + time_weight * t[1]
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_pad_row_is_zero_and_gets_no_gradient():
    table = MemN2NEmbedding(10, 4, memory_size=3)
    table.build()
    np.testing.assert_array_equal(testing.numpy(table.embeddings)[0], 0.0)
    assert 0.05 < testing.numpy(table.embeddings)[1:].std() < 0.2  # N(0, 0.1)
    ids = np.array([[3, 5, 0, 0], [0, 0, 0, 0]])

    def loss():
        return ops.sum(table(ids, time_index=np.array([1, 0])) ** 2) + ops.sum(
            table.project(ops.ones((2, 4)))
        )

    _, (grad,), _ = testing.value_and_gradients(loss, [table.embeddings])
    grad = testing.numpy(grad)
    np.testing.assert_array_equal(grad[0], 0.0)
    assert np.abs(grad[3]).sum() > 0
    # Empty sentence without time index embeds to exactly 0; pad logit is 0.
    np.testing.assert_array_equal(testing.numpy(table(ids, time_index=np.array([1, 0])))[1], 0.0)
    np.testing.assert_array_equal(testing.numpy(table.project(ops.ones((2, 4))))[:, 0], 0.0)


# ------------------------------------------------------------------------ hop
def hop_inputs():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(2, 4)).astype("float32")
    m = rng.normal(size=(2, 5, 4)).astype("float32")
    c = rng.normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], bool)
    m[~mask] = 0.0
    c[~mask] = 0.0
    return u, m, c, mask


def test_hop_attention_sums_to_one_over_real_memories_and_zero_on_padding():
    u, m, c, mask = hop_inputs()
    new_u, p = MemN2NHop()([u, m, c], memory_mask=mask)
    p = testing.numpy(p)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(p[~mask], 0.0)
    scores = np.einsum("bd,bmd->bm", u, m)
    expected = np.exp(scores[0, :3]) / np.exp(scores[0, :3]).sum()
    np.testing.assert_allclose(p[0, :3], expected, rtol=1e-5)
    np.testing.assert_allclose(testing.numpy(new_u), u + np.einsum("bm,bmd->bd", p, c), rtol=1e-5)
    # An all-empty memory reads nothing (no NaN).
    _, p_empty = MemN2NHop()([u, m, c], memory_mask=np.zeros_like(mask))
    np.testing.assert_array_equal(testing.numpy(p_empty), 0.0)


def test_hop_without_masking_keeps_empty_slots_in_the_softmax():
    u, m, c, mask = hop_inputs()
    _, p = MemN2NHop(mask_empty_memories=False)([u, m, c], memory_mask=mask)
    p = testing.numpy(p)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-6)
    assert (p[~mask] > 0).all()  # logit 0 on the empty slots, as in the authors' code
    scores = np.einsum("bd,bmd->bm", u, m)
    np.testing.assert_allclose(p, np.exp(scores) / np.exp(scores).sum(-1, keepdims=True), rtol=1e-5)


def test_linear_start_hop_has_no_softmax():
    u, m, c, mask = hop_inputs()
    hop = MemN2NHop()
    scores = np.einsum("bd,bmd->bm", u, m) * mask
    for linear in (True, ops.convert_to_tensor(True)):
        new_u, p = hop([u, m, c], memory_mask=mask, linear=linear)
        np.testing.assert_allclose(testing.numpy(p), scores, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(testing.numpy(new_u), u + np.einsum("bm,bmd->bd", scores, c),
                                   rtol=1e-5)
    _, p = hop([u, m, c], memory_mask=mask, linear=ops.convert_to_tensor(False))
    np.testing.assert_allclose(testing.numpy(p).sum(-1), 1.0, rtol=1e-6)


def test_layer_wise_hop_projection():
    u, m, c, mask = hop_inputs()
    hop = MemN2NHop(use_projection=True)
    new_u, p = hop([u, m, c], memory_mask=mask)
    h = testing.numpy(hop.projection)
    assert h.shape == (4, 4)
    expected = u @ h.T + np.einsum("bm,bmd->bd", testing.numpy(p), c)
    np.testing.assert_allclose(testing.numpy(new_u), expected, rtol=1e-5, atol=1e-6)


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


# -------------------------------------------------------------------- masking
#: 3 stories of 4 rows x 3 word slots, padded at the end with all-pad rows to
#: 3, 1 and 2 real sentences, and their questions.
STORY = np.array([[[2, 3, 0], [4, 0, 0], [5, 6, 7], [0, 0, 0]],
                  [[8, 9, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]],
                  [[3, 4, 5], [6, 2, 0], [0, 0, 0], [0, 0, 0]]], "int32")
SENTENCES = (STORY != 0).any(-1)
QUESTION = np.array([[7, 8, 0], [2, 0, 0], [9, 5, 4]], "int32")
EPS = float(np.finfo(np.float32).eps)


def _randomize(layer, seed):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        if w.trainable:
            w.assign(rng.normal(0.0, 0.5, w.shape).astype("float32"))


def test_embedding_mask_zero_masks_the_empty_sentences_and_changes_the_mask_only():
    masked = MemN2NEmbedding(10, 4, memory_size=5, mask_zero=True)
    plain = MemN2NEmbedding(10, 4, memory_size=5)
    masked.build(), plain.build()
    plain.set_weights(masked.get_weights())
    time = np.where(SENTENCES, np.arange(1, 5)[None], 0)
    np.testing.assert_array_equal(testing.numpy(masked(STORY, time_index=time)),
                                  testing.numpy(plain(STORY, time_index=time)))
    np.testing.assert_array_equal(testing.numpy(masked.compute_mask(STORY)), SENTENCES)
    assert plain.compute_mask(STORY) is None
    assert masked.compute_mask(QUESTION) is None  # a question: the word axis is reduced
    config = masked.get_config()
    assert config["mask_zero"] is True and plain.get_config()["mask_zero"] is False
    assert MemN2NEmbedding.from_config(config).get_config() == config
    del config["mask_zero"]  # a config saved before the argument existed
    assert MemN2NEmbedding.from_config(config).mask_zero is False


@pytest.mark.parametrize("encoding", ["bag_of_words", "position", "position_code"])
def test_embedding_word_mask_makes_the_masked_slots_padding(encoding):
    table = MemN2NEmbedding(10, 4, sentence_encoding=encoding)
    words = np.random.default_rng(3).random(STORY.shape) < 0.7
    padded = np.where(words, STORY, 0)
    # Bit for bit as id 0 (the position encoding's J counts the unmasked words).
    np.testing.assert_array_equal(testing.numpy(table(STORY, mask=words)),
                                  testing.numpy(table(padded)))
    assert not np.array_equal(testing.numpy(table(STORY, mask=words)),
                              testing.numpy(table(STORY)))
    # The sentence mask: an unmasked word slot, and with mask_zero a non-pad one.
    np.testing.assert_array_equal(testing.numpy(table.compute_mask(STORY, words)),
                                  words.any(-1))
    table.mask_zero = True
    np.testing.assert_array_equal(testing.numpy(table.compute_mask(STORY, words)),
                                  (padded != 0).any(-1))


def _hop_model(mask_zero, mask_empty_memories=True):
    """story, question -> A, C (mask_zero), B -> MemN2NHop -> (u', p)."""
    story = keras.Input((None, 3), dtype="int32")
    question = keras.Input((3,), dtype="int32")
    tables = [MemN2NEmbedding(10, 4, mask_zero=mask_zero, name=n) for n in "ACB"]
    hop = MemN2NHop(mask_empty_memories=mask_empty_memories, name="hop")
    outputs = hop([tables[2](question), tables[0](story), tables[1](story)])
    model, warned = mask_warnings(lambda: keras.Model([story, question], list(outputs)))
    assert warned == []
    for i, table in enumerate(tables):
        _randomize(table, i)
    return model


def test_hop_consumes_the_keras_memory_mask():
    model = _hop_model(mask_zero=True)
    (u, p), warned = mask_warnings(lambda: [testing.numpy(t) for t in model([STORY, QUESTION])])
    assert warned == []
    np.testing.assert_array_equal(p[~SENTENCES], 0.0)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=0, atol=4 * EPS * STORY.shape[1])
    tol = 4 * EPS * (4 + 4 * STORY.shape[1]) * max(1.0, np.abs(u).max())  # eq. 1, 2, 4
    for i, n in enumerate(SENTENCES.sum(-1)):  # each story alone, without its pad rows
        u_alone, p_alone = (testing.numpy(t)[0]
                            for t in model([STORY[i:i + 1, :n], QUESTION[i:i + 1]]))
        np.testing.assert_allclose(u[i], u_alone, rtol=0, atol=tol)
        np.testing.assert_allclose(p[i, :n], p_alone, rtol=0, atol=tol)
    # Without a mask the pad rows (m_i = 0, logit 0) take part in eq. 1's softmax; so they
    # do with mask_empty_memories=False, which reads the mask and ignores it.
    for unmasked in (_hop_model(mask_zero=False),
                     _hop_model(mask_zero=True, mask_empty_memories=False)):
        u_unmasked, p_unmasked = (testing.numpy(t) for t in unmasked([STORY, QUESTION]))
        assert (p_unmasked[~SENTENCES] > 0).all()
        assert not np.allclose(u_unmasked, u, atol=1e-3)
    hop = model.get_layer("hop")
    assert hop.compute_mask([u, STORY, STORY], [None, SENTENCES, SENTENCES]) is None


def test_hop_prefers_the_memory_mask_it_is_given():
    u, m, c, mask = hop_inputs()
    hop = MemN2NHop()
    everything = np.ones_like(mask)
    _, given = hop([u, m, c], memory_mask=everything, mask=[None, mask, mask])
    _, keras_mask = hop([u, m, c], mask=[None, mask, everything])
    _, explicit = hop([u, m, c], memory_mask=mask)
    assert (testing.numpy(given)[~mask] > 0).all()
    np.testing.assert_array_equal(testing.numpy(keras_mask), testing.numpy(explicit))


class KeepSentences(keras.layers.Layer):
    """Story ids unchanged, with the Keras mask of the sentences not starting with id 8."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, story):
        return story + 0

    def compute_mask(self, story, mask=None):
        return keras.ops.not_equal(story[..., 0], 8)


def test_network_consumes_a_keras_mask_on_story_and_question():
    network = MemN2NNetwork(10, 4, num_hops=2, memory_size=4, seed=0)
    network([STORY, QUESTION])
    _randomize(network, 7)
    dropped = STORY[..., 0] == 8  # the KeepSentences mask: story 1's only sentence
    without = np.where(dropped[..., None], 0, STORY)
    expected = testing.numpy(network([without, QUESTION]))
    assert not np.allclose(expected, testing.numpy(network([STORY, QUESTION])), atol=1e-3)
    # Filled in by Keras from the story's Keras mask: the masked sentences are padding.
    story, question = keras.Input((4, 3), dtype="int32"), keras.Input((3,), dtype="int32")
    model, warned = mask_warnings(
        lambda: keras.Model([story, question], network([KeepSentences()(story), question])))
    assert warned == []
    np.testing.assert_array_equal(testing.numpy(model([STORY, QUESTION])), expected)
    # Given: sentence [B, S] or word [B, S, W] masks on the story, word masks on the question.
    words = np.random.default_rng(5).random(STORY.shape) < 0.7
    asked = QUESTION != 8
    for mask, story_ids, question_ids in (
            ([~dropped, None], without, QUESTION),
            ([words, asked], np.where(words, STORY, 0), np.where(asked, QUESTION, 0))):
        np.testing.assert_array_equal(
            testing.numpy(network([STORY, QUESTION], mask=mask)),
            testing.numpy(network([story_ids, question_ids])))
    assert network.compute_mask([STORY, QUESTION], [~dropped, None]) is None
