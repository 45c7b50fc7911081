"""The two-layer tanh MLP that TPR-RNN uses to extract entities and relations."""

import keras


@keras.saving.register_keras_serializable(package="tpr_keras")
class TanhMLP(keras.layers.Layer):
    """Two affine layers, each followed by tanh (TPR-RNN Appendix A, eq. 7-8, 15-16).

    Schlag & Schmidhuber (2018) extract every entity and relation vector from a
    sentence representation with "an MLP of two layers, where each layer is an
    affine transformation followed by the hyperbolic tangent". Weights use
    Glorot-uniform initialisation, biases zeros.

    Args:
        hidden_dim: width of the hidden layer (``V_Hidden``).
        output_dim: width of the output (an entity or relation space).
        kernel_initializer: initializer of both kernels.

    Input ``[..., d]``; output ``[..., output_dim]``.

    Masking:
        Acts on the last axis only, so a Keras mask on the input passes through to
        the output unchanged.

    Example:
    >>> mlp = TanhMLP(hidden_dim=40, output_dim=15)
    >>> mlp(np.zeros((2, 30), "float32")).shape
    TensorShape([2, 15])
    """

    def __init__(
        self, hidden_dim, output_dim, kernel_initializer="glorot_uniform", **kwargs
    ):
        super().__init__(**kwargs)
        self.hidden_dim = int(hidden_dim)
        self.output_dim = int(output_dim)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        self.hidden = keras.layers.Dense(
            self.hidden_dim,
            activation="tanh",
            kernel_initializer=self.kernel_initializer,
            name="hidden", dtype=self.dtype_policy
        )
        self.hidden.build(input_shape)
        self.output_layer = keras.layers.Dense(
            self.output_dim,
            activation="tanh",
            kernel_initializer=self.kernel_initializer,
            name="output", dtype=self.dtype_policy
        )
        self.output_layer.build(tuple(input_shape[:-1]) + (self.hidden_dim,))
        self.built = True

    def call(self, inputs):
        return self.output_layer(self.hidden(inputs))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "output_dim": self.output_dim,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
