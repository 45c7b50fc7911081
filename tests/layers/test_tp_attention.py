import keras
import numpy as np
import pytest

from tpr_keras import testing
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
    expected = zq @ testing.numpy(layer.role_kernel) + testing.numpy(layer.role_bias)
    np.testing.assert_allclose(roles, expected.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3), rtol=1e-5)
    _, none_roles = TPMultiHeadAttention(2, use_role=False)(zq, zv, return_roles=True)
    assert none_roles is None


def test_config_round_trip():
    layer = TPMultiHeadAttention(num_heads=4, key_dim=3, use_role=False, dropout=0.1, name="a")
    clone = TPMultiHeadAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert isinstance(restored, TPMultiHeadAttention) and restored.use_role is False
