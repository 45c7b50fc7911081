"""Optimizers the papers' recipes need that Keras core does not ship."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tpr_keras")
class NesterovAdam(keras.optimizers.Optimizer):
    """Adam with a Nesterov momentum step and no momentum schedule.

    This is what the TPR-RNN reference code ran as "Nadam" (TF1
    ``tf.contrib.opt.NadamOptimizer``, github.com/ischlag/TPR-RNN):

        m ← β1 m + (1-β1) g,   v ← β2 v + (1-β2) g²
        α = lr √(1-β2^t) / (1-β1^t)
        θ ← θ - α (β1 m + (1-β1) g) / (√v + ε)

    Keras 3 ``Nadam`` follows Dozat (2016) instead and multiplies β1 by a
    momentum-decay schedule, so the two differ, most at the start of training
    and for small β1 such as TPR-RNN's single-task β1 = 0.6.

    Args:
        learning_rate: step size.
        beta_1: momentum decay.
        beta_2: second-moment decay.
        epsilon: TF1's default 1e-8.

    Example:
    >>> opt = NesterovAdam(learning_rate=0.008, beta_1=0.6, beta_2=0.4)
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        name="nesterov_adam",
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        beta_1 = ops.cast(self.beta_1, variable.dtype)
        beta_2 = ops.cast(self.beta_2, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, (gradient - m) * (1 - beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - beta_2))
        alpha = lr * ops.sqrt(1 - ops.power(beta_2, step)) / (
            1 - ops.power(beta_1, step)
        )
        nesterov = beta_1 * m + (1 - beta_1) * gradient
        self.assign_sub(variable, alpha * nesterov / (ops.sqrt(v) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update(
            {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
        )
        return config


def get_optimizer(name, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=None):
    """Builds an optimizer by name: ``nadam`` (Keras, Dozat), ``nesterov_adam``
    (the TPR-RNN reference's TF1 Nadam), ``adam`` or ``sgd``."""
    if name == "nesterov_adam":
        return NesterovAdam(learning_rate, beta_1, beta_2, epsilon or 1e-8)
    if name == "nadam":
        return keras.optimizers.Nadam(learning_rate, beta_1, beta_2, epsilon or 1e-7)
    if name == "adam":
        return keras.optimizers.Adam(learning_rate, beta_1, beta_2, epsilon or 1e-7)
    if name == "sgd":
        return keras.optimizers.SGD(learning_rate)
    raise ValueError(
        f"Unknown optimizer {name!r}; choose nadam, nesterov_adam, adam or sgd."
    )
