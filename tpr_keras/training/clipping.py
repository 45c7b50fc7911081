"""Per-matrix gradient clipping (MemN2N §4.2), in ``keras.ops`` (any backend).

Sukhbaatar et al. (2015), §4.2: "gradients with an ℓ2 norm larger than 40 are divided by a
scalar to have norm 40". The authors' MATLAB code applies this to each weight matrix on
its own (``Weight.update``), after the gradients of every use of a shared matrix have been
summed, with MATLAB's ``norm``: for a matrix the spectral norm (largest singular value),
for a vector the Euclidean norm. One matrix of theirs can be several variables here (an
embedding table's word rows and its temporal rows are one lookup table in their code):
``groups`` says which variables are clipped as one matrix (their rows stacked).
"""

from keras import ops

MATRIX_NORMS = ("frobenius", "spectral")


def matrix_norm(matrix, kind="frobenius"):
    """The norm of one gradient: ``"frobenius"`` (the square root of the sum of squares,
    Keras' ``clipnorm``) or ``"spectral"`` (the largest singular value, MATLAB's ``norm``
    of a matrix; a vector's is its Euclidean norm either way).

    Example:
    >>> float(matrix_norm(np.array([[3.0, 0.0], [0.0, 4.0]]), "spectral"))
    4.0
    """
    if kind not in MATRIX_NORMS:
        raise ValueError(f"kind must be one of {MATRIX_NORMS}; got {kind!r}.")
    matrix = ops.cast(matrix, "float32")
    if kind == "frobenius" or len(matrix.shape) < 2:
        return ops.sqrt(ops.sum(ops.square(matrix)))
    matrix = ops.reshape(matrix, (-1, matrix.shape[-1]))
    # The largest singular value: the square root of the largest eigenvalue of the
    # smaller Gram matrix (symmetric, so eigh), cheaper than a full SVD.
    gram = (ops.matmul(ops.transpose(matrix), matrix) if matrix.shape[0] >= matrix.shape[1]
            else ops.matmul(matrix, ops.transpose(matrix)))
    eigenvalues, _ = ops.eigh(gram)
    return ops.sqrt(ops.maximum(ops.max(eigenvalues), 0.0))


def clip_per_matrix(grads, max_norm, kind="frobenius", groups=None):
    """Each matrix's gradient divided by a scalar to have norm at most ``max_norm``.

    Args:
        grads: the gradients, one per trainable variable.
        max_norm: the largest norm a matrix's gradient keeps (§4.2: 40).
        kind: :func:`matrix_norm`'s ``kind``.
        groups: lists of indices into ``grads`` whose gradients form one matrix (stacked
            along their first axis, so they share their last dimension); every index
            not in a group is a matrix alone. None: every gradient alone.

    Returns:
        The clipped gradients, in the order of ``grads``.

    Example:
    >>> clipped = clip_per_matrix([np.full((2, 2), 30.0)], 40.0)
    >>> float(ops.sqrt(ops.sum(clipped[0] ** 2)))
    40.0
    """
    grads = list(grads)
    grouped = [list(g) for g in (groups or ())]
    seen = {i for group in grouped for i in group}
    grouped += [[i] for i in range(len(grads)) if i not in seen]
    for group in grouped:
        parts = [grads[i] for i in group]
        if len(parts) == 1:
            matrix = parts[0]
        else:
            matrix = ops.concatenate(
                [ops.reshape(p, (-1, p.shape[-1])) for p in parts], axis=0)
        norm = matrix_norm(matrix, kind)
        scale = max_norm / ops.maximum(norm, max_norm)
        for i in group:
            grads[i] = grads[i] * ops.cast(scale, grads[i].dtype)
    return grads


def variable_groups(variables, matrices):
    """``groups`` for :func:`clip_per_matrix`: the positions in ``variables`` of each list
    of variables in ``matrices`` (a model's ``weight_matrices()``), matched by path."""
    position = {v.path: i for i, v in enumerate(variables)}
    return [[position[v.path] for v in matrix if v.path in position]
            for matrix in matrices]
