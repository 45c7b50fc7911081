"""The one preset writer (``tpr_keras/presets/preset_writer.py``): the metadata every preset
opens with, written atomically through ``save_preset``, and no other writer of presets in
the commands (``train``, ``tools``)."""

import ast
import json
import pathlib

import pytest

from tpr_keras.presets import preset_writer

REPO = pathlib.Path(__file__).resolve().parents[2]


class FakeModel:
    """What ``save_preset`` asks of a model: its config and its weights file."""

    def get_config(self):
        return {"units": 3}

    def save_weights(self, path):
        pathlib.Path(path).write_bytes(b"weights")


def test_the_writer_records_the_common_fields_first_then_the_sections(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<pad>\nmary\n")
    path = preset_writer.write_preset(
        FakeModel(), tmp_path / "preset", task="babi", model_name="qa", description="tiny",
        headline="not evaluated", assets={"vocab.txt": str(vocab)},
        training={"seed": 1}, conversion={"from": "x"})
    metadata = json.loads((pathlib.Path(path) / "metadata.json").read_text())
    assert list(metadata)[:7] == ["task", "model_name", "description", "headline", "created",
                                  "training", "conversion"]
    assert (metadata["task"], metadata["model_name"], metadata["training"]) == (
        "babi", "qa", {"seed": 1})
    assert metadata["assets"] == ["vocab.txt"] and metadata["class_name"] == "FakeModel"
    assert preset_writer.folder_bytes(path) == sum(
        f.stat().st_size for f in pathlib.Path(path).rglob("*") if f.is_file())
    with pytest.raises(FileExistsError):
        preset_writer.write_preset(FakeModel(), path, task="babi", model_name="qa",
                                   description="", headline="", assets={})
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary


def _preset_saving_calls(root):
    """``["<file>: <name>"]`` of each call of ``save_preset`` or ``save_to_preset``."""
    found = []
    for package in ("train", "tools"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(
                        func, "id", "")
                    if name in ("save_preset", "save_to_preset"):
                        found.append(f"{path.relative_to(root).as_posix()}: {name}")
    return found


def test_no_command_writes_a_preset_but_through_the_writer():
    assert _preset_saving_calls(REPO) == []


def test_the_scan_finds_a_command_that_saves_a_preset_itself(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "train").mkdir()
    (tmp_path / "tools" / "convert.py").write_text(
        "def main(model):\n    model.save_to_preset('out')\n")
    assert _preset_saving_calls(tmp_path) == ["tools/convert.py: save_to_preset"]
