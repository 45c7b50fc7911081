import warnings

import keras
import numpy as np
import pytest

from tpr_keras import testing
from tests.layers.masking import EPS, IDS, LENGTHS, MASK_WARNING, tolerance, unpadded
from tpr_keras.layers.tp_attention import TPMultiHeadAttention


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _randomize(layer, seed=0):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(0.0, 0.5, w.shape).astype("float32"))


def _eq4_by_hand(layer, z_query, z_value, mask=None):
    """Eq. 1-4 head by head, written as in the paper (loops over heads and t)."""
    H, dk = layer.num_heads, layer.key_dim
    names = ("query", "key", "value", "output")
    w = {name: testing.numpy(getattr(layer, f"{name}_kernel")) for name in names}
    b = {name: testing.numpy(getattr(layer, f"{name}_bias")) for name in names}
    if layer.use_role:
        w["role"], b["role"] = testing.numpy(layer.role_kernel), testing.numpy(layer.role_bias)
    batch, tq, d = z_query.shape
    out = np.zeros((batch, tq, d))
    for n in range(batch):
        for t in range(tq):
            total = np.zeros(d)
            for h in range(H):
                cols = slice(h * dk, (h + 1) * dk)
                q = z_query[n, t] @ w["query"][:, cols] + b["query"][cols]  # eq. 1
                k = z_value[n] @ w["key"][:, cols] + b["key"][cols]
                v = z_value[n] @ w["value"][:, cols] + b["value"][cols]
                logits = k @ q / np.sqrt(dk)
                if mask is not None:
                    logits = np.where(mask[n, t], logits, -np.inf)
                alpha = _softmax(logits)  # eq. 3
                filler = alpha @ v  # eq. 2
                if layer.use_role:
                    r = z_query[n, t] @ w["role"][:, cols] + b["role"][cols]  # eq. 1
                    filler = filler * r  # eq. 4, Hadamard binding
                total += filler @ w["output"][cols, :]  # W_o^h
            out[n, t] = total + b["output"]  # Σ_h b_o^h folded into one bias
    return out


@pytest.mark.parametrize("use_role", [True, False])
def test_head_output_equals_hand_computed_eq4(use_role):
    layer = TPMultiHeadAttention(num_heads=2, use_role=use_role)
    rng = np.random.default_rng(1)
    zq = rng.normal(size=(2, 3, 4)).astype("float32")
    zv = rng.normal(size=(2, 5, 4)).astype("float32")
    layer(zq, zv)
    _randomize(layer)
    mask = np.ones((2, 3, 5), bool)
    mask[1, :, 3:] = False  # padding of the second sequence
    got = testing.numpy(layer(zq, zv, attention_mask=mask))
    np.testing.assert_allclose(got, _eq4_by_hand(layer, zq, zv, mask), rtol=1e-4, atol=1e-5)
    assert (layer.role_kernel is not None) if use_role else not hasattr(layer, "role_kernel")


def test_without_roles_equals_keras_multi_head_attention():
    ours = TPMultiHeadAttention(num_heads=2, use_role=False)
    theirs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    rng = np.random.default_rng(2)
    zq = rng.normal(size=(2, 4, 6)).astype("float32")
    zv = rng.normal(size=(2, 5, 6)).astype("float32")
    ours(zq, zv)
    theirs(zq, zv)
    _randomize(ours)
    for name, dense in (("query", theirs._query_dense), ("key", theirs._key_dense),
                        ("value", theirs._value_dense)):
        dense.kernel.assign(testing.numpy(getattr(ours, f"{name}_kernel")).reshape(6, 2, 3))
        dense.bias.assign(testing.numpy(getattr(ours, f"{name}_bias")).reshape(2, 3))
    theirs._output_dense.kernel.assign(testing.numpy(ours.output_kernel).reshape(2, 3, 6))
    theirs._output_dense.bias.assign(testing.numpy(ours.output_bias))
    mask = np.tril(np.ones((4, 5), bool))[None].repeat(2, 0)
    np.testing.assert_allclose(
        testing.numpy(ours(zq, zv, attention_mask=mask)),
        testing.numpy(theirs(zq, zv, attention_mask=mask)),
        rtol=1e-5, atol=1e-5,
    )


def test_causal_mask_hides_the_future():
    layer = TPMultiHeadAttention(num_heads=2)
    rng = np.random.default_rng(3)
    z = rng.normal(size=(1, 6, 8)).astype("float32")
    before = testing.numpy(layer(z, z, use_causal_mask=True))
    changed = z.copy()
    changed[0, 4:] += 5.0
    after = testing.numpy(layer(changed, changed, use_causal_mask=True))
    np.testing.assert_allclose(after[0, :4], before[0, :4], rtol=1e-5, atol=1e-6)
    assert not np.allclose(after[0, 4:], before[0, 4:])


