import math

import keras
import numpy as np
import pytest

from tests.layers.masking import IDS, LENGTHS, REAL, check_propagates, mask_warnings, tolerance
from tpr_keras import testing
from tpr_keras.models.tp_transformer import (
    PositionwiseFeedForward,
    TPTransformerDecoderLayer,
    TPTransformerEmbedding,
    TPTransformerEncoderLayer,
)
from tpr_keras.models.tp_transformer.tp_transformer_embedding import sinusoidal_positions

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend


def _randomize(layer, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(0.0, scale, w.shape).astype("float32"))


def test_sinusoids_match_the_authors_table():
    d, length = 8, 7
    pe = np.zeros((length, d))
    position = np.arange(length)[:, None]
    div = np.exp(np.arange(0, d, 2) * -(math.log(10000.0) / d))
    pe[:, 0::2] = np.sin(position * div)
    pe[:, 1::2] = np.cos(position * div)
    np.testing.assert_allclose(testing.numpy(sinusoidal_positions(np.arange(length), d)), pe,
                               atol=1e-6)


@pytest.mark.parametrize("multiplicative", [True, False])
def test_embedding_forward_and_reverse(multiplicative):
    layer = TPTransformerEmbedding(10, 8, multiplicative=multiplicative)
    ids = np.array([[4, 5, 6, 0]])
    layer(ids)
    _randomize(layer)
    table = testing.numpy(layer.embeddings)
    x = table[ids] * math.sqrt(8) + testing.numpy(sinusoidal_positions(np.arange(4), 8))[None]
    if multiplicative:
        multiplier = layer.multiplier
        x = x * (x @ testing.numpy(multiplier.kernel) + testing.numpy(multiplier.bias) + 1.0)
    np.testing.assert_allclose(testing.numpy(layer(ids)), x, rtol=1e-5, atol=1e-5)
    # A step at position 2 equals position 2 of the whole sequence.
    np.testing.assert_allclose(
        testing.numpy(layer(ids[:, 2:3], start_position=2)), x[:, 2:3], rtol=1e-5, atol=1e-5
    )
    hidden = np.random.default_rng(1).normal(size=(1, 3, 8)).astype("float32")
    np.testing.assert_allclose(  # eq. 6: logits through the transposed embedding
        testing.numpy(layer(hidden, reverse=True)), hidden @ table.T, rtol=1e-5, atol=1e-5
    )
    assert len(layer.weights) == (3 if multiplicative else 1)


def test_embedding_initial_statistics():
    layer = TPTransformerEmbedding(2000, 64)
    layer.build()
    table = testing.numpy(layer.embeddings)
    assert abs(table.std() * math.sqrt(64) - 1.0) < 0.05  # E * sqrt(d) ~ N(0, 1)
    ids = np.arange(4, 2000)[None]
    factor = testing.numpy(layer.multiplier(layer.embeddings[None, 4:] * 8.0)) + 1.0
    assert abs(factor.mean() - 1.0) < 0.05 and abs(factor.std() - 1.0) < 0.1  # ~N(1, 1)
    assert layer(ids).shape == (1, 1996, 64)


def test_embedding_gradient_accumulates_in_float32_under_mixed_bfloat16():
    """5,000 lookups of one id, each with gradient ``sqrt(d) = 2``, sum to exactly 10,000
    in ``float32``; a ``bfloat16`` running sum stalls at 512, where its spacing of 4
    rounds each + 2 back (ties to even). JAX's scatter-add of a ``bfloat16`` read did
    that; TensorFlow casts the gather's sparse gradient before summing it."""
    layer = TPTransformerEmbedding(8, 4, multiplicative=False, dtype="mixed_bfloat16")
    layer.build()
    ids = np.full((1000, 5), 3)
    _, (table,), _ = testing.value_and_gradients(
        lambda: keras.ops.sum(keras.ops.cast(layer(ids), "float32")), [layer.embeddings])
    table = testing.numpy(table)
    np.testing.assert_array_equal(table[3], 10000.0)
    np.testing.assert_array_equal(np.delete(table, 3, axis=0), 0.0)


