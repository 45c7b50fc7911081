"""experiments/entailment_bidaf_diagnosis.py: each training variant changes the model as it
says."""

import keras
import numpy as np
import pytest

from tpr_keras.layers.tpru import TPRU
from tpr_keras.layers.tpru_cell import TPRUCell
from tpr_keras.models.entailment import (BiDAFEntailmentModel, PlainEntailmentModel,
                                         entailment_layers)

PAIR = {"a": np.array([[6, 8, 3, 9, 7], [8, 4, 9, 0, 0]]), "b": np.array([[8, 0, 0, 0, 0],
                                                                            [9, 3, 8, 0, 0]])}


@pytest.fixture
def diagnosis(load_script, monkeypatch):
    """The script, with what its variants patch restored after the test."""
    monkeypatch.setattr(entailment_layers, "make_recurrent_layer",
                        entailment_layers.make_recurrent_layer)
    monkeypatch.setattr(TPRUCell, "build", TPRUCell.build)
    monkeypatch.setattr(entailment_layers.BiDAFAttention, "call",
                        entailment_layers.BiDAFAttention.call)
    for model_class in (BiDAFEntailmentModel, PlainEntailmentModel):
        monkeypatch.setattr(model_class, "encode_pair",
                            staticmethod(model_class.__dict__["encode_pair"].__func__))
    return load_script("entailment_bidaf_diagnosis")


def _bidaf(cell="tpru"):
    model = BiDAFEntailmentModel(units=8, cell=cell, num_roles=4, seed=0,
                                 attention_output="context")
    model(PAIR)
    return model


def test_layers_variant_mixes_unit_types(diagnosis):
    diagnosis.apply_variant("layers=tpru,lstm")
    model = _bidaf()
    assert isinstance(model.get_layer("contextual").forward_layer, TPRU)
    assert isinstance(model.get_layer("modelling").forward_layer, keras.layers.LSTM)
    with pytest.raises(ValueError, match="CONTEXTUAL,MODELLING"):
        diagnosis.apply_variant("layers=tpru")


def test_tpru_bias_variant_sets_both_scalar_biases(diagnosis):
    diagnosis.apply_variant("tpru_bias=0.25")
    cell = _bidaf().get_layer("contextual").forward_layer.cell
    assert float(cell.binding_bias) == 0.25 and float(cell.input_bias) == 0.25


def test_centred_variant_gives_the_attention_mean_zero_inputs(diagnosis):
    diagnosis.apply_variant("centred")
    model = _bidaf("lstm")
    seen = {}
    attention = model.get_layer("attention")
    call = type(attention).call

    def record(self, inputs, mask=None):
        out = call(self, inputs, mask=mask)
        seen["h"], seen["mask"] = np.asarray(out[0])[..., :16], np.asarray(mask[0])
        return out

    type(attention).call = record  # restored by the fixture
    model(PAIR)
    h, mask = seen["h"], seen["mask"]
    np.testing.assert_allclose(h[mask].mean(0), 0.0, atol=1e-6)
    assert np.abs(h[mask]).max() > 1e-4 and np.all(h[~mask] == 0)


def test_no_attention_variant_cuts_the_attention_out_of_the_model(diagnosis):
    def logits_move_with_the_similarity_kernel(model):
        before = np.asarray(model(PAIR))
        kernel = model.get_layer("attention").similarity_kernel
        kernel.assign(np.random.default_rng(0).normal(size=kernel.shape) * 5)
        return not np.allclose(before, np.asarray(model(PAIR)), atol=1e-7)

    assert logits_move_with_the_similarity_kernel(_bidaf("lstm"))  # the control
    diagnosis.apply_variant("no_attention+layers=lstm,tpru")
    model = _bidaf("tpru")
    assert isinstance(model.get_layer("contextual").forward_layer, keras.layers.LSTM)
    assert isinstance(model.get_layer("modelling").forward_layer, TPRU)
    assert not logits_move_with_the_similarity_kernel(model)
    h = np.ones((1, 3, 16), "float32")  # the contextual output: 2 directions of 8
    g_a, g_b = model.get_layer("attention")([h, 2 * h[:, :2]])
    np.testing.assert_array_equal(g_a, np.concatenate([h, 0 * h], -1))
    np.testing.assert_array_equal(g_b, np.concatenate([2 * h[:, :2], 0 * h[:, :2]], -1))