def test_returns_weights_and_roles():
    layer = TPMultiHeadAttention(num_heads=2)
    rng = np.random.default_rng(4)
    zq = rng.normal(size=(2, 3, 4)).astype("float32")
    zv = rng.normal(size=(2, 5, 4)).astype("float32")
    mask = np.ones((2, 1, 5), bool)
    mask[0, :, 2:] = False
    out, weights, roles = layer(
        zq, zv, attention_mask=mask, return_attention_scores=True, return_roles=True
    )
    weights, roles = testing.numpy(weights), testing.numpy(roles)
    assert out.shape == (2, 3, 4) and weights.shape == (2, 2, 3, 5) and roles.shape == (2, 2, 3, 2)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert np.all(weights[0, :, :, 2:] == 0.0)
    # The role comes from the query.
    kernel, bias = testing.numpy(layer.role_kernel), testing.numpy(layer.role_bias)
    expected = zq @ kernel + bias
    # float32 rounding of a 4-term dot product plus a bias: a few eps of the terms' magnitude
    # (an element near 0 has no relative tolerance to speak of)
    scale = np.abs(zq) @ np.abs(kernel) + np.abs(bias)
    np.testing.assert_allclose(roles, expected.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3),
                               rtol=0, atol=8 * np.finfo(np.float32).eps * scale.max())
    _, none_roles = TPMultiHeadAttention(2, use_role=False)(zq, zv, return_roles=True)
    assert none_roles is None


def test_config_round_trip():
    layer = TPMultiHeadAttention(num_heads=4, key_dim=3, use_role=False, dropout=0.1, name="a")
    clone = TPMultiHeadAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert isinstance(restored, TPMultiHeadAttention) and restored.use_role is False


# --------------------------------------------------------------------------- masking
# Tolerances: a few float32 ulps per term of each reduction of a pass through the layer
# (``d`` in eq. 1, ``d_k`` in eq. 3, ``Tk`` in eq. 2, ``H * d_k`` in eq. 4, the head's
# Dense), times the outputs' scale (tests/layers/masking.py).


def _copy_to_keras_mha(ours, theirs, d):
    """Our ``[d, H*d_k]`` kernels and ``[H*d_k]`` biases as Keras' ``[d, H, d_k]``
    kernels and ``[H, d_k]`` biases (``[H, d_k, d]`` for the output map)."""
    h, k = ours.num_heads, ours.key_dim
    weights = []
    for name in ("query", "key", "value"):
        weights.append(testing.numpy(getattr(ours, f"{name}_kernel")).reshape(d, h, k))
        weights.append(testing.numpy(getattr(ours, f"{name}_bias")).reshape(h, k))
    weights.append(testing.numpy(ours.output_kernel).reshape(h, k, d))
    weights.append(testing.numpy(ours.output_bias))
    theirs.set_weights(weights)


def _masked_model(attention, vocabulary=12, d=8, causal=False, scores=False):
    """Embedding(mask_zero=True) -> attention(query=x, value=x) -> Dense, plus a
    mask-consuming GlobalAveragePooling1D head that sees the attention's output mask
    (and the attention weights with ``scores``)."""
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(vocabulary, d, mask_zero=True, name="embedding")(ids)
    y = attention(query=x, value=x, use_causal_mask=causal, return_attention_scores=scores)
    y, extra = (y[0], [y[1]]) if scores else (y, [])
    z = keras.layers.Dense(3, name="head")(y)
    return keras.Model(ids, [z, keras.layers.GlobalAveragePooling1D()(z)] + extra)


