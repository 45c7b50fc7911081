"""Tests of the plain and BiDAF logical entailment models."""

import gc
import weakref

import keras
import numpy as np
import pytest

from tpr_keras import testing
from tpr_keras.layers.tpru_cell import TPRUCell
from tpr_keras.models.entailment import (
    BatchToPair,
    BiDAFAttention,
    BiDAFEntailmentModel,
    MaskedMaxPooling1D,
    PairFeatures,
    PairToBatch,
    PlainEntailmentModel,
    entailment_layers,
)
from tpr_keras.models.entailment.entailment_layers import make_recurrent_layer

V = 34  # vocabulary size


@pytest.fixture(autouse=True)
def _deterministic_init():
    keras.utils.set_random_seed(1234)


def _batch(pad_extra=0):
    # "(a&b)" / "a" and "(c>~(d))" / "(d|c)", right-padded with 0.
    a = [[6, 8, 3, 9, 7, 0, 0, 0], [6, 10, 5, 2, 6, 11, 7, 7]]
    b = [[8, 0, 0, 0, 0], [6, 11, 4, 10, 7]]
    a = np.pad(np.array(a, np.int32), ((0, 0), (0, pad_extra)))
    b = np.pad(np.array(b, np.int32), ((0, 0), (0, pad_extra)))
    return {"a": a, "b": b}


def _n(tensor):
    return keras.ops.convert_to_numpy(tensor)


def _mlp(d_in, h):
    return d_in * h + h + h + 1


@pytest.mark.parametrize("num_roles", [8, 32])
def test_plain_tpru_parameter_count(num_roles):
    d, e, h = 12, 7, 9
    model = PlainEntailmentModel(units=d, num_roles=num_roles, embedding_dim=e,
                                 hidden_units=h, seed=0)
    trainable = V * e + (3 * d * d + 2 * d * e + 2) + _mlp(4 * d, h)
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == trainable
    assert model.count_params() == trainable + d * num_roles  # + fixed basis V
    assert [w.name for w in model.non_trainable_weights] == ["role_basis"]


@pytest.mark.parametrize(
    "cell, rnn_params",
    [("lstm", lambda d, e: 4 * (e * d + d * d + d)),
     ("gru", lambda d, e: 3 * (e * d + d * d + 2 * d))],
)
def test_plain_baseline_parameter_counts(cell, rnn_params):
    d, e, h = 12, 7, 9
    model = PlainEntailmentModel(units=d, cell=cell, embedding_dim=e, hidden_units=h)
    assert model.count_params() == V * e + rnn_params(d, e) + _mlp(4 * d, h)
    concat = PlainEntailmentModel(units=d, cell=cell, embedding_dim=e,
                                  hidden_units=h, features="concat")
    assert concat.count_params() == V * e + rnn_params(d, e) + _mlp(2 * d, h)


@pytest.mark.parametrize("attention_output, width", [("full", 8), ("context", 4)])
def test_bidaf_tpru_parameter_count(attention_output, width):
    d, e, h = 6, 5, 7
    model = BiDAFEntailmentModel(units=d, num_roles=4, embedding_dim=e, hidden_units=h,
                                 seed=0, attention_output=attention_output)
    tpru = lambda d_in: 3 * d * d + 2 * d * d_in + 2  # noqa: E731
    trainable = (V * e + 2 * tpru(e) + 3 * 2 * d + 2 * tpru(width * d)
                 + _mlp(4 * 2 * d, h))
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == trainable
    assert model.count_params() == trainable + 4 * d * 4  # four cells' V
    assert len([w for w in model.weights if w.name == "role_basis"]) == 4


MODELS = [
    (PlainEntailmentModel, dict(cell="tpru", pooling="last")),
    (PlainEntailmentModel, dict(cell="tpru", pooling="max")),
    (PlainEntailmentModel, dict(cell="lstm", pooling="last")),
    (PlainEntailmentModel, dict(cell="gru", pooling="max")),
    (BiDAFEntailmentModel, dict(cell="tpru", pooling="max", embedding_init="normal")),
    (BiDAFEntailmentModel, dict(cell="gru", pooling="last")),
    (BiDAFEntailmentModel, dict(cell="lstm", pooling="max", attention_output="context")),
]


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")  # length-1 B
@pytest.mark.parametrize("cls, kwargs", MODELS)
def test_outputs_ignore_padding_and_round_trip(tmp_path, cls, kwargs):
    model = cls(units=8, num_roles=4, seed=1, **kwargs)
    out = _n(model(_batch()))
    assert out.shape == (2, 1) and np.isfinite(out).all()
    assert not np.allclose(out[0], out[1])
    # Extra padding changes nothing (masking through every layer).
    np.testing.assert_allclose(_n(model(_batch(pad_extra=3))), out, rtol=1e-5, atol=1e-6)
    # A single example alone, unpadded, gives the same logit.
    alone = {"a": _batch()["a"][:1, :5], "b": _batch()["b"][:1, :1]}
    np.testing.assert_allclose(_n(model(alone))[0], out[0], rtol=1e-5, atol=1e-6)

    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is cls
    assert loaded.get_config() == model.get_config()
    np.testing.assert_array_equal(_n(loaded(_batch())), out)
    for w, lw in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(_n(w), _n(lw))


