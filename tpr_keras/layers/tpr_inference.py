"""The TPR-RNN inference module: multi-step unbinding from the order-3 TPR."""

import keras
from keras import ops

from tpr_keras.layers.mlp import TanhMLP
from tpr_keras.layers.scalar_layer_norm import ScalarLayerNorm
from tpr_keras.ops import factored, tpr


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPRInference(keras.layers.Layer):
    """Answers a question by repeated unbinding from ``F``, eq. 15-20.

    Schlag & Schmidhuber (2018) §4, inference module. From the question vector
    ``s_Q`` tanh MLPs give an entity ``n`` (eq. 15) and one relation ``l_j`` per
    step (eq. 16). Step 1 unbinds ``(n, l_1)``; each later step unbinds with the
    previous result as the entity (eq. 17-19); every step is layer-normalised
    with a scalar gain and bias. The logits are ``Z Σ_j î_j`` (eq. 20, before
    the softmax), with ``Z`` a linear map without bias.

    Args:
        vocabulary_size: number of output symbols (softmax width).
        entity_dim: width of ``V_Entity``.
        relation_dim: width of ``V_Relation``.
        hidden_dim: hidden width of the MLPs.
        inference_steps: number of unbinding steps (the paper uses 3).
        layer_norm_epsilon: epsilon of the scalar layer norms of eq. 17-19.

    The memory is either the factors ``(sources, relations, targets)`` that
    :class:`TPRUpdate` returns, read with
    :func:`tpr_keras.ops.factored.read` without building ``F``, or a dense
    ``F [batch, E, R, E]`` read with :func:`tpr_keras.ops.tpr.unbind3`.

    Inputs: ``[question_vector [batch, symbol], memory]``.
    Output: logits ``[batch, vocabulary_size]``.

    Masking:
        None: neither input has a sequence axis (:class:`TPRUpdate` consumes the
        sentence mask and returns none), so there is no mask to consume or pass on;
        a masked input makes Keras warn that the mask is dropped.

    Example:
    >>> inference = TPRInference(30, entity_dim=15, relation_dim=10, hidden_dim=30)
    >>> inference([np.zeros((2, 30)), np.zeros((2, 15, 10, 15))]).shape
    TensorShape([2, 30])
    """

    def __init__(
        self,
        vocabulary_size,
        entity_dim,
        relation_dim,
        hidden_dim,
        inference_steps=3,
        layer_norm_epsilon=1e-6,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        if inference_steps < 1:
            raise ValueError(f"inference_steps must be >= 1; got {inference_steps}.")
        self.vocabulary_size = int(vocabulary_size)
        self.entity_dim = int(entity_dim)
        self.relation_dim = int(relation_dim)
        self.hidden_dim = int(hidden_dim)
        self.inference_steps = int(inference_steps)

    def build(self, input_shape):
        question_shape = input_shape[0]
        self.n_mlp = TanhMLP(self.hidden_dim, self.entity_dim, name="n", dtype=self.dtype_policy)
        self.n_mlp.build(question_shape)
        # One attribute per step (not a Python list): tf.train.Checkpoint does
        # not see layers that Keras keeps in lists.
        for j in range(1, self.inference_steps + 1):
            l_mlp = TanhMLP(self.hidden_dim, self.relation_dim, name=f"l{j}",
                            dtype=self.dtype_policy)
            l_mlp.build(question_shape)
            setattr(self, f"l{j}_mlp", l_mlp)
            norm = ScalarLayerNorm(self.layer_norm_epsilon, name=f"layer_norm_{j}",
                                   dtype=self.dtype_policy)
            norm.build((None, self.entity_dim))
            setattr(self, f"layer_norm_{j}", norm)
        self.z = keras.layers.Dense(
            self.vocabulary_size, use_bias=False, name="z", dtype=self.dtype_policy
        )
        self.z.build((None, self.entity_dim))
        self.built = True

    @property
    def l_mlps(self):
        """The relation networks ``l_1 .. l_n`` of eq. 16, in step order."""
        return [getattr(self, f"l{j}_mlp") for j in range(1, self.inference_steps + 1)]

    @property
    def norms(self):
        """The layer norms of eq. 17-19, in step order."""
        return [getattr(self, f"layer_norm_{j}") for j in range(1, self.inference_steps + 1)]

    def call(self, inputs, return_steps=False):
        question, memory = inputs
        if isinstance(memory, (list, tuple)):
            memory = tuple(memory)
            unbind = factored.read  # eq. 17-19 from the factors of F
        else:
            unbind = tpr.unbind3  # eq. 17-19 on the dense F
        entity = self.n_mlp(question)
        steps = []
        for l_mlp, norm in zip(self.l_mlps, self.norms):
            entity = norm(unbind(memory, entity, l_mlp(question)))
            steps.append(entity)
        logits = self.z(ops.sum(ops.stack(steps, axis=0), axis=0))
        if return_steps:
            return logits, steps
        return logits

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], self.vocabulary_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "entity_dim": self.entity_dim,
                "relation_dim": self.relation_dim,
                "hidden_dim": self.hidden_dim,
                "inference_steps": self.inference_steps,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