def _sublayers_by_hand(layer, x, sublayers, placement):
    norms = layer.norms
    if placement == "code":
        for norm, f in zip(norms, sublayers):
            x = x + f(norm(x))
        return testing.numpy(norms[-1](x))
    x = norms[0](x)
    for norm, f in zip(norms[1:], sublayers):
        x = norm(x + f(x))
    return testing.numpy(x)


@pytest.mark.parametrize("placement", ["code", "paper"])
def test_encoder_layer_norm_placement(placement):
    layer = TPTransformerEncoderLayer(num_heads=2, feed_forward_dim=16, norm_placement=placement)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    valid = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    layer(x, valid)
    _randomize(layer, seed=3)
    expected = _sublayers_by_hand(
        layer,
        x,
        [
            lambda h: layer.self_attention(h, h, attention_mask=valid[:, None, :]),
            layer.feed_forward,
        ],
        placement,
    )
    np.testing.assert_allclose(testing.numpy(layer(x, valid)), expected, rtol=1e-4, atol=1e-5)
    assert len(layer.norms) == 3


def test_encoder_ignores_padded_positions():
    layer = TPTransformerEncoderLayer(num_heads=2, feed_forward_dim=16)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(1, 6, 8)).astype("float32")
    valid = np.array([[1, 1, 1, 1, 0, 0]], bool)
    before = testing.numpy(layer(x, valid))
    x[0, 4:] = rng.normal(size=(2, 8)) * 10
    np.testing.assert_allclose(testing.numpy(layer(x, valid))[0, :4], before[0, :4],
                               rtol=1e-5, atol=1e-5)
    out, details = layer(x, valid, return_details=True)
    assert details["attention"].shape == (1, 2, 6, 6) and details["roles"].shape == (1, 2, 6, 4)


@pytest.mark.parametrize("placement", ["code", "paper"])
def test_decoder_cached_steps_equal_full_pass(placement):
    layer = TPTransformerDecoderLayer(num_heads=2, feed_forward_dim=16, norm_placement=placement)
    rng = np.random.default_rng(5)
    y = rng.normal(size=(2, 4, 8)).astype("float32")
    enc = rng.normal(size=(2, 5, 8)).astype("float32")
    valid = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    full = testing.numpy(layer(y, enc, valid))
    _randomize(layer, seed=6)
    full = testing.numpy(layer(y, enc, valid))
    length = 6  # cache longer than the sequence: unused slots must not matter
    cache_k = np.full((2, 2, length, 4), 7.0, "float32")  # garbage beyond t is masked
    cache_v = np.full((2, 2, length, 4), -3.0, "float32")
    kv = layer.encoder_key_value(enc)
    for t in range(4):
        out, cache_k, cache_v = layer.step(y[:, t : t + 1], t, cache_k, cache_v, kv, valid)
        np.testing.assert_allclose(testing.numpy(out)[:, 0], full[:, t], rtol=1e-4, atol=1e-5)
    assert len(layer.norms) == 4


def test_config_round_trips():
    for layer in (
        TPTransformerEmbedding(12, 6, multiplicative=False, dropout=0.1, name="e"),
        PositionwiseFeedForward(32, dropout=0.2, name="f"),
        TPTransformerEncoderLayer(2, 16, use_role=False, norm_placement="paper", name="enc"),
        TPTransformerDecoderLayer(2, 16, dropout=0.1, layer_norm_epsilon=1e-6, name="dec"),
    ):
        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()
        assert type(keras.layers.deserialize(keras.layers.serialize(layer))) is type(layer)
    with pytest.raises(ValueError, match="norm_placement"):
        TPTransformerEncoderLayer(2, 16, norm_placement="post")


def test_feed_forward_passes_a_keras_mask_through():
    check_propagates(PositionwiseFeedForward(8), 4, 8)


