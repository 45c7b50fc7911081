import keras
import numpy as np
import pytest

from tpr_keras import testing
from tests.layers.masking import mask_warnings
from tpr_keras.layers import TPRInference
from tpr_keras.ops import factored, tpr


def layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6)


@pytest.mark.parametrize("steps", [1, 3])
def test_eq17_to_20_by_hand(steps):
    layer = TPRInference(11, entity_dim=4, relation_dim=3, hidden_dim=6, inference_steps=steps)
    rng = np.random.default_rng(0)
    question = rng.normal(size=(2, 9)).astype("float32")
    memory = rng.normal(size=(2, 4, 3, 4)).astype("float32")
    logits, found = layer([question, memory], return_steps=True)
    entity = testing.numpy(layer.n_mlp(question))
    total = 0
    for j in range(steps):
        entity = layer_norm(testing.numpy(tpr.unbind3(memory, entity, layer.l_mlps[j](question))))
        np.testing.assert_allclose(found[j], entity, rtol=1e-4, atol=1e-5)
        total = total + entity
    np.testing.assert_allclose(logits, total @ testing.numpy(layer.z.kernel), rtol=1e-4, atol=1e-5)
    assert logits.shape == (2, 11)


def test_config_round_trip():
    layer = TPRInference(11, 4, 3, 6, inference_steps=2, name="inf")
    assert TPRInference.from_config(layer.get_config()).get_config() == layer.get_config()


def test_reads_factors_as_it_reads_the_dense_memory():
    layer = TPRInference(11, entity_dim=4, relation_dim=3, hidden_dim=6)
    rng = np.random.default_rng(1)
    question = rng.normal(size=(2, 9)).astype("float32")
    factors = tuple(rng.normal(size=(2, 12, d)).astype("float32") * 0.5 for d in (4, 3, 4))
    from_dense = testing.numpy(layer([question, factored.to_dense(factors)]))
    np.testing.assert_allclose(testing.numpy(layer([question, factors])), from_dense,
                               rtol=1e-4, atol=1e-5)


def test_has_no_mask_to_consume_and_says_so():
    # Its inputs have no sequence axis; a masked input is dropped with Keras' warning.
    layer = TPRInference(7, entity_dim=4, relation_dim=3, hidden_dim=5)
    assert not layer.supports_masking
    question, memory = keras.Input((6,)), keras.Input((4, 3, 4))
    _, warned = mask_warnings(lambda: layer([keras.layers.Masking(0.0)(question), memory]))
    assert len(warned) == 1 and layer.name in warned[0]
    _, warned = mask_warnings(lambda: layer([question, memory]))
    assert warned == []
