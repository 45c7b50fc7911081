"""Tests of TPRUCell against a NumPy transcription of eqs. 2-7 of Tang et al. (2018)."""

import keras
import numpy as np
import pytest

from tpr_keras import testing
from tests.layers.masking import IDS, masked_model, tolerance, unpadded
from tpr_keras.layers.tpru_cell import TPRUCell

D, D_IN, N = 6, 5, 4


@pytest.fixture(autouse=True)
def _deterministic_init():
    keras.utils.set_random_seed(1234)


def _built_cell(units=D, input_dim=D_IN, num_roles=N, seed=3):
    keras.utils.set_random_seed(seed)  # deterministic kernels too
    cell = TPRUCell(units, num_roles=num_roles, seed=seed)
    cell.build((None, input_dim))
    return cell


def _np_weights(cell):
    return {
        "Wx": testing.numpy(cell.input_gate_kernel),  # (d', d) = W_x^T
        "Wb": testing.numpy(cell.recurrent_gate_kernel),  # (d, d) = W_b^T
        "W": testing.numpy(cell.input_kernel),  # (d', d) = W^T
        "Wu": testing.numpy(cell.unbinding_kernel),
        "Wr": testing.numpy(cell.binding_kernel),
        "bb": float(testing.numpy(cell.binding_bias)),
        "bx": float(testing.numpy(cell.input_bias)),
        "V": testing.numpy(cell.role_basis),
    }


def _np_roles(w, x, b):
    """Eqs. 4-6 for one example, written with column vectors as in the paper."""
    U = w["Wu"] @ w["V"]
    f_b = U.T @ b  # eq. 4
    f_x = U.T @ (w["W"].T @ x)
    fb = np.maximum(f_b + w["bb"], 0)  # eq. 5
    fx = np.maximum(f_x + w["bx"], 0)
    e = (fb + fx) ** 2  # eq. 6
    return e / e.sum()


def _np_step(w, x, b):
    f = _np_roles(w, x, b)
    R = w["Wr"] @ w["V"]
    b_tilde = R @ f  # eq. 7
    g = 1 / (1 + np.exp(-(w["Wb"].T @ b + w["Wx"].T @ x)))  # eq. 3
    return g * np.tanh(b_tilde) + (1 - g) * b  # eq. 2


def test_parameter_count_is_3d2_plus_2dd_plus_2_and_basis_is_fixed():
    cell = _built_cell()
    trainable = sorted(tuple(v.shape) for v in cell.trainable_weights)
    assert trainable == sorted(
        [(), (), (D, D), (D, D), (D, D), (D_IN, D), (D_IN, D)]
    )
    n_trainable = sum(int(np.prod(v.shape)) for v in cell.trainable_weights)
    assert n_trainable == 3 * D**2 + 2 * D * D_IN + 2
    assert [v.name for v in cell.non_trainable_weights] == ["role_basis"]
    assert tuple(cell.role_basis.shape) == (D, N)
    assert not cell.role_basis.trainable

    # Inside a model: count_params = trainable + d*N, V untouched by training.
    model = keras.Sequential(
        [keras.Input((3, D_IN)), keras.layers.RNN(TPRUCell(D, num_roles=N, seed=1)),
         keras.layers.Dense(1)]
    )
    assert model.count_params() == (3 * D**2 + 2 * D * D_IN + 2) + D * N + (D + 1)
    rnn_cell = model.layers[0].cell
    v0 = testing.numpy(rnn_cell.role_basis).copy()
    k0 = testing.numpy(rnn_cell.unbinding_kernel).copy()
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(8, 3, D_IN)), rng.normal(size=(8, 1)),
              epochs=2, verbose=0)
    np.testing.assert_array_equal(testing.numpy(rnn_cell.role_basis), v0)
    assert not np.allclose(testing.numpy(rnn_cell.unbinding_kernel), k0)


def test_basis_is_seeded_standard_normal():
    a = testing.numpy(_built_cell(units=64, num_roles=64, seed=11).role_basis)
    b = testing.numpy(_built_cell(units=64, num_roles=64, seed=11).role_basis)
    c = testing.numpy(_built_cell(units=64, num_roles=64, seed=12).role_basis)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1.0) < 0.05


def test_role_distribution_matches_eqs_4_to_6_and_sums_to_one():
    cell = _built_cell()
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, D_IN)).astype("float32")
    b = np.tanh(rng.normal(size=(7, D))).astype("float32")
    f = testing.numpy(cell.role_distribution(x, [b]))
    assert f.shape == (7, N)
    np.testing.assert_allclose(f.sum(axis=-1), 1.0, rtol=1e-5)
    assert (f >= 0).all()
    w = _np_weights(cell)
    for i in range(7):
        np.testing.assert_allclose(f[i], _np_roles(w, x[i], b[i]), rtol=1e-4, atol=1e-6)


def test_step_matches_eqs_2_to_7():
    cell = _built_cell()
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, D_IN)).astype("float32")
    b = np.tanh(rng.normal(size=(3, D))).astype("float32")
    out, states = cell(x, [b])
    out = testing.numpy(out)
    np.testing.assert_array_equal(out, testing.numpy(states[0]))
    w = _np_weights(cell)
    for i in range(3):
        np.testing.assert_allclose(out[i], _np_step(w, x[i], b[i]), rtol=1e-4, atol=1e-6)


