"""Optimizers the papers' recipes need that Keras core does not ship."""

import keras
import numpy as np
from keras import ops

#: TF1's glorot-uniform limit for a scalar variable (fan-in = fan-out = 1): ``√(6/2)``.
GLOROT_SCALAR_LIMIT = 3.0 ** 0.5


class _AdamMoments(keras.optimizers.Optimizer):
    """The state both Adam forms below keep: ``β1``, ``β2``, ``ε`` and, per variable, the
    first and second moments ``m`` and ``v``."""

    def __init__(self, learning_rate, beta_1, beta_2, epsilon, name, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"])

    def _moments(self, variable):
        """``(m, v)`` of ``variable``."""
        index = self._get_variable_index(variable)
        return self._momentums[index], self._velocities[index]

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2,
                       "epsilon": self.epsilon})
        return config


@keras.saving.register_keras_serializable(package="tpr_keras")
class NesterovAdam(_AdamMoments):
    """Adam with a Nesterov momentum step and no momentum schedule.

    This is what the TPR-RNN reference code ran as "Nadam" (TF1
    ``tf.contrib.opt.NadamOptimizer``, github.com/ischlag/TPR-RNN):

        m ← β1 m + (1-β1) g,   v ← β2 v + (1-β2) g²
        α = lr √(1-β2^t) / (1-β1^t)
        θ ← θ - α (β1 m + (1-β1) g) / (√v + ε)

    Keras 3 ``Nadam`` follows Dozat (2016) instead and multiplies β1 by a
    momentum-decay schedule, so the two differ, most at the start of training
    and for small β1 such as TPR-RNN's single-task β1 = 0.6.

    Their code also starts TF1's power accumulators ``β1^t``, ``β2^t`` from the values
    the β variables hold before they are assigned: random scalars (glorot-uniform). With
    ``beta_1_power_start`` / ``beta_2_power_start`` the powers at step ``t`` are
    ``start · β^(t-1)`` instead of ``β^t``, which makes the early steps larger than
    Adam's (or not finite: a start above 1 gives ``√`` of a negative number).

    Args:
        learning_rate: step size.
        beta_1: momentum decay.
        beta_2: second-moment decay.
        epsilon: TF1's default 1e-8.
        beta_1_power_start: the first step's ``β1^t`` (default ``beta_1``).
        beta_2_power_start: the first step's ``β2^t`` (default ``beta_2``).

    Example:
    >>> opt = NesterovAdam(learning_rate=0.008, beta_1=0.6, beta_2=0.4)
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        beta_1_power_start=None,
        beta_2_power_start=None,
        name="nesterov_adam",
        **kwargs,
    ):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)
        self.beta_1_power_start = beta_1_power_start
        self.beta_2_power_start = beta_2_power_start

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        beta_1 = ops.cast(self.beta_1, variable.dtype)
        beta_2 = ops.cast(self.beta_2, variable.dtype)
        m, v = self._moments(variable)
        self.assign_add(m, (gradient - m) * (1 - beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - beta_2))
        power_1 = self._power(beta_1, step, self.beta_1_power_start)
        power_2 = self._power(beta_2, step, self.beta_2_power_start)
        alpha = lr * ops.sqrt(1 - power_2) / (1 - power_1)
        nesterov = beta_1 * m + (1 - beta_1) * gradient
        self.assign_sub(variable, alpha * nesterov / (ops.sqrt(v) + self.epsilon))

    @staticmethod
    def _power(beta, step, start):
        """``β^t``, or ``start · β^(t-1)`` with a start."""
        if start is None:
            return ops.power(beta, step)
        return ops.cast(start, beta.dtype) * ops.power(beta, step - 1)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1_power_start": self.beta_1_power_start,
                       "beta_2_power_start": self.beta_2_power_start})
        return config


@keras.saving.register_keras_serializable(package="tpr_keras")
class TorchAdam(_AdamMoments):
    """Adam in PyTorch's form (``torch.optim.Adam``), as the TP-Transformer's released
    code trained (github.com/ischlag/TP-Transformer; Schlag et al. 2019, §4.1):

        m ← β1 m + (1-β1) g,   v ← β2 v + (1-β2) g²
        θ ← θ - lr/(1-β1^t) · m / (√v / √(1-β2^t) + ε)

    ε is added to the bias-corrected ``√v̂``. Keras' ``Adam`` folds both corrections
    into its step size and adds its ε (default 1e-7) to the uncorrected ``√v``, so its
    ε acts ``1/√(1-β2^t)`` times larger, most in the first steps and where ``v`` is
    small.

    Args:
        learning_rate: step size.
        beta_1: first-moment decay.
        beta_2: second-moment decay.
        epsilon: PyTorch's default 1e-8.

    Example:
    >>> opt = TorchAdam(learning_rate=1e-4, beta_1=0.9, beta_2=0.995)
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 name="torch_adam", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        beta_1 = ops.cast(self.beta_1, variable.dtype)
        beta_2 = ops.cast(self.beta_2, variable.dtype)
        m, v = self._moments(variable)
        self.assign_add(m, (gradient - m) * (1 - beta_1))
        self.assign(v, v * beta_2 + ops.square(gradient) * (1 - beta_2))
        step_size = lr / (1 - ops.power(beta_1, step))
        correction = ops.sqrt(1 - ops.power(beta_2, step))
        denominator = ops.sqrt(v) / correction + ops.cast(self.epsilon, variable.dtype)
        self.assign_sub(variable, step_size * (m / denominator))


