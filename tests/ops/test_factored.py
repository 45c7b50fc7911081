"""The factored memory: exact reads from rank-1 factors, and the parallel solve equal to the
recurrence (eq. 4, 6-14) in values and gradients, on the backend Keras runs on."""

import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.ops import factored, tpr

E, R = 6, 4
ENT = np.linalg.qr(np.random.default_rng(0).normal(size=(E, E)))[0].astype("float32")
REL = np.linalg.qr(np.random.default_rng(1).normal(size=(R, R)))[0].astype("float32")


def story(*steps):
    """``[1, T, ·]`` arrays from per-step basis indices (e1, e2, r1, r2, r3)."""
    cols = list(zip(*steps))
    return [basis[list(idx)][None] for basis, idx in zip((ENT, ENT, REL, REL, REL), cols)]


def solve(operations, parts, keep=None, solver=factored.parallel_targets):
    e1, e2, r1, r2, r3 = parts
    if keep is None:
        keep = ops.ones(tuple(e1.shape[:2]))
    return solver(factored.operation_slots(operations, e1, e2, r1, r2, r3), keep)


def read(factors, e, r):
    return testing.numpy(factored.read(factors, ENT[[e]], REL[[r]]))


@pytest.mark.parametrize("solver", [factored.parallel_targets, factored.recurrent_targets])
def test_write_replaces_then_move_keeps_old_target(solver):
    # Step 1: write (e0, r0) -> e2. Step 2: write (e0, r0) -> e3 and move the old
    # target e2 under (e0, r1) (eq. 9-12). Backlink binds (e2, r2) -> e0 (eq. 13-14).
    parts = story((0, 2, 0, 1, 2), (0, 3, 0, 1, 3))
    factors = solve("all", parts, solver=solver)
    np.testing.assert_allclose(read(factors, 0, 0), ENT[[3]], atol=1e-5)
    np.testing.assert_allclose(read(factors, 0, 1), ENT[[2]], atol=1e-5)
    np.testing.assert_allclose(read(factors, 3, 3), ENT[[0]], atol=1e-5)
    # F is exactly the dense memory of the per-equation ops.
    dense = np.zeros((1, E, R, E), "float32")
    e1, e2, r1, r2, r3 = parts
    for t in range(2):
        w, w_hat = tpr.write(dense, e1[:, t], r1[:, t], e2[:, t])
        m, _ = tpr.move(dense, e1[:, t], r2[:, t], w_hat)
        b, _ = tpr.backlink(dense, e1[:, t], e2[:, t], r3[:, t])
        dense = dense + w + m + b
    np.testing.assert_allclose(testing.numpy(factored.to_dense(factors)), testing.numpy(dense),
                               atol=1e-5)


def test_padded_step_changes_nothing():
    parts = story((0, 2, 0, 1, 2), (0, 3, 0, 1, 3))
    factors = solve("all", parts, keep=np.array([[1.0, 0.0]], "float32"))
    np.testing.assert_allclose(read(factors, 0, 0), ENT[[2]], atol=1e-5)
    np.testing.assert_allclose(read(factors, 0, 1), np.zeros((1, E)), atol=1e-5)


def test_read_equals_unbind3_of_dense():
    rng = np.random.default_rng(2)
    factors = tuple(rng.normal(size=(3, 7, d)).astype("float32") for d in (E, R, E))
    e = rng.normal(size=(3, E)).astype("float32")
    r = rng.normal(size=(3, R)).astype("float32")
    np.testing.assert_allclose(
        testing.numpy(factored.read(factors, e, r)),
        testing.numpy(tpr.unbind3(factored.to_dense(factors), e, r)),
        rtol=1e-5,
        atol=1e-5,
    )


def random_parts(seed, batch=3, steps=9, entity=E, relation=R, scale=0.45):
    rng = np.random.default_rng(seed)
    shapes = (entity, entity, relation, relation, relation)
    return [np.tanh(rng.normal(size=(batch, steps, d)) * scale).astype("float32") for d in shapes]


def on_the_backend(fn):
    """``fn`` as the backend runs it fastest here: one ``jax.jit`` program on JAX (op by op,
    JAX compiles one XLA program per op and shape: three times the time for these solves
    and their gradients), eagerly on TensorFlow (which compiles nothing per op)."""
    return testing.compiled(fn) if testing.backend() == "jax" else fn


def relative_error(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-12)