def test_plain_encoder_is_shared_and_uses_tpru():
    model = PlainEntailmentModel(units=8, num_roles=4, seed=3)
    rnns = [layer for layer in model.layers if isinstance(layer, keras.layers.RNN)]
    assert len(rnns) == 1 and isinstance(rnns[0].cell, TPRUCell)
    assert rnns[0].cell.num_roles == 4 and rnns[0].cell.seed == 3
    assert model.get_layer("features").mode == "full"
    # Same proposition on both sides: u == v, so |u - v| features are 0.
    x = _batch()
    feats = keras.Model(model.inputs, model.get_layer("features").output)
    f = _n(feats({"a": x["a"], "b": x["a"]}))
    np.testing.assert_allclose(f[:, :8], f[:, 8:16])
    np.testing.assert_array_equal(f[:, 16:24], 0.0)


def test_one_training_step_reaches_all_trainable_weights_not_basis():
    for cls in (PlainEntailmentModel, BiDAFEntailmentModel):
        model = cls(units=6, num_roles=4, seed=2)
        x, y = _batch(), np.array([[1.0], [0.0]], "float32")
        loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
        # Compiled, as in fit (eager JAX differentiates BiDAF's four scans for ~10 s);
        # unconnected weights get zero gradients.
        grads = testing.compiled(lambda: testing.value_and_gradients(
            lambda: loss_fn(y, model(x, training=True)), model.trainable_weights)[1])()
        used = {
            w.path for w, g in zip(model.trainable_weights, grads)
            if float(np.abs(_n(g)).sum()) > 0
        }
        assert used == {w.path for w in model.trainable_weights}
        assert all(not w.trainable for w in model.weights if w.name == "role_basis")


def test_invalid_options():
    with pytest.raises(ValueError, match="cell"):
        PlainEntailmentModel(cell="rnn")
    with pytest.raises(ValueError, match="pooling"):
        BiDAFEntailmentModel(pooling="mean")
    with pytest.raises(ValueError, match="features"):
        PlainEntailmentModel(features="diff")
    with pytest.raises(ValueError, match="embedding_init"):
        BiDAFEntailmentModel(embedding_init="zeros")


@pytest.mark.parametrize("cls", [PlainEntailmentModel, BiDAFEntailmentModel])
def test_embedding_init_scales_only_the_embedding(cls):
    def initial_weights(**kwargs):
        keras.utils.set_random_seed(2)
        model = cls(units=8, cell="tpru", num_roles=4, seed=0, embedding_dim=64, **kwargs)
        assert model.get_config()["embedding_init"] == kwargs.get("embedding_init", "uniform")
        return [_n(w) for w in model.weights]

    uniform, normal = initial_weights(), initial_weights(embedding_init="normal")
    assert np.abs(uniform[0]).max() <= 0.05 and 0.02 < uniform[0].std() < 0.04  # Keras'
    assert 0.9 < normal[0].std() < 1.1 and abs(normal[0].mean()) < 0.1  # N(0, 1)
    for a, b in zip(uniform[1:], normal[1:]):  # every other weight drawn the same
        np.testing.assert_array_equal(a, b)


def test_masked_max_pooling():
    x = np.array([[[1.0, -3.0], [5.0, -2.0], [9.0, 4.0]]], "float32")
    mask = np.array([[True, True, False]])
    np.testing.assert_array_equal(_n(MaskedMaxPooling1D()(x, mask=mask)), [[5.0, -2.0]])
    np.testing.assert_array_equal(_n(MaskedMaxPooling1D()(x)), [[9.0, 4.0]])
    empty = np.zeros((1, 3), bool)
    np.testing.assert_array_equal(_n(MaskedMaxPooling1D()(x, mask=empty)), [[0.0, 0.0]])


