"""Layer normalisation whose backward pass is its gradient in closed form."""

import keras
from keras import ops


def _normalize(inputs, epsilon):
    """``(x - mean) / sqrt(var + epsilon)`` over the last axis, with the closed-form
    input gradient ``inv * (dy - mean(dy) - x_hat * mean(dy * x_hat))``."""

    @ops.custom_gradient
    def normalize(x):
        centered = x - ops.mean(x, axis=-1, keepdims=True)
        inv = ops.rsqrt(ops.mean(ops.square(centered), axis=-1, keepdims=True) + epsilon)
        normed = centered * inv

        def grad(*args, upstream=None):
            upstream = args[0] if upstream is None else upstream
            return inv * (upstream - ops.mean(upstream, axis=-1, keepdims=True)
                          - normed * ops.mean(upstream * normed, axis=-1, keepdims=True))

        return normed, grad

    return normalize(inputs)


@keras.saving.register_keras_serializable(package="tpr_keras")
class LayerNorm(keras.layers.LayerNormalization):
    """Keras' ``LayerNormalization`` over the last axis, differentiated in closed form.

    Layer normalisation (Ba et al. 2016, eq. 3 for the statistics): ``y = g * (x - mu) /
    sigma + b`` with ``mu`` and ``sigma`` the mean and standard deviation over the features
    (here ``sigma = sqrt(var + epsilon)``); each cell of the TP-Transformer (Schlag et al.
    2019, §2) begins with one and follows each sub-layer with one. Automatic
    differentiation of the moments walks back through every elementwise op of the forward
    pass; this layer's gradient with respect to ``x`` is the closed form ``(dx_hat -
    mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) / sigma`` (``x_hat`` the normalised input,
    ``dx_hat = g * dy``), about half the ops. Its weights (``gamma``, ``beta``), config and
    saved form are ``LayerNormalization``'s. Statistics are computed in float32 under mixed
    precision, as Keras' layer does.

    Args:
        axis: The axis normalised; the closed form runs for the last one only, any other
            (or several) falls back to Keras' own ``call``.
        epsilon: Added to the variance.
        center, scale: Learn the shift ``beta`` and the gain ``gamma``; without either,
            Keras' own ``call``.
        rms_scaling: Keras' deprecated option; Keras' own ``call``.
        beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
            beta_constraint, gamma_constraint: As in ``keras.layers.LayerNormalization``.
        **kwargs: The base layer's (``name``, ``dtype``).

    Input ``[..., d]``; output the same shape.

    Masking:
        Normalises each position on its own, so a Keras mask on the input passes through
        to the output unchanged.

    Example:
    >>> LayerNorm(epsilon=1e-5)(np.array([[1.0, 3.0]])).numpy().round(3)
    array([[-1.,  1.]], dtype=float32)
    """

    def call(self, inputs):
        last = len(inputs.shape) - 1
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        if (not self.center or not self.scale or self.rms_scaling
                or [a % len(inputs.shape) for a in axes] != [last]):
            return super().call(inputs)
        x = inputs
        if keras.backend.standardize_dtype(x.dtype) in ("float16", "bfloat16"):
            x = ops.cast(x, "float32")  # mixed precision: statistics in float32
        normed = _normalize(x, self.epsilon)
        outputs = normed * ops.cast(self.gamma, x.dtype) + ops.cast(self.beta, x.dtype)
        return ops.cast(outputs, self.compute_dtype)
