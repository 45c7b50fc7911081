import numpy as np

from tests.layers.masking import check_propagates
from tpr_keras.layers import ScalarLayerNorm


def test_normalises_with_scalar_gain_and_bias():
    norm = ScalarLayerNorm(epsilon=0.0)
    x = np.array([[1.0, 2.0, 3.0, 6.0]], "float32")
    norm.build(x.shape)
    assert norm.gain.shape == () and norm.bias.shape == ()
    norm.gain.assign(2.0)
    norm.bias.assign(0.5)
    expected = 2.0 * (x - x.mean()) / x.std() + 0.5
    np.testing.assert_allclose(norm(x), expected, rtol=1e-5)
    assert len(norm.trainable_weights) == 2


def test_passes_a_keras_mask_through():
    norm = ScalarLayerNorm()
    model, _ = check_propagates(norm, 4, 4, 4)  # mean, variance, scale over width 4
    assert model.get_layer(norm.name) is norm
