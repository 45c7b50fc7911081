"""Checks the model families' tests share."""

import json
import zipfile

import keras
import numpy as np
import pytest

from tpr_keras import testing


@pytest.fixture
def keras_round_trip(tmp_path):
    """``check(model, inputs)``: saves ``model`` as ``.keras``, loads it, and asserts the
    same class, the same config and identical outputs on ``inputs``."""

    def check(model, inputs):
        expected = testing.numpy(model(inputs))
        path = tmp_path / "model.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        assert type(loaded) is type(model)
        assert loaded.get_config() == model.get_config()
        np.testing.assert_array_equal(testing.numpy(loaded(inputs)), expected)
        return loaded

    return check


@pytest.fixture
def saved_as_before(tmp_path):
    """``saved_as_before(model, edit) -> path``: ``model`` saved as ``.keras``, its
    ``config.json`` passed through ``edit(config)`` (in place), as an older version of the
    code would have written it; loading that file checks backward compatibility."""

    def save(model, edit):
        new, old = tmp_path / "new.keras", tmp_path / "old.keras"
        model.save(new)
        with zipfile.ZipFile(new) as src, zipfile.ZipFile(old, "w") as dst:
            for item in src.infolist():
                payload = src.read(item.filename)
                if item.filename == "config.json":
                    config = json.loads(payload)
                    edit(config)
                    payload = json.dumps(config).encode()
                dst.writestr(item, payload)
        return old

    return save
