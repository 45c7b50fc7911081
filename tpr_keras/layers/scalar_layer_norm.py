"""Layer normalisation with one scalar gain and one scalar bias."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tpr_keras")
class ScalarLayerNorm(keras.layers.Layer):
    """Layer normalisation whose learned scale and shift are scalars (TPR-RNN eq. 17-19).

    Schlag & Schmidhuber (2018) §4: "LN refers to layer normalization [Ba et al.
    2016] which includes a learned scaling and shifting scalar". Normalises over
    the last axis; ``gain`` starts at 1 and ``bias`` at 0. Keras'
    ``LayerNormalization`` learns one gain per feature, hence this layer.

    Args:
        epsilon: added to the variance for numerical stability.

    Input ``[..., d]``; output the same shape.

    Masking:
        Normalises each position on its own, so a Keras mask on the input passes
        through to the output unchanged.

    Example:
    >>> ScalarLayerNorm()(np.array([[1.0, 3.0]])).numpy().round(3)
    array([[-1.,  1.]], dtype=float32)
    """

    def __init__(self, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = float(epsilon)
        self.supports_masking = True

    def build(self, input_shape):
        self.gain = self.add_weight(name="gain", shape=(), initializer="ones")
        self.bias = self.add_weight(name="bias", shape=(), initializer="zeros")
        self.built = True

    def call(self, inputs):
        dtype = inputs.dtype
        if keras.backend.standardize_dtype(dtype) in ("float16", "bfloat16"):
            inputs = ops.cast(inputs, "float32")  # mixed precision: statistics in float32
        mean = ops.mean(inputs, axis=-1, keepdims=True)
        variance = ops.var(inputs, axis=-1, keepdims=True)
        normed = (inputs - mean) * ops.rsqrt(variance + self.epsilon)
        return ops.cast(normed * ops.cast(self.gain, normed.dtype)
                        + ops.cast(self.bias, normed.dtype), dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"epsilon": self.epsilon})
        return config