def _build_pair(num_heads=2, d=8, causal=False, scores=False, seed=0):
    """The same model around Keras' MHA and around TPMultiHeadAttention(use_role=False),
    with equal weights; also returns whether building either one warned about masks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = TPMultiHeadAttention(num_heads, use_role=False, name="attention")
        ours_model = _masked_model(ours, d=d, causal=causal, scores=scores)
        theirs = keras.layers.MultiHeadAttention(num_heads, d // num_heads, name="attention")
        theirs_model = _masked_model(theirs, d=d, causal=causal, scores=scores)
    _randomize(ours, seed)
    _copy_to_keras_mha(ours, theirs, d)
    for name in ("embedding", "head"):
        layer = ours_model.get_layer(name)
        _randomize(layer, seed + 1)
        theirs_model.get_layer(name).set_weights(layer.get_weights())
    warned = [str(w.message) for w in caught if MASK_WARNING in str(w.message)]
    return ours_model, theirs_model, warned


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scores", [False, True])
def test_drop_in_for_keras_multi_head_attention_behind_a_masked_embedding(causal, scores):
    ours_model, theirs_model, warned = _build_pair(causal=causal, scores=scores)
    assert warned == []  # (a) the mask reaches the attention, no warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours, pooled, *weights = (testing.numpy(t) for t in ours_model(IDS))
    assert not [w for w in caught if MASK_WARNING in str(w.message)]
    theirs, theirs_pooled, *their_weights = (testing.numpy(t) for t in theirs_model(IDS))
    d, tk, width = 8, IDS.shape[1], 8
    tol = tolerance(d, tk, width, 3 * width, scale=np.abs(theirs).max())
    # (c) Keras' MHA at the real positions, and through the output mask's pooling.
    real = np.arange(IDS.shape[1])[None] < LENGTHS[:, None]
    np.testing.assert_allclose(ours[real], theirs[real], rtol=0, atol=tol)
    np.testing.assert_allclose(pooled, theirs_pooled, rtol=0, atol=tol)
    if scores:
        # Keras' masked-softmax path (taken when the weights are returned) gives a
        # padded query all-zero weights, as this layer always does, so padded rows
        # agree too. (Keras' fused path, without the weights, spreads such a row over
        # every key instead; this layer's output does not depend on the flag.)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=tol)
        np.testing.assert_allclose(weights[0], their_weights[0], rtol=0, atol=tolerance(d, tk))
        np.testing.assert_array_equal(weights[0][~real[:, None, :, None].repeat(2, 1)
                                                 .repeat(tk, 3)], 0.0)
    # (b) each sequence alone, unpadded, gives the same outputs at its real positions.
    for i, (row, n) in enumerate(zip(unpadded(ours_model), LENGTHS)):
        np.testing.assert_allclose(ours[i, :n], row, rtol=0, atol=tol)
    # The output carries the query's mask: the pooling averages real positions only.
    np.testing.assert_allclose(
        pooled, [ours[i, :n].mean(0) for i, n in enumerate(LENGTHS)], rtol=0, atol=tol)


def test_padding_does_not_change_real_positions_with_roles():
    attention = TPMultiHeadAttention(2, use_role=True)
    model = _masked_model(attention)
    _randomize(attention, 3)
    padded = testing.numpy(model(IDS)[0])
    scale = np.abs(padded).max()
    for i, (row, n) in enumerate(zip(unpadded(model), LENGTHS)):
        np.testing.assert_allclose(padded[i, :n], row, rtol=0,
                                   atol=tolerance(8, 6, 8, 24, scale=scale))
    # A padded query attends to nothing: zero filler, so zero binding, output b_o.
    hidden = keras.Model(model.input, model.get_layer("head").input)
    out = testing.numpy(hidden(IDS))
    bias = testing.numpy(attention.output_bias)
    np.testing.assert_array_equal(out[1, 3:], np.broadcast_to(bias, (3, 8)))


def _random_inputs(seed, batch=3, tq=4, tk=5, d=6):
    rng = np.random.default_rng(seed)
    zq = rng.normal(size=(batch, tq, d)).astype("float32")
    zv = rng.normal(size=(batch, tk, d)).astype("float32")
    zk = rng.normal(size=(batch, tk, d)).astype("float32")
    query_mask = np.arange(tq)[None] < np.array([[4], [2], [3]])
    value_mask = np.arange(tk)[None] < np.array([[5], [3], [4]])
    key_mask = np.ones((batch, tk), bool)
    key_mask[2, 0] = False
    return zq, zv, zk, query_mask, value_mask, key_mask


@pytest.mark.parametrize("use_role", [True, False])
def test_explicit_masks_combine_as_one_attention_mask(use_role):
    zq, zv, zk, query_mask, value_mask, key_mask = _random_inputs(5)
    layer = TPMultiHeadAttention(2, use_role=use_role)
    layer(zq, zv, zk)
    _randomize(layer, 5)
    combined = query_mask[:, :, None] & value_mask[:, None, :] & key_mask[:, None, :]
    out, weights = layer(zq, zv, zk, query_mask=query_mask, value_mask=value_mask,
                         key_mask=key_mask, return_attention_scores=True)
    expected, expected_weights = layer(zq, zv, zk, attention_mask=combined,
                                       return_attention_scores=True)
    np.testing.assert_array_equal(testing.numpy(out), testing.numpy(expected))
    weights = testing.numpy(weights)
    np.testing.assert_array_equal(weights, testing.numpy(expected_weights))
    # Zero weight exactly on masked pairs; rows of padded queries are all zero, the
    # others sum to 1; a padded query's output is b_o alone.
    assert np.all(weights[np.broadcast_to(~combined[:, None], weights.shape)] == 0.0)
    sums = weights.sum(-1)
    np.testing.assert_array_equal(sums[~np.broadcast_to(query_mask[:, None], sums.shape)], 0.0)
    np.testing.assert_allclose(sums[np.broadcast_to(query_mask[:, None], sums.shape)], 1.0,
                               rtol=0, atol=4 * EPS * zv.shape[1])
    np.testing.assert_array_equal(testing.numpy(out)[1, 2:],
                                  np.broadcast_to(testing.numpy(layer.output_bias), (2, 6)))


def test_value_and_key_masks_and_scores_match_keras():
    zq, zv, zk, _, value_mask, key_mask = _random_inputs(6)
    ours = TPMultiHeadAttention(2, use_role=False)
    theirs = keras.layers.MultiHeadAttention(2, 3)
    ours(zq, zv, zk)
    theirs(zq, zv, zk)
    _randomize(ours, 6)
    _copy_to_keras_mha(ours, theirs, 6)
    attention_mask = np.tril(np.ones((4, 5), bool), 1)[None].repeat(3, 0)
    kwargs = dict(value_mask=value_mask, key_mask=key_mask, attention_mask=attention_mask,
                  return_attention_scores=True)
    out, weights = (testing.numpy(t) for t in ours(zq, zv, zk, **kwargs))
    their_out, their_weights = (testing.numpy(t) for t in theirs(zq, zv, zk, **kwargs))
    tol = tolerance(6, 5, 6, scale=np.abs(their_out).max())
    np.testing.assert_allclose(out, their_out, rtol=0, atol=tol)
    np.testing.assert_allclose(weights, their_weights, rtol=0, atol=tolerance(6, 5))
    masked = ~(value_mask & key_mask)[:, None, None, :] | ~attention_mask[:, None]
    assert np.all(weights[np.broadcast_to(masked, weights.shape)] == 0.0)


def test_causal_and_padding_masks_together():
    ids = np.array([[3, 5, 7, 0, 0]], "int32")
    attention = TPMultiHeadAttention(2)
    model = _masked_model(attention, causal=True)
    _randomize(attention, 7)
    hidden = keras.Model(model.input, model.get_layer("head").input)
    x = testing.numpy(model.get_layer("embedding")(ids))
    valid = ids > 0
    expected = attention(x, x, attention_mask=np.tril(np.ones((5, 5), bool))[None]
                         & valid[:, :, None] & valid[:, None, :])
    # The same products through the model's masks and through one explicit mask: equal up
    # to float32 rounding (JAX's CPU kernels may round a sum differently for another buffer).
    expected = testing.numpy(expected)
    np.testing.assert_allclose(testing.numpy(hidden(ids)), expected, rtol=0,
                               atol=tolerance(8, 5, 8, 8, scale=np.abs(expected).max()))
    _, weights = attention(x, x, query_mask=valid, value_mask=valid, use_causal_mask=True,
                           return_attention_scores=True)
    weights = testing.numpy(weights)[0]
    np.testing.assert_array_equal(weights[:, :3, :3] > 0, np.tril(np.ones((2, 3, 3), bool)))
    np.testing.assert_array_equal(weights[:, 3:], 0.0)
    np.testing.assert_array_equal(weights[:, :, 3:], 0.0)


def test_symbolic_output_shapes():
    q = keras.Input((4, 8))
    v = keras.Input((7, 6))
    out, scores, roles = TPMultiHeadAttention(2)(q, v, return_attention_scores=True,
                                                 return_roles=True)
    assert (out.shape, scores.shape, roles.shape) == (
        (None, 4, 8), (None, 2, 4, 7), (None, 2, 4, 4))
    layer = TPMultiHeadAttention(2, use_role=False)
    assert layer(q, v).shape == (None, 4, 8)
    assert layer.compute_output_shape((None, 4, 8), (None, 7, 6)) == (None, 4, 8)
    with pytest.raises(ValueError, match="except the last one"):
        layer.compute_output_shape((None, 4, 8), (None, 7, 6), (None, 5, 6))
