"""float16 and int8 weight storage: half (a quarter) of the bytes, exactly the rounded
(quantised) weights back, nothing stored that was not rounded (and so not evaluated)."""

import json
import os

import numpy as np
import pytest

from tpr_keras.models import TPRRNN
from tpr_keras.presets import preset_files
from tpr_keras.presets.preset_files import PresetError, load_preset
from tpr_keras.presets.preset_writer import add_sections
from tpr_keras.presets.weight_storage import (
    SCALE_ATTRIBUTE,
    dequantized,
    exact_int8,
    keras_readable,
    quantized,
    round_weights,
    rounded,
)


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
        rounded(np.zeros(2, "float32"), "int4")


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


def _stored_arrays(path):
    import h5py

    found = {}

    def visit(name, item):  # returns None: visititems stops at the first other value
        if isinstance(item, h5py.Dataset):
            found[name] = item[()], dict(item.attrs)

    with h5py.File(os.path.join(path, preset_files.WEIGHTS_FILE), "r") as f:
        f.visititems(visit)
    return found


def test_int8_preset_stores_quantised_matrices_and_loads_them_exactly(tmp_path):
    model = _model()
    round_weights(model, "float16")
    half = preset_files.save_preset(model, tmp_path / "half", weights_dtype="float16")
    model = _model()
    before = [w.copy() for w in model.get_weights()]
    round_weights(model, "int8")
    matrices = 0
    for old, new in zip(before, model.get_weights()):
        assert new.dtype == np.float32
        if old.ndim < 2:  # vectors as float16
            np.testing.assert_array_equal(new, old.astype(np.float16).astype(np.float32))
            continue
        matrices += old.size
        # within half a step of its channel's scale (the largest magnitude / 127)
        step = np.max(np.abs(old.reshape(-1, old.shape[-1])), axis=0) / 127
        assert np.all(np.abs(new - old) <= step / 2 * (1 + 1e-6))
        assert len(np.unique(new[..., 0])) <= 255
    eight = preset_files.save_preset(model, tmp_path / "eight", weights_dtype="int8")
    stored = _stored_arrays(eight)
    for name, (array, attrs) in stored.items():
        if np.ndim(array) == 0:  # scalars are kept as they are, as in a float16 file
            continue
        assert array.dtype in (np.int8, np.float16), name
        assert (array.dtype == np.int8) == (array.ndim >= 2) == (SCALE_ATTRIBUTE in attrs)
    half_bytes = os.path.getsize(os.path.join(half, preset_files.WEIGHTS_FILE))
    eight_bytes = os.path.getsize(os.path.join(eight, preset_files.WEIGHTS_FILE))
    # one byte fewer per matrix weight, less the scales' four bytes per channel
    assert half_bytes - eight_bytes >= matrices - 4 * sum(
        a.shape[-1] for a, _ in stored.values() if a.ndim >= 2), (half_bytes, eight_bytes)
    preset = load_preset(eight)
    assert preset.metadata["weights_dtype"] == "int8"
    loaded = preset.build_model()
    for want, got in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(loaded(_inputs()), model(_inputs()))


def test_int8_store_takes_only_quantised_matrices_and_finds_their_scales():
    rng = np.random.default_rng(3)
    values = (rng.normal(size=(5, 4, 6)) * [1e-3, 0.1, 1, 10, 1e3, 0]).astype("float32")
    q, scale = quantized(values)
    assert q.dtype == np.int8 and scale.shape == (6,) and scale[-1] == 1
    assert np.all(np.max(np.abs(q.reshape(-1, 6)[:, :5]), axis=0) == 127)
    fake = dequantized(q, scale)
    found = exact_int8(fake)
    assert found is not None
    np.testing.assert_array_equal(dequantized(*found), fake)
    # float16-rounded or unrounded matrices, vectors and non-finite values are not int8
    assert exact_int8(values.astype(np.float16).astype(np.float32)) is None
    assert exact_int8(values) is None and exact_int8(fake[0, 0]) is None
    assert exact_int8(np.where(fake == fake.max(), np.inf, fake)) is None


def test_unrounded_weights_are_refused_as_int8_and_a_float16_file_is_read_as_it_is(tmp_path):
    with pytest.raises(ValueError, match="round the model's weights first"):
        preset_files.save_preset(_model(), tmp_path / "p", weights_dtype="int8")
    assert os.listdir(tmp_path) == []
    model = _model()
    round_weights(model, "float16")
    path = os.path.join(preset_files.save_preset(model, tmp_path / "half",
                                                 weights_dtype="float16"),
                        preset_files.WEIGHTS_FILE)
    with keras_readable(path) as readable:
        assert readable == path
    # float16-rounded layers beside int8 ones (a routed preset's experts): each stored in
    # the form that holds it exactly
    round_weights(model.layers[-1], "int8")
    mixed = preset_files.save_preset(model, tmp_path / "mixed", weights_dtype="int8")
    kinds = {array.dtype for array, _ in _stored_arrays(mixed).values() if array.ndim >= 2}
    assert kinds == {np.dtype(np.int8), np.dtype(np.float16)}
    for want, got in zip(model.get_weights(), load_preset(mixed).build_model().get_weights()):
        np.testing.assert_array_equal(got, want)
