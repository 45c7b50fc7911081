"""The order-3 TPR memory kept as rank-1 factors, updated in parallel over time.

Paper: Schlag & Schmidhuber, "Learning to Reason with Third-Order Tensor
Products" (NeurIPS 2018), §4, eq. 4 and 6-14 (update) and 17-19 (reads).

Every update of eq. 10, 12 and 14 adds rank-1 terms ``source (x) relation (x)
new`` to ``F``, so after ``T`` sentences with ``K`` enabled operations

    F_T = Σ_j s_j (x) r_j (x) n_j            (j over the T·K slots)

and every read of eq. 9, 11, 13 and 17-19 can be computed from these factors
without ever building the ``[entity, relation, entity]`` tensor:

    (F •34 e) •23 r = Σ_j (e · s_j) (r · r_j) n_j.

A *slot* is one operation of one step: the (source, relation) pair it reads
and writes, and how its new target ``n`` follows from the step's reads of
``F_{t-1}``:

* write (eq. 9-10):     slot (e1, r1), ``n = e2 - ŵ``;
* move (eq. 11-12):     slot (e1, r2), ``n = ŵ - m̂``;
* backlink (eq. 13-14): slot (e2, r3), ``n = e1 - b̂``.

Each read of step ``t`` is linear in the ``n_j`` of earlier steps, so all
targets of a story satisfy ``n = c + A n`` with ``A`` strictly
block-lower-triangular (``[T·K, T·K]`` per story):

    A[(t,k), (j,l)] = Σ_k' P[k, k'] (s_tk' · s_jl)(r_tk' · r_jl)   for j < t,

where ``P`` holds the read coefficients above (``-1`` for a slot's own read,
``+1`` for the move's use of ``ŵ``) and ``c`` the constant parts (``e2``,
``0``, ``e1``). One unit-lower-triangular solve ``(I - A) n = c`` replaces the
recurrence over sentences: :func:`parallel_targets`. This is the structure of
the parallel form of the delta rule in the fast-weight / linear-Transformer
literature. :func:`recurrent_targets` is the same update as an explicit
recurrence over the dense ``F``: the reference the parallel form is tested
against, and the faster choice where ``F`` is small and stories are long.

Padded sentences are handled by zeroing their sources: a zero source adds
nothing to ``F`` and contributes nothing to any read.
"""

import collections
import math

import keras
from keras import ops

from tpr_keras.ops import tpr

# The operation sets of Table 3, in slot order.
OPERATIONS = {
    "write": ("write",),
    "write+move": ("write", "move"),
    "write+backlink": ("write", "backlink"),
    "all": ("write", "move", "backlink"),
}

Slot = collections.namedtuple("Slot", ["name", "source", "relation", "constant", "reads"])
Slot.__doc__ = """One memory operation of a step, in the form the solvers use.

Fields:
    name: ``"write"``, ``"move"`` or ``"backlink"``.
    source: the entity whose slot is read and written ``[batch, T, entity]``.
    relation: the relation of the slot ``[batch, T, relation]``.
    constant: the part of the new target that is no read ``[batch, T, entity]``,
        or ``None`` for zero.
    reads: ``((slot_name, coefficient), ...)``: the new target is
        ``constant + Σ coefficient * read(slot_name)``, every read taken from
        ``F_{t-1}``.
"""


def write(e1, r1, e2):
    """The write of eq. 9-10 as a slot: reads ``ŵ`` at (e1, r1), stores ``e2 - ŵ``."""
    return Slot("write", e1, r1, e2, (("write", -1.0),))


def move(e1, r2):
    """The move of eq. 11-12 as a slot: stores ``ŵ - m̂`` at (e1, r2).

    ``ŵ`` is the write's read of the same step, ``m̂`` the read at (e1, r2).
    """
    return Slot("move", e1, r2, None, (("write", 1.0), ("move", -1.0)))


def backlink(e1, e2, r3):
    """The backlink of eq. 13-14 as a slot: reads ``b̂`` at (e2, r3), stores ``e1 - b̂``."""
    return Slot("backlink", e2, r3, e1, (("backlink", -1.0),))


def operation_slots(operations, e1, e2, r1, r2=None, r3=None):
    """The slots of an operation set (Table 3), in the order of ``OPERATIONS``.

    Args:
        operations: ``"write"``, ``"write+move"``, ``"write+backlink"`` or ``"all"``.
        e1, e2: ``[batch, T, entity]`` (eq. 7).
        r1, r2, r3: ``[batch, T, relation]`` (eq. 8); ``r2``/``r3`` only where
            the move/backlink is enabled.

    Returns:
        A list of :class:`Slot`.
    """
    if operations not in OPERATIONS:
        raise ValueError(
            f"operations must be one of {tuple(OPERATIONS)}; got {operations!r}."
        )
    build = {
        "write": lambda: write(e1, r1, e2),
        "move": lambda: move(e1, r2),
        "backlink": lambda: backlink(e1, e2, r3),
    }
    return [build[name]() for name in OPERATIONS[operations]]