def test_gate_one_gives_tanh_of_binding():
    cell = _built_cell()
    # W_b = 0 and W_x x = 100 for x = 1: g = sigmoid(100) == 1 in float32.
    cell.recurrent_gate_kernel.assign(np.zeros((D, D), "float32"))
    cell.input_gate_kernel.assign(np.full((D_IN, D), 100.0 / D_IN, "float32"))
    x = np.ones((2, D_IN), "float32")
    b = np.tanh(np.random.default_rng(3).normal(size=(2, D))).astype("float32")
    out = testing.numpy(cell(x, [b])[0])
    f = testing.numpy(cell.role_distribution(x, b))
    R = testing.numpy(cell.binding_kernel) @ testing.numpy(cell.role_basis)
    np.testing.assert_allclose(out, np.tanh(f @ R.T), rtol=1e-5, atol=1e-6)
    assert not np.allclose(out, b)


def test_degenerate_roles_give_zero_not_nan():
    cell = _built_cell()
    cell.binding_bias.assign(-1e6)
    cell.input_bias.assign(-1e6)
    x = np.ones((2, D_IN), "float32")
    b = np.zeros((2, D), "float32")
    f = testing.numpy(cell.role_distribution(x, b))
    np.testing.assert_array_equal(f, 0.0)
    assert np.isfinite(testing.numpy(cell(x, [b])[0])).all()


def _sequences(rng, lengths, max_len):
    x = rng.normal(size=(len(lengths), max_len, D_IN)).astype("float32")
    mask = np.arange(max_len)[None, :] < np.array(lengths)[:, None]
    return np.where(mask[..., None], x, 0.0).astype("float32"), mask


def test_masking_keeps_state_across_padded_steps():
    rng = np.random.default_rng(4)
    x, mask = _sequences(rng, [2, 5, 3], 5)
    # A masked step in the middle too.
    mask[1, 2] = False
    rnn = keras.layers.RNN(TPRUCell(D, num_roles=N, seed=0), return_sequences=True)
    seq = testing.numpy(rnn(x, mask=mask))
    for i in range(3):
        for t in range(1, 5):
            if not mask[i, t]:
                np.testing.assert_array_equal(seq[i, t], seq[i, t - 1])
    # Same final state as running the unpadded prefix alone.
    last = keras.layers.RNN(rnn.cell)
    for i, n in enumerate([2, 5, 3]):
        if i == 1:
            continue
        ref = testing.numpy(last(x[i : i + 1, :n]))
        np.testing.assert_allclose(seq[i, -1], ref[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            testing.numpy(last(x[i : i + 1], mask=mask[i : i + 1]))[0],
            ref[0], rtol=1e-5, atol=1e-6,
        )


def test_bidirectional_with_mask_matches_unpadded():
    rng = np.random.default_rng(5)
    x, mask = _sequences(rng, [3, 5], 5)
    bi = keras.layers.Bidirectional(
        keras.layers.RNN(TPRUCell(D, num_roles=N, seed=0))
    )
    padded = testing.numpy(bi(x, mask=mask))
    alone = testing.numpy(bi(x[:1, :3]))
    assert padded.shape == (2, 2 * D)
    np.testing.assert_allclose(padded[0], alone[0], rtol=1e-5, atol=1e-6)
    # Forward and backward directions are different computations.
    assert not np.allclose(padded[0, :D], padded[0, D:])


def test_config_round_trip():
    cell = TPRUCell(D, num_roles=N, seed=9, name="tpru")
    config = cell.get_config()
    assert config["units"] == D and config["num_roles"] == N and config["seed"] == 9
    clone = TPRUCell.from_config(config)
    assert clone.get_config() == config
    clone.build((None, D_IN))
    cell.build((None, D_IN))
    np.testing.assert_array_equal(testing.numpy(clone.role_basis), testing.numpy(cell.role_basis))
    # seed=None draws a concrete seed, stored in the config.
    assert isinstance(TPRUCell(D).get_config()["seed"], int)


def test_invalid_sizes_raise():
    with pytest.raises(ValueError):
        TPRUCell(0)
    with pytest.raises(ValueError):
        TPRUCell(4, num_roles=0)


def test_keras_file_round_trip_restores_basis_and_outputs(tmp_path):
    inputs = keras.Input((None, D_IN))
    outputs = keras.layers.RNN(
        TPRUCell(D, num_roles=N), return_sequences=True
    )(keras.layers.Masking()(inputs))
    model = keras.Model(inputs, outputs)
    cell = model.layers[-1].cell
    # Make V differ from what the configured seed would regenerate.
    cell.role_basis.assign(testing.numpy(cell.role_basis) * 2.0 + 1.0)
    x, _ = _sequences(np.random.default_rng(6), [4, 2], 4)
    expected = testing.numpy(model(x))
    path = tmp_path / "tpru.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    loaded_cell = loaded.layers[-1].cell
    assert isinstance(loaded_cell, TPRUCell)
    np.testing.assert_array_equal(testing.numpy(loaded_cell.role_basis),
                                  testing.numpy(cell.role_basis))
    assert not loaded_cell.role_basis.trainable
    np.testing.assert_array_equal(testing.numpy(loaded(x)), expected)


def test_an_rnn_of_the_cell_consumes_an_embedding_mask():
    model, warned = masked_model(keras.layers.RNN(TPRUCell(D, num_roles=N, seed=0)), pool=False)
    assert warned == []
    out = testing.numpy(model(IDS))
    for i, row in enumerate(unpadded(model)):
        np.testing.assert_allclose(out[i], row, rtol=0,
                                   atol=tolerance(*[4 + D] * 6, scale=max(1.0, np.abs(out).max())))
