"""MemN2N's embedding and hop layers: the position encodings (the paper's and the coded
one) against their formulas, the embedding's temporal term and zero pad row, and a hop's
attention over real memories, with and without masking, linear start and the layer-wise
projection. The network built from them: test_memn2n_network.py; Keras masks:
test_memn2n_masking.py."""

import numpy as np
import pytest
from keras import ops

from tests.models.memn2n_inputs import hop_inputs
from tpr_keras import testing
from tpr_keras.models.memn2n import MemN2NEmbedding, MemN2NHop
from tpr_keras.models.memn2n.memn2n_embedding import coded_position_encoding, position_encoding

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend


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