def _read_coefficients(slots):
    """``P`` as a nested Python list: ``P[k][l]`` = coefficient of slot l's read in slot k."""
    index = {slot.name: k for k, slot in enumerate(slots)}
    matrix = [[0.0] * len(slots) for _ in slots]
    for k, slot in enumerate(slots):
        for name, coefficient in slot.reads:
            matrix[k][index[name]] += coefficient
    return matrix


def _stack_slots(slots, keep):
    """Sources (zeroed where ``keep`` is 0), relations and constants ``[B, T, K, ·]``."""
    keep = ops.expand_dims(ops.cast(keep, slots[0].source.dtype), -1)
    sources = ops.stack([slot.source * keep for slot in slots], axis=2)
    relations = ops.stack([slot.relation for slot in slots], axis=2)
    constants = ops.stack(
        [ops.zeros_like(s.source) if s.constant is None else s.constant for s in slots],
        axis=2,
    )
    return sources, relations, constants


def _flatten_time_slots(tensor):
    """``[B, T, K, D]`` -> ``[B, T·K, D]`` (slot index ``t·K + k``)."""
    shape = ops.shape(tensor)
    return ops.reshape(tensor, (shape[0], shape[1] * shape[2], tensor.shape[-1]))


def _transpose(matrices):
    """Swaps the last two axes of a batch of matrices."""
    return ops.swapaxes(matrices, -1, -2)


def parallel_targets(slots, keep):
    """All new targets of a story with one triangular solve (no loop over time).

    Schlag & Schmidhuber (2018), eq. 4 and 6-14: solves ``(I - A) n = c``
    (module docstring) for the slots of every step, with
    ``keras.ops.solve_triangular`` (TensorFlow: ``tf.linalg.triangular_solve``;
    on JAX :func:`chunked_unit_lower_solve`, the same solve in matmuls).

    Args:
        slots: from :func:`operation_slots`, tensors ``[batch, T, ·]``.
        keep: ``[batch, T]``, 1 for real sentences and 0 for padding.

    Returns:
        Factors ``(sources, relations, targets)``, each ``[batch, T·K, ·]``,
        with ``F_T = Σ_j sources_j (x) relations_j (x) targets_j``.

    Example:
    >>> entity, relation = np.eye(4, dtype="float32"), np.eye(3, dtype="float32")
    >>> e1, e2, r1 = entity[[[0, 0]]], entity[[[2, 3]]], relation[[[0, 0]]]
    >>> factors = parallel_targets([write(e1, r1, e2)], np.ones((1, 2), "float32"))
    >>> ops.convert_to_numpy(read(factors, e1[:, 0], r1[:, 0]))  # the 2nd write won
    array([[0., 0., 0., 1.]], dtype=float32)
    """
    sources, relations, constants = _stack_slots(slots, keep)
    num_slots = len(slots)
    flat_sources = _flatten_time_slots(sources)
    flat_relations = _flatten_time_slots(relations)
    # Gram of every slot with every other: (s_i · s_j)(r_i · r_j), eq. 9/11/13.
    gram = ops.matmul(flat_sources, _transpose(flat_sources)) * ops.matmul(
        flat_relations, _transpose(flat_relations)
    )
    # Only earlier steps are visible: all reads of step t use F_{t-1}.
    size = ops.shape(gram)[-1]
    step = ops.arange(size) // num_slots
    earlier = ops.cast(ops.expand_dims(step, 1) > ops.expand_dims(step, 0), gram.dtype)
    gram = gram * earlier
    # Rows of A: each slot's target combines the reads of its step (matrix P).
    coefficients = _read_coefficients(slots)
    shape = ops.shape(sources)
    by_slot = ops.reshape(gram, (shape[0], shape[1], num_slots, size))
    rows = []
    for k in range(num_slots):
        row = None
        for l, coefficient in enumerate(coefficients[k]):
            if coefficient == 0.0:
                continue
            term = by_slot[:, :, l] * coefficient if coefficient != 1.0 else by_slot[:, :, l]
            row = term if row is None else row + term
        rows.append(row)
    a = ops.reshape(ops.stack(rows, axis=2), (shape[0], size, size))
    constants = _flatten_time_slots(constants)
    if keras.backend.backend() == "jax" and isinstance(size, int):
        targets = chunked_unit_lower_solve(a, constants, num_slots)
    else:
        system = ops.eye(size, dtype=a.dtype) - a
        targets = ops.solve_triangular(system, constants, lower=True)
    return flat_sources, flat_relations, targets


