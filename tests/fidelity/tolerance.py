"""Float32 tolerances and gradients shared by the fidelity tests (docs/fidelity.md).

Two float32 programs that compute the same function in a different order (another
library's kernels, another summation order, fused multiply-adds or not) differ by
rounding only. A sum of ``n`` terms rounded in float32 carries an error of about
``eps * sqrt(n)`` times the size of its terms when the rounding errors are independent
(``eps = 2**-23``, the float32 spacing at 1, twice the unit roundoff), and a chain of
such reductions adds their depths. The tests compare with

    tolerance = K * eps * sqrt(depth) * magnitude

where ``depth`` is the summed length of the reductions on the path from the compared
weights and inputs to the value (stated at each use), ``magnitude`` the largest absolute
reference value of the compared tensor (or the scale its terms have, stated where it
differs), and ``K = 4`` a factor for the condition of the computation (layer norm and
softmax amplify small differences of their inputs by a few units). Measured differences
are 1-2 float32 spacings of the magnitude, 20-100 times below these tolerances (the
numbers: docs/fidelity_<family>.md); a wrong weight mapping, a missing bias or a transposed
kernel gives differences of the size of the values themselves, thousands of times the
tolerances (``test_a_wrong_weight_fails``).
"""

import keras
import numpy as np

EPS = float(np.finfo(np.float32).eps)
K = 4.0


def tolerance(depth, magnitude, k=K):
    """``k * eps_f32 * sqrt(depth) * magnitude``."""
    return k * EPS * float(np.sqrt(depth)) * float(magnitude)


def assert_close(name, ours, theirs, depth, magnitude=None, report=None):
    """Asserts ``max |ours - theirs| <= tolerance(depth, magnitude)`` (magnitude: the
    largest ``|theirs|`` by default) and records ``(name, error, tolerance)`` in
    ``report`` (a list) when given."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    assert ours.shape == theirs.shape, (name, ours.shape, theirs.shape)
    magnitude = np.max(np.abs(theirs)) if magnitude is None else magnitude
    error, bound = float(np.max(np.abs(ours - theirs))), tolerance(depth, magnitude)
    if report is not None:
        report.append((name, error, bound))
    assert error <= bound, f"{name}: max |diff| {error:.3g} > tolerance {bound:.3g}"
    return error, bound


def value_and_gradients(model, loss_fn):
    """``(loss, [gradient per model.trainable_variables])`` of ``loss_fn()`` (which calls
    the model) on TensorFlow or JAX, as numpy."""
    variables = model.trainable_variables
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_fn()
        grads = tape.gradient(loss, variables)
    elif keras.backend.backend() == "jax":
        import jax

        def pure(values):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return loss_fn()

        loss, grads = jax.value_and_grad(pure)([v.value for v in variables])
    else:
        raise NotImplementedError(keras.backend.backend())
    return np.asarray(loss), [np.asarray(g) for g in grads]


def assert_report_within(report):
    """Every ``(name, |difference|, tolerance)`` of a trajectory report is within its
    tolerance; prints the worst ratio (``pytest -s`` shows it)."""
    worst = max(report, key=lambda r: r[1] / r[2])
    print(f"\nworst {worst[0]}: {worst[1]:.3g} <= {worst[2]:.3g}")
    for name, error, bound in report:
        assert error <= bound, f"{name}: |diff| {error:.3g} > tolerance {bound:.3g}"