@pytest.mark.parametrize("operations", list(factored.OPERATIONS))
@pytest.mark.parametrize("entity,relation", [(6, 4), (15, 10), (40, 20), (90, 20)])
def test_parallel_equals_recurrent_values_and_gradients(operations, entity, relation):
    parts = random_parts(3, entity=entity, relation=relation, scale=1.6 / np.sqrt(entity))
    keep = np.ones((3, 9), "float32")
    keep[1, 6:] = 0  # padded sentences
    keep[2, 3:] = 0
    probe = np.random.default_rng(4).normal(size=(3, entity, relation, entity)).astype("float32")
    results = []
    for solver in (factored.parallel_targets, factored.recurrent_targets):
        def loss(*parts):
            return ops.sum(factored.to_dense(solve(operations, parts, keep, solver)) * probe)

        def memory_and_gradients(*parts):
            _, _, grads = testing.value_and_gradients(loss, inputs=parts)
            return factored.to_dense(solve(operations, parts, keep, solver)), grads

        dense, grads = on_the_backend(memory_and_gradients)(*parts)
        results.append((testing.numpy(dense), [testing.numpy(g) for g in grads]))
    (dense_p, grads_p), (dense_r, grads_r) = results
    assert np.abs(dense_r).max() > 0.1  # a non-trivial memory
    assert relative_error(dense_p, dense_r) < 1e-4
    unused = {part for part, op in (("r2", "move"), ("r3", "backlink"))
              if op not in factored.OPERATIONS[operations]}
    for name, gp, gr in zip(("e1", "e2", "r1", "r2", "r3"), grads_p, grads_r):
        if name in unused:  # r2 / r3 unused by this operation set: gradients exactly zero
            assert not np.any(gp) and not np.any(gr), name
            continue
        assert np.abs(gr).max() > 0, name
        assert relative_error(gp, gr) < 1e-4, name


def test_unknown_operations_rejected():
    with pytest.raises(ValueError, match="operations must be one of"):
        factored.operation_slots("write+teleport", *story((0, 1, 0, 1, 2)))


@pytest.mark.parametrize("solver", [factored.parallel_targets, factored.recurrent_targets])
def test_empty_story_gives_an_empty_memory(solver):
    parts = [np.zeros((2, 0, d), "float32") for d in (E, E, R, R, R)]
    factors = solve("all", parts, keep=np.zeros((2, 0), "float32"), solver=solver)
    assert [tuple(f.shape) for f in factors] == [(2, 0, E), (2, 0, R), (2, 0, E)]
    np.testing.assert_array_equal(read(factors, 0, 0), np.zeros((2, E)))


@pytest.mark.parametrize("steps,steps_per_chunk", [(7, 3), (16, 8), (1, 8)])
def test_chunked_solve_equals_the_triangular_solve_values_and_gradients(steps,
                                                                         steps_per_chunk):
    """The JAX path's solve (matmuls, custom gradient) against ``keras.ops.solve_triangular``
    differentiated by the backend; called directly, so it runs on TensorFlow too."""
    slots, batch, width = 3, 2, 5
    n = steps * slots
    rng = np.random.default_rng(steps)
    step = np.arange(n) // slots
    mask = (step[:, None] > step[None, :]).astype("float32")
    a = rng.normal(size=(batch, n, n)).astype("float32") * 0.3 * mask
    c = rng.normal(size=(batch, n, width)).astype("float32")
    weights = rng.normal(size=(batch, n, width)).astype("float32")

    def run(solve, compile_on_jax):
        def solution_and_gradients(a, c):
            _, _, grads = testing.value_and_gradients(
                lambda a, c: ops.sum(solve(a, c) * weights), inputs=[a, c])
            return solve(a, c), grads

        if compile_on_jax:
            solution_and_gradients = on_the_backend(solution_and_gradients)
        x, (grad_a, grad_c) = solution_and_gradients(a, c)
        return testing.numpy(x), testing.numpy(grad_a) * mask, testing.numpy(grad_c)

    # The reference stays op by op: jaxlib's batched LAPACK triangular solve deadlocked in
    # a jit-compiled gradient on 2 cores (tpr_keras.ops.factored.chunked_unit_lower_solve).
    want = run(lambda a, c: ops.solve_triangular(ops.eye(n) - a, c, lower=True), False)
    got = run(lambda a, c: factored.chunked_unit_lower_solve(a, c, slots, steps_per_chunk),
              True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