#: Steps per chunk of :func:`chunked_unit_lower_solve` (measured best of 4, 8 and 16).
STEPS_PER_CHUNK = 8


def _chunked_forward(a, c, num_slots, steps_per_chunk):
    """``x`` with ``(I - a) x = c`` by forward substitution over chunks of steps."""
    n = a.shape[-1]
    rows = steps_per_chunk * num_slots
    solved = []
    for start in range(0, n, rows):
        end = min(start + rows, n)
        x = c[:, start:end]
        if solved:  # what the earlier chunks contribute
            x = x + ops.matmul(a[:, start:end, :start], ops.concatenate(solved, axis=1))
        # Within the chunk (I - N)^-1 = (I + N)(I + N^2)(I + N^4)..., N nilpotent.
        power = a[:, start:end, start:end]
        for _ in range(math.ceil(math.log2(max(-(-(end - start) // num_slots), 2)))):
            x = x + ops.matmul(power, x)
            power = ops.matmul(power, power)
        solved.append(x)
    return ops.concatenate(solved, axis=1)


def _reversed_transpose(a):
    """``J aᵀ J`` (``J`` reverses the order): strictly lower again for a strictly lower
    ``a``, so a transposed system is solved by the same forward substitution."""
    return ops.flip(ops.flip(ops.transpose(a, (0, 2, 1)), axis=1), axis=2)


def chunked_unit_lower_solve(a, c, num_slots, steps_per_chunk=STEPS_PER_CHUNK):
    """``x`` with ``(I - a) x = c``, ``a`` strictly block lower triangular, in matmuls.

    The system of :func:`parallel_targets`: ``a`` is ``[batch, T·K, T·K]`` and zero on
    and above its ``K x K`` diagonal blocks (a step reads only earlier steps), so
    ``a`` restricted to ``s`` steps is nilpotent, ``(I - a)^-1 = Π_k (I + a^(2^k))``
    over ``2^k < s``. The steps go in chunks of ``steps_per_chunk``: each chunk adds
    what the earlier chunks give (one matmul) and applies that product to itself
    (``log2`` small matmuls); the gradient (``keras.ops.custom_gradient``) solves the
    transposed system the same way, ``ā = (y xᵀ)`` on the lower blocks.

    This is the JAX path. At the all-tasks size (batch 32, 210 rows, 40 columns) on the
    2-core CPU it took 3.2 ms forward and 8.1 ms for the gradient, where
    ``solve_triangular`` lowered to XLA's TriangularSolve took 16.8 and 24.2 ms; jaxlib's
    own lowering, a batched LAPACK call, deadlocked in the jit-compiled gradient (the
    forward and backward solves each waiting on one of the two pool threads). It agrees
    with ``keras.ops.solve_triangular`` to 2e-6, and so do its gradients (tested).

    Args:
        a: ``[batch, n, n]``, zero on and above the diagonal blocks; ``n`` static.
        c: ``[batch, n, d]``.
        num_slots: ``K``, the block size.
        steps_per_chunk: steps (blocks) per chunk.
    """
    n = a.shape[-1]
    if n == 0:  # an empty story: nothing to solve
        return c
    step = ops.arange(n) // num_slots
    lower = ops.cast(ops.expand_dims(step, 1) > ops.expand_dims(step, 0), a.dtype)

    @ops.custom_gradient
    def solve(a, c):
        x = _chunked_forward(a, c, num_slots, steps_per_chunk)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            # (I - a)ᵀ y = upstream, solved reversed: J (I - a)ᵀ J is unit lower.
            y = ops.flip(_chunked_forward(_reversed_transpose(a), ops.flip(upstream, axis=1),
                                          num_slots, steps_per_chunk), axis=1)
            return ops.matmul(y, ops.transpose(x, (0, 2, 1))) * lower, y

        return x, grad

    return solve(a, c)


def recurrent_targets(slots, keep):
    """The same targets as :func:`parallel_targets`, by the recurrence over ``F``.

    Schlag & Schmidhuber (2018), eq. 4 and 6: ``F_t = F_{t-1} + W_t + M_t + B_t`` as one
    ``keras.ops.scan`` over the sentences, each step running the dense operations of
    :mod:`tpr_keras.ops.tpr` on ``F_{t-1}``: :func:`~tpr_keras.ops.tpr.write` (eq. 9-10),
    :func:`~tpr_keras.ops.tpr.move` (eq. 11-12) and :func:`~tpr_keras.ops.tpr.backlink`
    (eq. 13-14), each returning its update and its read. A slot's target is what its
    update binds: ``e2 - ŵ``, ``ŵ - m̂``, ``e1 - b̂``. This is the dense reference the
    parallel form is tested against (values and gradients).

    Args / Returns: as :func:`parallel_targets`.

    Example:
    >>> e = np.eye(4, dtype="float32")[[[0, 1]]]
    >>> r = np.eye(3, dtype="float32")[[[0, 1]]]
    >>> slots = operation_slots("write", e, e, r)
    >>> [tuple(f.shape) for f in recurrent_targets(slots, np.ones((1, 2), "float32"))]
    [(1, 2, 4), (1, 2, 3), (1, 2, 4)]
    """
    sources, relations, constants = _stack_slots(slots, keep)
    names = [slot.name for slot in slots]
    if names[0] != "write":
        raise ValueError(f"The first slot must be the write; got {names}.")
    entity = sources.shape[-1]
    relation_dim = relations.shape[-1]
    # One time-major tensor [T, B, K, E + R + E]: Keras' TensorFlow scan cannot scan
    # several inputs over an unknown number of steps.
    time_major = ops.transpose(ops.concatenate([sources, relations, constants], -1),
                               (1, 0, 2, 3))
    batch = ops.shape(sources)[0]
    memory = ops.zeros((batch, entity, relation_dim, entity), dtype=sources.dtype)

    def step(carry, inputs):
        memory, _ = carry
        # Per slot: its (masked) source, relation and constant, [B, ·] each.
        slot = {name: (inputs[:, k, :entity], inputs[:, k, entity:entity + relation_dim],
                       inputs[:, k, entity + relation_dim:]) for k, name in enumerate(names)}
        e1, r1, e2 = slot["write"]
        update, w_hat = tpr.write(memory, e1, r1, e2)
        targets = [e2 - w_hat]
        if "move" in slot:
            moved, m_hat = tpr.move(memory, e1, slot["move"][1], w_hat)
            update, targets = update + moved, targets + [w_hat - m_hat]
        if "backlink" in slot:
            source, r3, first = slot["backlink"]  # the backlink's slot is (e2, r3), its
            linked, b_hat = tpr.backlink(memory, first, source, r3)  # constant e1
            update, targets = update + linked, targets + [first - b_hat]
        carry = (memory + update, ops.stack(targets, axis=1))
        # Keras' TensorFlow scan wants the per-step outputs shaped like the carry
        # (as tf.scan, which this replaces, emitted its whole accumulator).
        return carry, carry

    initial = (memory, ops.zeros((batch, len(slots), entity), dtype=sources.dtype))
    _, (_, targets) = ops.scan(step, initial, time_major)
    targets = ops.transpose(targets, (1, 0, 2, 3))
    return (
        _flatten_time_slots(sources),
        _flatten_time_slots(relations),
        _flatten_time_slots(targets),
    )


def read(factors, entity, relation):
    """``(F •34 e) •23 r`` from the factors of ``F``: ``Σ_j (e·s_j)(r·r_j) n_j``.

    Schlag & Schmidhuber (2018): the read of eq. 9, 11, 13 and 17-19 without
    building ``F``.

    Args:
        factors: ``(sources [B, M, E], relations [B, M, R], targets [B, M, E])``.
        entity: ``[batch, entity]``.
        relation: ``[batch, relation]``.

    Returns:
        ``[batch, entity]``.

    Example:
    >>> eye = np.eye(3, dtype="float32")[None]  # three terms s_j (x) r_j (x) n_j
    >>> ops.convert_to_numpy(read((eye, eye, eye[:, ::-1]), eye[:, 0], eye[:, 0]))
    array([[0., 0., 1.]], dtype=float32)
    """
    sources, relations, targets = factors
    weights = _matvec(sources, entity) * _matvec(relations, relation)
    return _matvec(_transpose(targets), weights)


def _matvec(matrices, vectors):
    """``[B, M, N] x [B, N] -> [B, M]`` as one batched matmul (``tf.linalg.matvec``'s form)."""
    return ops.squeeze(ops.matmul(matrices, ops.expand_dims(vectors, -1)), -1)


def to_dense(factors):
    """``F = Σ_j s_j (x) r_j (x) n_j`` as a ``[batch, entity, relation, entity]`` tensor.

    Schlag & Schmidhuber (2018), eq. 4 and 6 summed over all steps.

    Example:
    >>> s, r = np.ones((1, 2, 3), "float32"), np.ones((1, 2, 4), "float32")
    >>> tuple(to_dense((s, r, s)).shape)
    (1, 3, 4, 3)
    """
    sources, relations, targets = factors
    return ops.einsum("bms,bmr,bmt->bsrt", sources, relations, targets)
