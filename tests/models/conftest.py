"""Checks every bAbI model family's tests share."""

import keras
import numpy as np
import pytest


@pytest.fixture
def keras_round_trip(tmp_path):
    """``check(model, inputs)``: saves ``model`` as ``.keras``, loads it, and asserts the
    same class, the same config and identical outputs on ``inputs``."""

    def check(model, inputs):
        expected = model(inputs).numpy()
        path = tmp_path / "model.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        assert type(loaded) is type(model)
        assert loaded.get_config() == model.get_config()
        np.testing.assert_array_equal(loaded(inputs).numpy(), expected)
        return loaded

    return check
