"""The TPR algebra (eq. 1-3, 9-14) proved on orthonormal bases."""

import numpy as np
from keras import ops

from tpr_keras import testing
from tpr_keras.ops import tpr

E, R = 6, 4


def basis(n, seed):
    """An orthonormal basis of R^n (rows), random but fixed."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(n, n)))
    return q.astype("float32")


ENT = basis(E, 0)
REL = basis(R, 1)


def vec(rows):
    return np.stack(rows)


def zero_memory(batch=1):
    return np.zeros((batch, E, R, E), "float32")


def test_bind_unbind_order2_exact():  # eq. 1 and 3
    filler = ENT[:2, :R]
    tpr2 = tpr.bind(vec([ENT[0]]), vec([REL[1]])) + tpr.bind(vec([ENT[3]]), vec([REL[2]]))
    np.testing.assert_allclose(tpr.unbind(tpr2, vec([REL[1]])), [ENT[0]], atol=1e-6)
    np.testing.assert_allclose(tpr.unbind(tpr2, vec([REL[2]])), [ENT[3]], atol=1e-6)
    assert filler.shape == (2, R)


def test_inner_product_is_dot():  # eq. 2
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[4.0, -5.0, 6.0]])
    np.testing.assert_allclose(tpr.inner_product(a, b), [12.0])


def test_write_then_unbind_returns_target_exactly():
    e1, r1, e2 = vec([ENT[0]]), vec([REL[0]]), vec([ENT[2]])
    update, w_hat = tpr.write(zero_memory(), e1, r1, e2)
    np.testing.assert_allclose(w_hat, np.zeros((1, E)), atol=0)  # nothing stored yet
    memory = zero_memory() + update
    np.testing.assert_allclose(tpr.unbind3(memory, e1, r1), [ENT[2]], atol=1e-6)
    # Another (entity, relation) pair retrieves nothing.
    np.testing.assert_allclose(tpr.unbind3(memory, vec([ENT[1]]), r1), np.zeros((1, E)), atol=1e-6)
    np.testing.assert_allclose(tpr.unbind3(memory, e1, vec([REL[1]])), np.zeros((1, E)), atol=1e-6)


def test_second_write_replaces_rather_than_superimposes():
    e1, r1 = vec([ENT[0]]), vec([REL[0]])
    memory = zero_memory() + tpr.write(zero_memory(), e1, r1, vec([ENT[2]]))[0]
    update, w_hat = tpr.write(memory, e1, r1, vec([ENT[4]]))
    np.testing.assert_allclose(w_hat, [ENT[2]], atol=1e-6)  # old target found
    memory = memory + update
    np.testing.assert_allclose(tpr.unbind3(memory, e1, r1), [ENT[4]], atol=1e-6)
    # Exactly one association left: F equals the single binding.
    np.testing.assert_allclose(memory, tpr.bind3(e1, r1, vec([ENT[4]])), atol=1e-6)


def test_move_rebinds_old_target_under_r2():
    e1, r1, r2 = vec([ENT[0]]), vec([REL[0]]), vec([REL[1]])
    memory = zero_memory() + tpr.write(zero_memory(), e1, r1, vec([ENT[2]]))[0]
    write_update, w_hat = tpr.write(memory, e1, r1, vec([ENT[3]]))
    move_update, m_hat = tpr.move(memory, e1, r2, w_hat)
    np.testing.assert_allclose(m_hat, np.zeros((1, E)), atol=1e-6)
    memory = memory + write_update + move_update  # eq. 4, 6 (reads used F_{t-1})
    np.testing.assert_allclose(tpr.unbind3(memory, e1, r1), [ENT[3]], atol=1e-6)
    np.testing.assert_allclose(tpr.unbind3(memory, e1, r2), [ENT[2]], atol=1e-6)


def test_backlink_lets_target_retrieve_source():
    e1, r1, e2, r3 = vec([ENT[0]]), vec([REL[0]]), vec([ENT[2]]), vec([REL[3]])
    write_update, _ = tpr.write(zero_memory(), e1, r1, e2)
    back_update, b_hat = tpr.backlink(zero_memory(), e1, e2, r3)
    memory = zero_memory() + write_update + back_update
    np.testing.assert_allclose(b_hat, np.zeros((1, E)), atol=1e-6)
    np.testing.assert_allclose(tpr.unbind3(memory, e2, r3), [ENT[0]], atol=1e-6)
    np.testing.assert_allclose(tpr.unbind3(memory, e1, r1), [ENT[2]], atol=1e-6)


def test_unbind3_is_two_contractions_and_batched():
    rng = np.random.default_rng(3)
    memory = rng.normal(size=(3, E, R, E)).astype("float32")
    e = rng.normal(size=(3, E)).astype("float32")
    r = rng.normal(size=(3, R)).astype("float32")
    two_step = tpr.unbind(tpr.unbind_entity(memory, e), r)  # (F •34 e) •23 r
    expected = np.einsum("bsrt,bs,br->bt", memory, e, r)
    np.testing.assert_allclose(two_step, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tpr.unbind3(memory, e, r), expected, rtol=1e-5, atol=1e-5)


def test_gradients_finite():
    rng = np.random.default_rng(4)
    e1, e2 = (rng.normal(size=(2, E)).astype("float32") for _ in range(2))
    r1, r2, r3 = (rng.normal(size=(2, R)).astype("float32") for _ in range(3))

    def loss(e1, e2, r1, r2, r3):
        memory = zero_memory(2)
        for _ in range(3):
            w, w_hat = tpr.write(memory, e1, r1, e2)
            m, _ = tpr.move(memory, e1, r2, w_hat)
            b, _ = tpr.backlink(memory, e1, e2, r3)
            memory = memory + w + m + b
        return ops.sum(tpr.unbind3(memory, e1, r1) ** 2)

    _, _, grads = testing.value_and_gradients(loss, inputs=[e1, e2, r1, r2, r3])
    assert all(g is not None and np.all(np.isfinite(testing.numpy(g))) for g in grads)