def test_pair_features():
    u = np.array([[1.0, -2.0]], "float32")
    v = np.array([[3.0, 1.0]], "float32")
    np.testing.assert_array_equal(
        _n(PairFeatures()([u, v])), [[1, -2, 3, 1, 2, 3, 3, -2]]
    )
    np.testing.assert_array_equal(_n(PairFeatures("concat")([u, v])), [[1, -2, 3, 1]])


def _softmax(z):
    z = np.exp(z - z.max())
    return z / z.sum()


def _np_flow(c, q, s):
    """Seo et al. eqs. 2-4 for one unpadded example (c: context, q: query)."""
    att_q = np.stack([_softmax(s[t]) @ q for t in range(len(c))])
    att_c = _softmax(s.max(axis=1)) @ c
    return np.concatenate([c, att_q, c * att_q, c * att_c[None]], axis=-1)


def test_bidaf_attention_matches_reference_and_masks():
    rng = np.random.default_rng(0)
    k, t_len, j_len = 4, 5, 3
    h = rng.normal(size=(2, t_len, k)).astype("float32")
    u = rng.normal(size=(2, j_len, k)).astype("float32")
    mask_h = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    mask_u = np.array([[1, 1, 0], [1, 1, 1]], bool)
    layer = BiDAFAttention()
    g_h, g_u = layer([h, u], mask=[mask_h, mask_u])
    g_h, g_u = _n(g_h), _n(g_u)
    assert g_h.shape == (2, t_len, 4 * k) and g_u.shape == (2, j_len, 4 * k)
    w_h, w_u, w_m = _n(layer.similarity_kernel)
    for i in range(2):
        hi, ui = h[i][mask_h[i]], u[i][mask_u[i]]
        s = (hi @ w_h)[:, None] + (ui @ w_u)[None, :] + (hi * w_m) @ ui.T
        np.testing.assert_allclose(g_h[i][mask_h[i]], _np_flow(hi, ui, s), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(g_u[i][mask_u[i]], _np_flow(ui, hi, s.T), rtol=1e-4, atol=1e-5)
    masks = layer.compute_mask([h, u], [mask_h, mask_u])
    np.testing.assert_array_equal(masks[0], mask_h)
    np.testing.assert_array_equal(masks[1], mask_u)


def test_bidaf_attention_context_output_is_the_input_and_its_context_vectors():
    rng = np.random.default_rng(1)
    h = rng.normal(size=(2, 5, 4)).astype("float32")
    u = rng.normal(size=(2, 3, 4)).astype("float32")
    masks = [np.array([[1, 1, 1, 0, 0], [1] * 5], bool), np.array([[1, 1, 0], [1] * 3], bool)]
    full = BiDAFAttention(name="full")
    g_full = [_n(g) for g in full([h, u], mask=masks)]
    context = BiDAFAttention(output_mode="context")
    context.build([h.shape, u.shape])
    context.similarity_kernel.assign(full.similarity_kernel)
    g_context = [_n(g) for g in context([h, u], mask=masks)]
    assert g_context[0].shape == (2, 5, 8) and g_context[1].shape == (2, 3, 8)
    for g_c, g_f, x in zip(g_context, g_full, (h, u)):
        np.testing.assert_array_equal(g_c[..., :4], x)  # [h; ũ]: the input, then ũ
        np.testing.assert_allclose(g_c, g_f[..., :8], rtol=1e-6, atol=1e-6)
    assert context.compute_output_shape([h.shape, u.shape]) == [(2, 5, 8), (2, 3, 8)]
    assert BiDAFAttention.from_config(context.get_config()).output_mode == "context"
    with pytest.raises(ValueError, match="output_mode must be one of"):
        BiDAFAttention(output_mode="seo")


def test_pair_to_batch_pads_ids_and_batch_to_pair_splits_with_masks():
    a = np.array([[6, 8, 7], [5, 0, 0]], "int32")
    b = np.array([[8, 9], [4, 0]], "int32")
    stacked = _n(PairToBatch()([a, b]))
    np.testing.assert_array_equal(stacked, [[6, 8, 7], [5, 0, 0], [8, 9, 0], [4, 0, 0]])
    x = np.arange(24, dtype="float32").reshape(4, 3, 2)
    mask = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]], bool)
    split = BatchToPair()
    halves = split(x, mask=mask)
    np.testing.assert_array_equal(_n(halves[0]), x[:2])
    np.testing.assert_array_equal(_n(halves[1]), x[2:])
    masks = split.compute_mask(x, mask)
    np.testing.assert_array_equal(_n(masks[0]), mask[:2])
    np.testing.assert_array_equal(_n(masks[1]), mask[2:])
    # Masked sequences go back into one batch with their masks (same length only).
    stack = PairToBatch()
    np.testing.assert_array_equal(_n(stack([x[:2], x[2:]], mask=[mask[:2], mask[2:]])), x)
    np.testing.assert_array_equal(_n(stack.compute_mask([x[:2], x[2:]], [mask[:2], mask[2:]])),
                                  mask)
    with pytest.raises(ValueError, match="same length only; got lengths 3 and 2"):
        stack.compute_mask([x[:2], x[2:, :2]], [mask[:2], mask[2:, :2]])


