"""float16 weight storage: half the bytes, exactly the rounded weights back, nothing stored
that was not rounded (and so not evaluated)."""

import json
import os

import numpy as np
import pytest

from tpr_keras.models import TPRRNN
from tpr_keras.presets import preset_files
from tpr_keras.presets.preset_files import PresetError, load_preset
from tpr_keras.presets.preset_writer import add_sections
from tpr_keras.presets.weight_storage import round_weights, rounded


def _model(seed=1):
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(size=w.shape).astype("float32") * 0.1
                       for w in model.get_weights()])
    return model


def _inputs():
    rng = np.random.default_rng(0)
    return {"story": rng.integers(0, 20, (3, 4, 6)).astype("int32"),
            "question": rng.integers(0, 20, (3, 6)).astype("int32")}


def test_float16_preset_is_half_the_bytes_and_loads_the_rounded_weights(tmp_path):
    model = _model()
    full = preset_files.save_preset(model, tmp_path / "full", metadata={"task": "babi"})
    before = [w.copy() for w in model.get_weights()]
    assert round_weights(model, "float16") == len(before)
    for old, new in zip(before, model.get_weights()):
        assert new.dtype == np.float32
        np.testing.assert_array_equal(new, old.astype(np.float16).astype(np.float32))
        assert not np.array_equal(new, old)
    half = preset_files.save_preset(model, tmp_path / "half", metadata={"task": "babi"},
                                    weights_dtype="float16")
    full_bytes = os.path.getsize(os.path.join(full, preset_files.WEIGHTS_FILE))
    half_bytes = os.path.getsize(os.path.join(half, preset_files.WEIGHTS_FILE))
    # two bytes fewer per weight (the file's layout around them is the same)
    assert full_bytes - half_bytes >= 2 * model.count_params(), (half_bytes, full_bytes)
    preset = load_preset(half)
    assert preset.metadata["weights_dtype"] == "float16"
    loaded = preset.build_model()
    for want, got in zip(model.get_weights(), loaded.get_weights()):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(loaded(_inputs()), model(_inputs()))
    # a section added later keeps the record of how the weights are stored
    add_sections(half, claims={"modules": {}})
    assert load_preset(half).metadata["weights_dtype"] == "float16"


def test_weights_not_rounded_are_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(ValueError, match="round the model's weights first"):
        preset_files.save_preset(_model(), tmp_path / "p", weights_dtype="float16")
    assert not os.path.exists(tmp_path / "p")
    assert os.listdir(tmp_path) == []


def test_a_weight_float16_cannot_hold_is_an_error_naming_it():
    model = _model()
    variable = model.weights[0]
    variable.assign(np.full(variable.shape, 7e4, "float32"))
    with pytest.raises(ValueError, match=f"{variable.path}.*does not fit float16"):
        round_weights(model, "float16")
    with pytest.raises(ValueError, match="weights_dtype must be one of"):
        rounded(np.zeros(2, "float32"), "int8")


def test_float32_is_keras_own_file_and_integers_are_left_alone():
    values = np.array([0.1, 1 / 3], "float32")
    assert rounded(values, "float32") is values
    ints = np.array([70000, 3], "int64")
    assert rounded(ints, "float16") is ints


def test_an_unknown_weights_dtype_is_a_preset_error(tmp_path):
    path = preset_files.save_preset(_model(), tmp_path / "p", metadata={"task": "babi"})
    meta_path = os.path.join(path, preset_files.METADATA_FILE)
    with open(meta_path) as f:
        meta = json.load(f)
    meta["weights_dtype"] = "int4"
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    with pytest.raises(PresetError, match="weights_dtype 'int4'"):
        load_preset(path)


def test_float16_file_is_the_compact_format_with_the_same_groups_and_arrays(tmp_path):
    import h5py

    model = _model()
    round_weights(model, "float16")
    path = os.path.join(preset_files.save_preset(model, tmp_path / "half",
                                                 weights_dtype="float16"),
                        preset_files.WEIGHTS_FILE)
    default = tmp_path / "default.h5"  # the same file written in HDF5's default format

    def copy(source, out):
        for key, value in source.attrs.items():
            out.attrs[key] = value
        for name, item in source.items():
            if isinstance(item, h5py.Group):
                copy(item, out.create_group(name))
            else:
                out.create_dataset(name, data=item[()])

    def contents(group, prefix=""):
        found = {prefix: dict(group.attrs)}
        for name, item in group.items():
            if isinstance(item, h5py.Group):
                found.update(contents(item, f"{prefix}/{name}"))
            else:
                found[f"{prefix}/{name}"] = item[()]
        return found

    with h5py.File(path, "r") as source, h5py.File(default, "w") as out:
        copy(source, out)
    groups = sum(1 for key, value in contents(h5py.File(path, "r")).items()
                 if isinstance(value, dict))
    # each group's symbol table (a B-tree node and a heap) is gone: over 500 bytes a group
    assert os.path.getsize(default) - os.path.getsize(path) > 500 * groups, groups
    with h5py.File(path, "r") as compact, h5py.File(default, "r") as plain:
        got, want = contents(compact), contents(plain)
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if isinstance(value, dict):
            assert {k: str(v) for k, v in got[key].items()} == {
                k: str(v) for k, v in value.items()}, key
        else:
            assert got[key].dtype == value.dtype
            np.testing.assert_array_equal(got[key], value, err_msg=key)
