"""Backend-neutral helpers for the test suite: gradients and compiled functions on the
backend Keras runs on (TensorFlow or JAX), so a layer test runs unchanged on each.

The suite runs on TensorFlow, and its layer and op tests again under
``KERAS_BACKEND=jax`` (the README's test command). A test that needs TensorFlow itself
is marked ``@pytest.mark.tensorflow_backend`` (skipped on other backends).
"""

import keras
from keras import ops


def backend():
    """The name of the backend Keras runs on."""
    return keras.backend.backend()


def numpy(x):
    """``x`` (a backend tensor, a Keras variable or array-like) as a numpy array."""
    return ops.convert_to_numpy(x)


def value_and_gradients(fn, variables=(), inputs=()):
    """``fn(*inputs)`` (a scalar) and its gradients, on the running backend.

    Args:
        fn: a function of the float tensors ``inputs`` that may read Keras variables.
        variables: Keras variables to differentiate with respect to (a layer's
            ``trainable_weights``).
        inputs: float arrays to differentiate with respect to; ``fn`` gets them as
            backend tensors.

    Returns:
        ``(value, variable_gradients, input_gradients)``: backend tensors (dense), so
        this also runs inside :func:`compiled`.

    Example:
    >>> layer = keras.layers.Dense(2)
    >>> x = np.ones((3, 4), "float32")
    >>> _, (dk, db), (dx,) = value_and_gradients(
    ...     lambda x: ops.sum(layer(x)), layer.trainable_weights, [x])
    """
    variables, inputs = list(variables), [ops.convert_to_tensor(x) for x in inputs]
    name = backend()
    if name == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch(inputs)
            value = fn(*inputs)
        grads = tape.gradient(value, variables + inputs,
                              unconnected_gradients=tf.UnconnectedGradients.ZERO)
        grads = [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices -> dense
    elif name == "jax":
        import jax

        def pure(values, xs):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn(*xs)

        value, grads = jax.value_and_grad(pure, argnums=(0, 1))(
            [v.value for v in variables], inputs)
        grads = list(grads[0]) + list(grads[1])
    else:
        raise NotImplementedError(f"value_and_gradients: no gradients on backend {name!r}; "
                                  "use tensorflow or jax.")
    return value, grads[:len(variables)], grads[len(variables):]


def compiled(fn, jit_compile=False):
    """``fn`` traced into one compiled function on the running backend: ``tf.function``
    (XLA with ``jit_compile``) on TensorFlow, ``jax.jit`` on JAX (always XLA). No autograph:
    backend-neutral code has no Python control flow on tensors to convert (``jax.jit``
    would refuse it too)."""
    name = backend()
    if name == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=jit_compile, autograph=False)
    if name == "jax":
        import jax

        return jax.jit(fn)
    raise NotImplementedError(f"compiled: backend {name!r}; use tensorflow or jax.")


def batch_source(batches):
    """A list of ``(features, labels)`` numpy batches as the running backend's trainer
    reads them: a ``tf.data.Dataset`` on TensorFlow (each pass in list order), the list
    itself on JAX. Every batch has the first one's shapes and dtypes."""
    if backend() != "tensorflow":
        return batches
    import tensorflow as tf

    signature = tf.nest.map_structure(lambda a: tf.TensorSpec(a.shape, tf.as_dtype(a.dtype)),
                                      batches[0])
    return tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=signature)