def _apart(model, x, pooling):
    """The model's logit with every shared layer called on A and B separately."""
    emb = model.get_layer("embedding")
    masks = [emb.compute_mask(x["a"]), emb.compute_mask(x["b"])]
    pool = (lambda h, m: model.get_layer("pool")(h, mask=m)) if pooling == "max" else (
        lambda h, m: h)
    if isinstance(model, PlainEntailmentModel):
        enc = model.get_layer("encoder")
        u, v = (pool(enc(emb(x[k]), mask=m), m) for k, m in zip("ab", masks))
    else:
        contextual, modelling = model.get_layer("contextual"), model.get_layer("modelling")
        g = model.get_layer("attention")(
            [contextual(emb(x[k]), mask=m) for k, m in zip("ab", masks)], mask=masks)
        u, v = (pool(modelling(g_k, mask=m), m) for g_k, m in zip(g, masks))
    features = model.get_layer("features")([u, v])
    return _n(model.get_layer("logit")(model.get_layer("mlp_hidden")(features)))


def _while_loops(model, x):
    import tensorflow as tf

    graph = tf.function(model).get_concrete_function(
        {k: tf.TensorSpec([None, None], tf.int32) for k in x}).graph
    return sum(op.type in ("While", "StatelessWhile") for op in graph.get_operations())


PAIR_MODELS = [
    (PlainEntailmentModel, dict(cell="tpru", pooling="last"), 1),
    (PlainEntailmentModel, dict(cell="lstm", pooling="max"), 1),
    (BiDAFEntailmentModel, dict(cell="tpru", pooling="max"), 4),
    (BiDAFEntailmentModel, dict(cell="gru", pooling="last"), 4),
]


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
@pytest.mark.parametrize("cls, kwargs", [(cls, kwargs) for cls, kwargs, _ in PAIR_MODELS])
def test_pair_in_one_batch_equals_separate_calls(cls, kwargs):
    """A and B share every recurrent layer in one call, and the logits are those of calling
    the layers on A and on B apart."""
    model = cls(units=8, num_roles=4, seed=1, **kwargs)
    x = _batch()  # A is longer than B: B is padded inside the stack
    np.testing.assert_allclose(_n(model(x)), _apart(model, x, kwargs["pooling"]),
                               rtol=1e-6, atol=1e-6)
    swapped = {"a": x["b"], "b": x["a"]}
    np.testing.assert_allclose(_n(model(swapped)), _apart(model, swapped, kwargs["pooling"]),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.tensorflow_backend  # counts tf.while_loop ops in a traced TensorFlow graph
@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
@pytest.mark.parametrize("cls, kwargs, loops", PAIR_MODELS)
def test_pair_in_one_batch_has_one_loop_per_layer(cls, kwargs, loops):
    """One time loop per recurrent layer and direction: A and B go through it together."""
    model = cls(units=8, num_roles=4, seed=1, **kwargs)
    assert _while_loops(model, _batch()) == loops


def test_bidaf_keeps_each_template_alive_while_loading(tmp_path, monkeypatch):
    """`load_model` keys the objects that Bidirectional serialises by id(): a freed
    contextual template whose address the modelling one reuses makes Keras return
    the contextual backward layer as both modelling directions. Collecting garbage
    before each template is made frees any earlier one that is not held."""
    made = []

    def make_after_collecting(*args, **kwargs):
        gc.collect()
        dead = [i for i, ref in enumerate(made) if ref() is None]
        assert not dead, f"template {dead} was freed before the model was built"
        layer = make_recurrent_layer(*args, **kwargs)
        made.append(weakref.ref(layer))
        return layer

    monkeypatch.setattr(entailment_layers, "make_recurrent_layer", make_after_collecting)
    model = BiDAFEntailmentModel(units=8, num_roles=4, seed=1, cell="lstm")
    out = _n(model(_batch()))
    model.save(tmp_path / "model.keras")
    made.clear()
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert len(made) == 2
    np.testing.assert_array_equal(_n(loaded(_batch())), out)
