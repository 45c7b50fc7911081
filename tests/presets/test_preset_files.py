"""Trained presets: save_to_preset / from_preset round trips, and every way a folder can be bad."""

import dataclasses
import json
import os
import shutil

import numpy as np
import pytest

from tpr_keras.data.babi import Vocabulary
from tpr_keras.models import TPRRNN, MemN2N, PlainEntailmentModel
from tpr_keras.models.task_models import backbone_class
from tpr_keras.presets import preset_files
from tpr_keras.presets.preset_files import PresetError, load_preset


def edit_metadata(path, change):
    """Rewrites a preset's metadata.json with ``change(metadata)`` applied."""
    meta_path = os.path.join(path, "metadata.json")
    with open(meta_path) as f:
        meta = json.load(f)
    change(meta)
    with open(meta_path, "w") as f:
        json.dump(meta, f)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"story": rng.integers(0, 20, (3, 4, 6)).astype("int32"),
            "question": rng.integers(0, 20, (3, 6)).astype("int32")}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small TPR-RNN with non-initial weights, saved as a preset with a vocabulary (once:
    the tests read the model and get a copy of the folder)."""
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    rng = np.random.default_rng(1)
    model.set_weights([rng.normal(size=w.shape).astype("float32") * 0.1
                       for w in model.get_weights()])
    vocab = Vocabulary(["<pad>", "<unk>"] + [f"w{i}" for i in range(18)])
    path = model.save_to_preset(tmp_path_factory.mktemp("saved") / "mine",
                                assets={"vocab.txt": vocab.save},
                                metadata={"task": "babi", "seed": 7})
    return model, vocab, path


@pytest.fixture
def trained(saved, tmp_path):
    """:func:`saved` with its folder copied to ``tmp_path / "mine"`` (tests change it)."""
    model, vocab, path = saved
    return model, vocab, str(shutil.copytree(path, tmp_path / "mine"))


def test_round_trip_gives_the_same_outputs_config_and_assets(trained):
    model, vocab, path = trained
    loaded = TPRRNN.from_preset(path)
    assert loaded.get_config() == model.get_config()
    np.testing.assert_array_equal(loaded(_inputs()), model(_inputs()))
    preset = load_preset(path)
    assert Vocabulary.load(preset.asset_path("vocab.txt")) == vocab
    assert preset.metadata["seed"] == 7 and preset.metadata["task"] == "babi"
    assert preset.metadata["format_version"] == preset_files.FORMAT_VERSION
    assert sorted(os.listdir(path)) == ["assets", "config.json", "metadata.json",
                                        "model.weights.h5"]
    # build_model without a class finds the registered one
    np.testing.assert_array_equal(preset.build_model()(_inputs()), model(_inputs()))


def test_load_weights_false_builds_the_architecture_without_the_weights(trained):
    model, _, path = trained
    fresh = TPRRNN.from_preset(path, load_weights=False)
    assert fresh.get_config() == model.get_config()
    fresh(_inputs())
    assert [w.shape for w in fresh.get_weights()] == [w.shape for w in model.get_weights()]
    # the trained weights are N(0, 0.1) draws: none of the fresh ones equals its trained one
    for fresh_w, trained_w in zip(fresh.get_weights(), model.get_weights()):
        assert not np.array_equal(fresh_w, trained_w)


def test_a_folder_named_like_a_paper_size_is_a_trained_preset(trained, tmp_path,
                                                                monkeypatch):
    model, _, path = trained
    os.rename(path, tmp_path / "single_task")
    monkeypatch.chdir(tmp_path)
    loaded = TPRRNN.from_preset("single_task")
    np.testing.assert_array_equal(loaded(_inputs()), model(_inputs()))


def test_override_that_keeps_the_weights(trained):
    model, _, path = trained
    recurrent = TPRRNN.from_preset(path, implementation="recurrent")
    assert recurrent.implementation == "recurrent"
    np.testing.assert_allclose(recurrent(_inputs()), model(_inputs()), atol=1e-4)


def test_override_that_changes_a_shape_is_an_error(trained):
    _, _, path = trained
    with pytest.raises(PresetError, match="model.weights.h5: the weights do not fit"):
        TPRRNN.from_preset(path, entity_dim=3)


def test_wrong_class_is_an_error(trained):
    _, _, path = trained
    with pytest.raises(PresetError, match="holds a TPRRNN, not a MemN2N"):
        MemN2N.from_preset(path)


def test_a_class_no_family_registers_is_an_error_naming_it(trained):
    """The folder format never imports the model families: a class that no imported family
    registered is a PresetError that says how to register it, not an import from below."""
    _, _, path = trained
    preset = dataclasses.replace(load_preset(path), class_name="NoSuchModel")
    assert backbone_class(preset) is None and backbone_class(load_preset(path)) is TPRRNN
    with pytest.raises(PresetError, match="'NoSuchModel' is not registered with Keras; "
                                          "import its family"):
        preset.build_model()


def test_unknown_name_lists_the_trained_presets_and_points_to_the_paper_sizes():
    with pytest.raises(ValueError) as error:
        PlainEntailmentModel.from_preset("no_such_preset")
    message = str(error.value)
    assert "Unknown preset 'no_such_preset'" in message
    assert "PlainEntailmentModel.from_paper_size" in message and "plain_tpru" in message
    for name in preset_files.shipped_presets():
        assert name in message
    with pytest.raises(ValueError, match=r"'single_task' is a paper size, not a trained "
                                         r"preset: TPRRNN.from_paper_size\('single_task'"):
        TPRRNN.from_preset("single_task")


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_weights_are_one_error_naming_the_file(trained, damage):
    _, _, path = trained
    weights = os.path.join(path, "model.weights.h5")
    data = open(weights, "rb").read()
    expected = json.load(open(os.path.join(path, "metadata.json")))["files"][
        "model.weights.h5"]
    with open(weights, "wb") as f:
        if damage == "truncate":
            f.write(data[: len(data) // 2])
        else:
            f.write(data[:-10] + bytes(b ^ 1 for b in data[-10:]))
    with pytest.raises(PresetError, match=f"model.weights.h5: SHA-256 .* differs from the "
                                          f"expected {expected}"):
        TPRRNN.from_preset(path)


def test_altered_vocabulary_is_an_error(trained):
    _, _, path = trained
    with open(os.path.join(path, "assets", "vocab.txt"), "a") as f:
        f.write("extra\n")
    with pytest.raises(PresetError, match="vocab.txt: SHA-256"):
        load_preset(path)


def test_newer_format_version_is_an_error(trained):
    _, _, path = trained
    edit_metadata(path, lambda meta: meta.update(format_version=preset_files.FORMAT_VERSION + 1))
    with pytest.raises(PresetError, match=f"metadata.json: format_version "
                                          f"{preset_files.FORMAT_VERSION + 1} is newer"):
        TPRRNN.from_preset(path)


def test_missing_file_is_an_error(trained):
    _, _, path = trained
    os.remove(os.path.join(path, "model.weights.h5"))
    with pytest.raises(PresetError, match="model.weights.h5: missing"):
        TPRRNN.from_preset(path)


def test_save_never_overwrites_or_leaves_a_partial_folder(trained, tmp_path):
    model, _, path = trained
    before = open(os.path.join(path, "metadata.json")).read()
    with pytest.raises(FileExistsError):
        model.save_to_preset(path)
    assert open(os.path.join(path, "metadata.json")).read() == before

    def broken_writer(target):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        model.save_to_preset(tmp_path / "partial", assets={"vocab.txt": broken_writer})
    assert sorted(os.listdir(tmp_path)) == ["mine"]


def test_paper_sizes_build_untrained_models_and_name_no_trained_preset():
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    assert model.entity_dim == 15
    with pytest.raises(ValueError, match="Unknown paper size 'tpr_rnn_babi_all_tasks'.*"
                                         "TPRRNN.from_preset"):
        TPRRNN.from_paper_size("tpr_rnn_babi_all_tasks", 20, 6)


@pytest.mark.parametrize("listed", ["../outside.txt", "/etc/hostname", "assets/../x",
                                    "assets/sub/vocab.txt", "notes.txt"])
def test_files_outside_the_layout_are_refused(trained, listed):
    _, _, path = trained
    edit_metadata(path, lambda meta: meta["files"].update({listed: "0" * 64}))
    with pytest.raises(PresetError, match="a preset holds only"):
        load_preset(path)


def test_an_asset_missing_from_the_checksums_is_not_served(trained):
    _, _, path = trained
    # listed as an asset, never checksummed
    edit_metadata(path, lambda meta: meta["assets"].append("extra.txt"))
    with open(os.path.join(path, "assets", "extra.txt"), "w") as f:
        f.write("unverified\n")
    with pytest.raises(PresetError, match="has no asset 'extra.txt'"):
        load_preset(path).asset_path("extra.txt")


def test_a_preset_added_to_the_folder_shows_up_wherever_presets_are_named(trained, tmp_path,
                                                                         monkeypatch):
    """The presets folder is the one list: a preset saved into it is shipped, named, listed
    by ``--list_presets``, offered by the unknown-name error and loaded by name."""
    import tpr_keras.presets
    import train.babi
    import train.cli

    model, _, _ = trained
    folder = tmp_path / "shipped"
    model.save_to_preset(folder / "tiny_babi", metadata={
        "task": "babi", "headline": "tiny headline", "description": "tiny description"})
    (folder / ".preset-tmp-x").mkdir()  # a save in progress is no preset
    monkeypatch.setattr(preset_files, "SHIPPED_DIR", str(folder))

    assert preset_files.shipped_presets() == {"tiny_babi": str(folder / "tiny_babi")}
    assert list(preset_files.shipped_presets(task="babi")) == ["tiny_babi"]
    assert preset_files.shipped_presets(task="math") == {}
    assert preset_files.TRAINED_PRESET_NAMES == ("tiny_babi",)
    assert tpr_keras.presets.TRAINED_PRESET_NAMES == ("tiny_babi",)
    listing = train.cli.format_preset_list(train.babi.command())
    assert "tiny_babi  (TPRRNN, babi): tiny headline\n    tiny description" in listing
    assert "tpr_rnn_babi_all_tasks" not in listing
    with pytest.raises(PresetError, match="Trained presets: tiny_babi;"):
        load_preset("no_such_preset")
    np.testing.assert_array_equal(TPRRNN.from_preset("tiny_babi")(_inputs()), model(_inputs()))

    model.save_to_preset(folder / "another", metadata={"task": "math"})
    assert preset_files.TRAINED_PRESET_NAMES == ("another", "tiny_babi")
    assert "another" not in train.cli.format_preset_list(train.babi.command())
