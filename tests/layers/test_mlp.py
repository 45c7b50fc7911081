import keras
import numpy as np

from tpr_keras import testing
from tpr_keras.layers import TanhMLP
from tests.layers.masking import check_propagates


def test_two_tanh_layers():
    keras.utils.set_random_seed(0)  # fixed weights: the test must not depend on the draw
    mlp = TanhMLP(hidden_dim=5, output_dim=3)
    x = np.random.default_rng(0).normal(size=(4, 7)).astype("float32")
    out = testing.numpy(mlp(x))
    w1, b1 = testing.numpy(mlp.hidden.kernel), testing.numpy(mlp.hidden.bias)
    w2, b2 = testing.numpy(mlp.output_layer.kernel), testing.numpy(mlp.output_layer.bias)
    np.testing.assert_allclose(out, np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2),
                               rtol=1e-5, atol=1e-6)  # float32 sums: outputs near 0
    assert TanhMLP.from_config(mlp.get_config()).get_config() == mlp.get_config()


def test_passes_a_keras_mask_through():
    # Two dense maps of width 4 and 5 per position.
    check_propagates(TanhMLP(hidden_dim=5, output_dim=3), 4, 5)
    mask = np.array([[True, False]])
    np.testing.assert_array_equal(TanhMLP(5, 3).compute_mask(np.zeros((1, 2, 4)), mask), mask)
