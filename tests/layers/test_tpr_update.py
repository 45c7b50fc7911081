"""TPRUpdate: both implementations equal eq. 4, 6-14 step by step."""

import keras
import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.layers import TPRUpdate
from tpr_keras.ops import factored, tpr

EPS = float(np.finfo(np.float32).eps)

IMPLEMENTATIONS = ["parallel", "recurrent"]


def reference_memory(layer, sentences, mask):
    """F_T by the per-equation ops, in a Python loop (test oracle only)."""
    parts = {k: testing.numpy(v) for k, v in layer.extract(sentences).items()}
    batch, steps = sentences.shape[:2]
    memory = ops.zeros([batch, layer.entity_dim, layer.relation_dim, layer.entity_dim])
    for t in range(steps):
        e1, e2, r1 = parts["e1"][:, t], parts["e2"][:, t], parts["r1"][:, t]
        delta, w_hat = tpr.write(memory, e1, r1, e2)
        if "r2" in parts:
            delta += tpr.move(memory, e1, parts["r2"][:, t], w_hat)[0]
        if "r3" in parts:
            delta += tpr.backlink(memory, e1, e2, parts["r3"][:, t])[0]
        memory = memory + mask[:, t, None, None, None] * delta
    return testing.numpy(memory)


def dense(factors):
    return testing.numpy(factored.to_dense(factors))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("operations", ["write", "write+move", "write+backlink", "all"])
def test_matches_per_equation_reference(operations, implementation):
    layer = TPRUpdate(entity_dim=5, relation_dim=3, hidden_dim=8, operations=operations,
                      implementation=implementation)
    rng = np.random.default_rng(0)
    sentences = rng.normal(size=(3, 6, 7)).astype("float32")
    mask = np.ones((3, 6), "float32")
    mask[1, 4:] = 0
    mask[2, 2:] = 0
    out = dense(layer(sentences, mask=mask.astype(bool)))
    np.testing.assert_allclose(out, reference_memory(layer, sentences, mask), rtol=1e-4, atol=1e-5)
    expected_mlps = {"write": 3, "write+move": 4, "write+backlink": 4, "all": 5}[operations]
    assert len(layer.trainable_weights) == 4 * expected_mlps


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_padded_sentences_leave_memory_unchanged(implementation):
    layer = TPRUpdate(entity_dim=4, relation_dim=3, hidden_dim=6, implementation=implementation)
    rng = np.random.default_rng(1)
    sentences = rng.normal(size=(2, 3, 5)).astype("float32")
    short = dense(layer(sentences, mask=np.ones((2, 3), bool)))
    padded = np.concatenate([sentences, rng.normal(size=(2, 4, 5)).astype("float32")], 1)
    mask = np.zeros((2, 7), bool)
    mask[:, :3] = True
    # float32 rounding only (XLA on CPU may sum the two lengths in different orders, ~3e-7);
    # a padded step that wrote would change F by ~0.1.
    np.testing.assert_allclose(dense(layer(padded, mask=mask)), short, rtol=1e-6, atol=1e-6)
    # All-padding stories give F = 0.
    np.testing.assert_array_equal(dense(layer(padded, mask=np.zeros((2, 7), bool))), 0.0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_gradients_finite_and_nonzero(implementation):
    layer = TPRUpdate(entity_dim=4, relation_dim=3, hidden_dim=6, implementation=implementation)
    sentences = np.random.default_rng(2).normal(size=(2, 5, 5)).astype("float32")
    layer(sentences)  # built before its weights are listed
    _, grads, _ = testing.value_and_gradients(
        lambda: ops.sum(factored.to_dense(layer(sentences)) ** 2), layer.trainable_weights)
    grads = [testing.numpy(g) for g in grads]
    assert len(grads) == 4 * 5  # operations="all": 5 MLPs of 4 weights each
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert all(np.abs(g).sum() > 0 for g in grads)


def test_rejects_unknown_operations_and_implementations():
    with pytest.raises(ValueError, match="operations must be one of"):
        TPRUpdate(4, 3, 6, operations="write+teleport")
    with pytest.raises(ValueError, match="implementation must be one of"):
        TPRUpdate(4, 3, 6, implementation="magic")


def test_output_is_factors_of_every_step_and_operation():
    layer = TPRUpdate(entity_dim=4, relation_dim=3, hidden_dim=6, operations="write+move")
    sources, relations, targets = layer(np.zeros((2, 7, 5), "float32"))
    assert (sources.shape, relations.shape, targets.shape) == ((2, 14, 4), (2, 14, 3), (2, 14, 4))
    assert layer.compute_output_shape((2, 7, 5)) == ((2, 14, 4), (2, 14, 3), (2, 14, 4))


def test_config_round_trip():
    layer = TPRUpdate(4, 3, 6, operations="write+backlink", implementation="recurrent", name="u")
    assert TPRUpdate.from_config(layer.get_config()).get_config() == layer.get_config()


def test_consumes_the_keras_mask_of_padded_sentences():
    # Zero vectors for padded sentences; keras.layers.Masking marks them, and the layer
    # reads that mask (Keras fills ``mask``): F is that of the unpadded story.
    layer = TPRUpdate(entity_dim=4, relation_dim=3, hidden_dim=6)
    inputs = keras.Input((None, 5))
    model = keras.Model(inputs, layer(keras.layers.Masking(0.0)(inputs)))
    rng = np.random.default_rng(2)
    for weight in layer.weights:  # non-zero biases: a zero sentence still writes
        weight.assign(rng.normal(0.0, 0.5, weight.shape).astype("float32"))
    story = rng.normal(size=(1, 3, 5)).astype("float32")
    padded = np.concatenate([story, np.zeros((1, 4, 5), "float32")], axis=1)
    short = dense(model(story))
    np.testing.assert_allclose(dense(model(padded)), short, rtol=0,
                               atol=4 * EPS * 7 * 3 * max(1.0, np.abs(short).max()))
    # Without the mask the padded sentences write tanh(bias) terms into F.
    assert not np.allclose(dense(layer(padded)), short, atol=1e-3)
    assert layer.compute_mask(padded, np.ones((1, 7), bool)) is None