@pytest.mark.parametrize("model_class", [BiDAFEntailmentModel, PlainEntailmentModel])
def test_embedding_scale_variant_scales_the_initial_embedding(diagnosis, model_class):
    def initial_embedding():
        keras.utils.set_random_seed(3)
        model = model_class(units=8, cell="tpru", num_roles=4, seed=0)
        return model, np.asarray(model.get_layer("embedding").embeddings)

    usual, before = initial_embedding()
    diagnosis.apply_variant("embedding_scale=40")
    scaled, after = initial_embedding()
    np.testing.assert_allclose(after, 40 * before, rtol=1e-6)
    assert np.abs(before).max() <= 0.05 < np.abs(after).max()
    for first, second in zip(usual.weights[1:], scaled.weights[1:]):  # the rest unchanged
        np.testing.assert_array_equal(first, second)


def test_backwards_variant_reverses_the_plain_encoder(diagnosis):
    forward = PlainEntailmentModel(units=8, cell="tpru", num_roles=4, seed=0)
    diagnosis.apply_variant("backwards")
    backward = PlainEntailmentModel(units=8, cell="tpru", num_roles=4, seed=0)
    assert backward.get_layer("encoder").go_backwards
    pair = {"a": PAIR["a"][:1], "b": PAIR["b"][1:, :3]}  # no padding
    backward(pair)
    forward(pair)
    backward.set_weights(forward.get_weights())
    reversed_pair = {key: value[:, ::-1] for key, value in pair.items()}
    np.testing.assert_allclose(backward(pair), forward(reversed_pair), rtol=1e-5)
    assert not np.allclose(backward(pair), forward(pair))
    with pytest.raises(ValueError, match="unknown variant"):
        diagnosis.apply_variant("wider")


def test_input_dependent_share(diagnosis):
    mask = np.ones((4, 8), bool)
    constant = np.ones((4, 8, 3))
    assert diagnosis.input_dependent_share(constant, mask) == [0.0] * 8
    signs = np.array([1.0, -1.0, 1.0, -1.0])[:, None, None] * constant
    assert diagnosis.input_dependent_share(signs, mask) == [1.0] * 8


def test_role_statistics_of_an_input_blind_cell_are_uniform(diagnosis):
    cell = TPRUCell(4, num_roles=8, seed=0)
    cell.build((None, 3))
    cell.input_kernel.assign(np.zeros((3, 4), "float32"))
    stats = diagnosis.role_statistics(cell, np.ones((5, 3), "float32"))
    assert stats["pre_std"] == 0.0
    assert stats["f_max"] == pytest.approx(1 / 8) and stats["effective_roles"] == pytest.approx(8)


def test_gradient_norms_pool_the_two_directions_of_a_layer(diagnosis):
    import tensorflow as tf

    model = _bidaf()
    y = np.array([[1.0], [0.0]], "float32")
    norms = diagnosis.gradient_norms(model, PAIR, y)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, model(PAIR)))
    grads = dict(zip((v.path for v in model.trainable_variables),
                     tape.gradient(loss, model.trainable_variables)))
    both = [g for path, g in grads.items()
            if path.startswith("contextual/") and path.endswith("/unbinding_kernel")]
    assert len(both) == 2
    assert norms["contextual/unbinding_kernel"] == pytest.approx(
        float(tf.sqrt(sum(tf.reduce_sum(g * g) for g in both))), rel=1e-5)
    assert norms["logit/bias"] == pytest.approx(abs(float(grads["logit/bias"][0])), rel=1e-5)


@pytest.mark.parametrize("go_backwards", [False, True])
def test_previous_states_are_the_states_each_step_starts_from(diagnosis, go_backwards):
    layer = TPRU(4, num_roles=8, seed=0, return_sequences=True, go_backwards=go_backwards)
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    seen = {}
    loop = layer.inner_loop

    def capture(sequences, initial_state, mask, training=False):
        seen["outputs"] = np.asarray(loop(sequences, initial_state, mask)[1])
        return loop(sequences, initial_state, mask)

    layer.inner_loop = capture
    layer(x, mask=mask)
    outputs = seen["outputs"]  # in processing order
    real, previous = diagnosis.previous_states(outputs, mask, go_backwards)
    np.testing.assert_array_equal(real, mask)
    states, _ = layer.cell(x[real], [previous[real]])  # one step from b_(t-1)
    in_order = outputs[:, ::-1] if go_backwards else outputs
    np.testing.assert_allclose(states, in_order[real], rtol=1e-5, atol=1e-6)
    assert not np.allclose(previous[real], in_order[real])
    stats = diagnosis.role_statistics(layer.cell, x[real], previous[real])
    assert stats["state_pre_std"] > 0 and 1 <= stats["effective_roles"] <= 8
