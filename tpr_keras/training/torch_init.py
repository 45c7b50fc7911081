"""PyTorch's default ``nn.Linear`` initialisation for chosen weights of a built model.

PyTorch initialises a ``Linear(in, out)`` layer's kernel with
``kaiming_uniform_(a=√5)`` and its bias uniformly, both in ``±1/√in``
(``gain · √(3/in)`` with ``gain = √(2/(1+a²)) = √(1/3)``). A reference implementation
that never re-initialises some of its layers trains from these values; a recipe that
reproduces it (:mod:`tpr_keras.training.recipes`) lists those weights' paths and
:func:`torch_linear_init` draws them anew, in ``keras.ops``, after the model is built.
"""

import fnmatch

import keras
from keras import ops


def torch_linear_bound(variable, variables_by_path):
    """``1/√in`` of ``variable``: a kernel's ``in`` is its first axis (``[in, out]``,
    the Keras layout), a bias's the first axis of the kernel whose path is the bias's
    with its last ``bias`` written ``kernel`` (``query_bias`` → ``query_kernel``,
    ``inner/bias`` → ``inner/kernel``)."""
    kernel = variable
    if len(variable.shape) == 1:
        head, _, tail = variable.path.rpartition("bias")
        kernel = variables_by_path.get(head + "kernel" + tail)
        if kernel is None:
            raise ValueError(f"{variable.path}: no kernel {head + 'kernel' + tail} "
                             "gives its fan-in")
    return 1.0 / float(kernel.shape[0]) ** 0.5


def torch_linear_init(model, patterns, seed=None):
    """Draws every weight of ``model`` whose path matches one of ``patterns`` (shell
    patterns, ``fnmatch``) uniformly in ``±1/√in`` (:func:`torch_linear_bound`), as
    PyTorch's ``nn.Linear`` initialises its kernel and bias.

    Args:
        model: a built Keras model.
        patterns: e.g. ``("*_attention/*", "*/feed_forward/*/bias")``.
        seed: an int or ``keras.random.SeedGenerator`` (None: unseeded).

    Returns:
        The paths drawn anew, in the order of ``model.weights``.

    Raises:
        ValueError: a pattern that matches no weight, or a bias without its kernel.

    Example:
    >>> torch_linear_init(model, ["*_attention/*"], seed=0)[:2]
    ['encoder_0/self_attention/query_kernel', 'encoder_0/self_attention/query_bias']
    """
    by_path = {v.path: v for v in model.weights}
    unmatched = [p for p in patterns if not fnmatch.filter(by_path, p)]
    if unmatched:
        raise ValueError(f"No weight of {model.name} matches {unmatched}.")
    seed = keras.random.SeedGenerator(seed) if not isinstance(
        seed, keras.random.SeedGenerator) else seed
    drawn = []
    for variable in model.weights:
        if not any(fnmatch.fnmatchcase(variable.path, p) for p in patterns):
            continue
        bound = torch_linear_bound(variable, by_path)
        variable.assign(ops.cast(keras.random.uniform(
            variable.shape, -bound, bound, dtype="float32", seed=seed), variable.dtype))
        drawn.append(variable.path)
    return drawn