@pytest.mark.parametrize("placement", ["code", "paper"])
def test_encoder_reads_the_keras_mask_as_its_padding_mask(placement):
    layer = TPTransformerEncoderLayer(2, 8, norm_placement=placement)
    model, out = check_propagates(layer, *[4] * 8)  # eq. 1-5 and the norms, width 4
    embed = keras.Model(model.input, model.layers[1].output)
    x = testing.numpy(embed(IDS))
    # Real positions as with the explicit padding mask. (Padded positions differ: a
    # Keras mask also reaches the inner attention as its query mask, as in Keras' MHA.)
    np.testing.assert_array_equal(out[REAL], testing.numpy(layer(x, padding_mask=REAL))[REAL])


def test_decoder_reads_the_encoder_outputs_keras_mask():
    ids = keras.Input((None,), dtype="int32")
    source = keras.layers.Embedding(12, 4, mask_zero=True, name="source")(ids)
    target = keras.Input((3, 4))
    layer = TPTransformerDecoderLayer(2, 8)
    model, warned = mask_warnings(lambda: keras.Model([ids, target], layer(target, source)))
    assert warned == []
    _randomize(layer, 4)
    y = np.random.default_rng(4).normal(size=(3, 3, 4)).astype("float32")
    out = testing.numpy(model([IDS, y]))
    source_x = testing.numpy(model.get_layer("source")(IDS))
    np.testing.assert_array_equal(
        out, testing.numpy(layer(y, source_x, encoder_padding_mask=REAL)))
    for i, n in enumerate(LENGTHS):  # each source alone, unpadded
        alone = testing.numpy(model([IDS[i:i + 1, :n], y[i:i + 1]]))[0]
        np.testing.assert_allclose(out[i], alone, rtol=0,
                                   atol=tolerance(*[4] * 12, scale=np.abs(out).max()))


def _embedding_model(mask_zero):
    """ids -> TPTransformerEmbedding -> encoder layer -> reverse embedding (logits), with
    a GlobalAveragePooling1D of the encoder's output and of the logits."""
    embedding = TPTransformerEmbedding(12, 8, mask_zero=mask_zero, name="embedding")
    encoder = TPTransformerEncoderLayer(2, 16, name="encoder")
    ids = keras.Input((None,), dtype="int32")
    x = encoder(embedding(ids))
    logits = embedding(x, reverse=True)
    pool = keras.layers.GlobalAveragePooling1D()
    model, warned = mask_warnings(lambda: keras.Model(ids, [x, pool(x), logits, pool(logits)]))
    assert warned == []
    _randomize(embedding, 5)
    _randomize(encoder, 6)
    return model


def test_embedding_mask_zero_is_the_padding_mask_of_the_layers_after_it():
    model = _embedding_model(mask_zero=True)
    (x, pooled, logits, pooled_logits), warned = mask_warnings(
        lambda: [testing.numpy(t) for t in model(IDS)])
    assert warned == []
    # Each sequence alone, unpadded: the same real positions (eq. 1-5 and the norms, width
    # 8 and 16, then eq. 6 over width 8), so the encoder took ids != 0 as its padding mask.
    tol = tolerance(*[8] * 10, 16, scale=max(1.0, np.abs(logits).max()))
    for i, n in enumerate(LENGTHS):
        alone = [testing.numpy(t)[0] for t in model(IDS[i:i + 1, :n])]
        np.testing.assert_allclose(x[i, :n], alone[0], rtol=0, atol=tol)
        np.testing.assert_allclose(logits[i, :n], alone[2], rtol=0, atol=tol)
    # The mask reaches the pooling after the encoder and, through eq. 6, after the logits.
    for out, mean in ((x, pooled), (logits, pooled_logits)):
        expected = [out[i, :n].mean(0) for i, n in enumerate(LENGTHS)]
        np.testing.assert_allclose(mean, expected, rtol=0, atol=tol + tolerance(IDS.shape[1]))
    # Without mask_zero the encoder attends to the pads: real positions change.
    unmasked = _embedding_model(mask_zero=False)
    x_unmasked = testing.numpy(unmasked(IDS)[0])
    assert not np.allclose(x_unmasked[0, :LENGTHS[0]], x[0, :LENGTHS[0]], atol=1e-3)