def authors_nadam(learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-8, seed=None):
    """The TPR-RNN reference's optimizer with the start its code gives it.

    Their β1, β2 are scalar variables with TF1's default initializer (glorot-uniform,
    ``U(±√3)`` for a scalar), assigned 0.9 / 0.999 only after ``AdamOptimizer`` has
    started its power accumulators from their initial values. So the powers at step
    ``t`` are ``r · β^(t-1)`` with ``r`` uniform in ``±√3``, and the step size
    ``lr √(1-β2^t) / (1-β1^t)`` differs from Adam's for about a thousand steps. A
    ``β2`` start above 1 makes the first step NaN and their loop starts over with new
    draws; here such draws are redrawn.

    Args:
        learning_rate, beta_1, beta_2, epsilon: as :class:`NesterovAdam`.
        seed: seed of the two draws (``numpy.random.default_rng``).

    Returns:
        A :class:`NesterovAdam` with ``beta_1_power_start`` and ``beta_2_power_start``.

    Example:
    >>> authors_nadam(0.001, seed=0).beta_2_power_start < 1
    True
    """
    rng = np.random.default_rng(seed)
    while True:
        start_1, start_2 = rng.uniform(-GLOROT_SCALAR_LIMIT, GLOROT_SCALAR_LIMIT, size=2)
        if start_2 < 1.0 and start_1 != 1.0:
            return NesterovAdam(learning_rate, beta_1, beta_2, epsilon,
                                float(start_1), float(start_2))


def get_optimizer(name, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=None,
                  beta_1_power_start=None, beta_2_power_start=None):
    """Builds an optimizer by name: ``nadam`` (Keras, Dozat), ``nesterov_adam``
    (the TPR-RNN reference's TF1 Nadam; the ``*_power_start`` arguments are its),
    ``adam`` (Keras), ``torch_adam`` (PyTorch's form, the TP-Transformer reference's)
    or ``sgd``."""
    if name == "nesterov_adam":
        return NesterovAdam(learning_rate, beta_1, beta_2, epsilon or 1e-8,
                            beta_1_power_start, beta_2_power_start)
    if beta_1_power_start is not None or beta_2_power_start is not None:
        raise ValueError(f"beta power starts are nesterov_adam's; got optimizer {name!r}.")
    if name == "nadam":
        return keras.optimizers.Nadam(learning_rate, beta_1, beta_2, epsilon or 1e-7)
    if name == "adam":
        return keras.optimizers.Adam(learning_rate, beta_1, beta_2, epsilon or 1e-7)
    if name == "torch_adam":
        return TorchAdam(learning_rate, beta_1, beta_2, epsilon or 1e-8)
    if name == "sgd":
        return keras.optimizers.SGD(learning_rate)
    raise ValueError(
        f"Unknown optimizer {name!r}; choose nadam, nesterov_adam, adam, torch_adam or sgd."
    )