def test_embedding_mask_zero_changes_the_mask_only():
    masked = TPTransformerEmbedding(12, 8, mask_zero=True)
    plain = TPTransformerEmbedding(12, 8)
    masked.build(), plain.build()
    _randomize(masked, 1), _randomize(plain, 1)
    np.testing.assert_array_equal(testing.numpy(masked(IDS)), testing.numpy(plain(IDS)))
    np.testing.assert_array_equal(testing.numpy(masked.compute_mask(IDS)), REAL)
    assert plain.compute_mask(IDS) is None
    # A mask on the ids is combined with ids != 0, or passed through without mask_zero.
    given = np.ones_like(REAL)
    given[:, 0] = False
    np.testing.assert_array_equal(testing.numpy(masked.compute_mask(IDS, given)), REAL & given)
    np.testing.assert_array_equal(testing.numpy(plain.compute_mask(IDS, given)), given)
    # Reverse (hidden states -> logits): the hidden states' mask passes through.
    hidden = np.zeros((3, 6, 8), "float32")
    np.testing.assert_array_equal(testing.numpy(masked.compute_mask(hidden, REAL)), REAL)
    assert masked.compute_mask(hidden) is None
    config = masked.get_config()
    assert config["mask_zero"] is True and plain.get_config()["mask_zero"] is False
    assert TPTransformerEmbedding.from_config(config).get_config() == config
    del config["mask_zero"]  # a config saved before the argument existed
    assert TPTransformerEmbedding.from_config(config).mask_zero is False


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("layer_class", [TPTransformerEncoderLayer, TPTransformerDecoderLayer])
def test_symbolic_output_is_the_traced_calls_without_tracing_it(layer_class, policy):
    """A symbolic call (wiring a functional model) gives the spec of the traced call,
    shape and dtype, under both policies; with ``return_details`` it traces, and the
    details are there."""
    layer = layer_class(num_heads=2, feed_forward_dim=16, dtype=policy)
    calls = []
    call = layer.call
    layer.call = lambda *args, **kwargs: calls.append(1) or call(*args, **kwargs)
    x = keras.KerasTensor((None, None, 8), dtype=layer.compute_dtype)
    encoder = [] if layer_class is TPTransformerEncoderLayer else [
        keras.KerasTensor((None, 6, 8), dtype=layer.compute_dtype)]
    out = layer(x, *encoder)
    assert layer.built and not calls
    traced = keras.layers.Layer.compute_output_spec(layer, x, *encoder)
    assert calls
    assert (out.shape, out.dtype) == (traced.shape, traced.dtype) == (
        (None, None, 8), layer.compute_dtype)
    out, details = layer(x, *encoder, return_details=True)
    assert out.shape == (None, None, 8) and all(
        v.shape[:2] == (None, 2) for v in details.values() if v is not None)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_symbolic_embedding_output_is_the_traced_calls_without_tracing_it(policy):
    """Forward and reverse, as for the encoder and decoder layers above."""
    layer = TPTransformerEmbedding(10, 8, dtype=policy)
    calls = []
    call = layer.call
    layer.call = lambda *args, **kwargs: calls.append(1) or call(*args, **kwargs)
    ids = keras.KerasTensor((None, 5), dtype="int32")
    hidden = keras.KerasTensor((None, 5, 8), dtype=layer.compute_dtype)
    forward, reverse = layer(ids), layer(hidden, reverse=True)
    assert layer.built and not calls
    for out, args, kwargs, shape in [(forward, [ids], {}, (None, 5, 8)),
                                     (reverse, [hidden], {"reverse": True}, (None, 5, 10))]:
        traced = keras.layers.Layer.compute_output_spec(layer, *args, **kwargs)
        assert (out.shape, out.dtype) == (traced.shape, traced.dtype) == (
            shape, layer.compute_dtype)
    assert calls
