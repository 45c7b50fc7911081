"""What a math preset claims: the ``claims`` section made from a fresh-sample measurement
(``module_claims``), added to a written preset without touching its model's files
(``add_sections``, ``python -m train.claim_modules``), and the shipped presets' claims equal
to what their committed measurements give."""

import json
import pathlib

import pytest

from tpr_keras import evaluation
from tpr_keras.presets import load_preset, preset_writer, shipped_presets
from tpr_keras.presets.module_claims import claimed_scores, describe_claims, module_claims
from tpr_keras.presets.preset_files import describe_presets
from train import claim_modules, cli

REPO = pathlib.Path(__file__).resolve().parents[2]
HELDOUT = {"questions_path": "sample/interpolate", "modules": {
    "numbers__place_value": {"questions": 50, "correct": 50, "accuracy_percent": 100.0},
    "comparison__pair": {"questions": 50, "correct": 44, "accuracy_percent": 88.0},
    "arithmetic__add_or_sub": {"questions": 50, "correct": 45, "accuracy_percent": 90.0}}}


class FakeModel:
    """What ``save_preset`` asks of a model: its config and its weights file."""

    def get_config(self):
        return {"units": 3}

    def save_weights(self, path):
        pathlib.Path(path).write_bytes(b"weights")


def test_modules_at_the_threshold_are_claimed_the_rest_recorded_below_it():
    claims = module_claims(HELDOUT, 90, "results/x.json")
    assert claims["modules"] == {"arithmetic__add_or_sub": 90.0, "numbers__place_value": 100.0}
    assert claims["not_claimed"] == {"comparison__pair": 88.0}
    assert claims["sample"] == {"source": "results/x.json", "questions_per_module": 50,
                                "questions_path": "sample/interpolate"}
    assert claimed_scores({"claims": claims}) == claims["modules"]
    assert claimed_scores({}) is None
    assert describe_claims({}) is None
    assert describe_claims({"claims": claims}) == (
        "claims (exact match >= 90 % on a fresh generator sample of 50 questions per module): "
        "arithmetic__add_or_sub 90 %, numbers__place_value 100 %; trained on but not "
        "claimed: comparison__pair 88 %")
    with pytest.raises(ValueError, match="was not trained on it"):
        module_claims(HELDOUT, 90, trained=["numbers__place_value", "comparison__pair"])
    with pytest.raises(ValueError, match="percentage"):
        module_claims(HELDOUT, 101)
    with pytest.raises(ValueError, match="no modules"):
        module_claims({"modules": {}})


def _preset(tmp_path, task="math", modules=("numbers__place_value", "comparison__pair",
                                              "arithmetic__add_or_sub")):
    tmp_path.mkdir(parents=True, exist_ok=True)
    templates = tmp_path / "modules.json"
    templates.write_text(json.dumps({m: [f"What is N in {m}?"] for m in modules}))
    return preset_writer.write_preset(
        FakeModel(), tmp_path / "preset", task=task, model_name=task, description="tiny",
        headline="h", assets={"modules.json": str(templates)}, training={"seed": 1})


def test_add_sections_keeps_the_files_and_their_record_last(tmp_path):
    path = pathlib.Path(_preset(tmp_path))
    before = {f.name: f.read_bytes() for f in path.rglob("*") if f.is_file()}
    record = preset_writer.add_sections(path, claims={"modules": {}})
    after = json.loads((path / "metadata.json").read_text())
    assert after == record
    assert list(after)[5:7] == ["training", "claims"]
    assert list(after)[-5:] == [f for f in preset_writer.FILE_FIELDS if f in after]
    assert {f.name: f.read_bytes() for f in path.rglob("*") if f.is_file()
            and f.name != "metadata.json"} == {k: v for k, v in before.items()
                                               if k != "metadata.json"}
    load_preset(str(path))  # still a verified preset
    preset_writer.add_sections(path, claims={"modules": {"a": 1.0}})  # replaced, not doubled
    assert json.loads((path / "metadata.json").read_text())["claims"] == {"modules": {"a": 1.0}}
    with pytest.raises(ValueError, match="fields of every preset"):
        preset_writer.add_sections(path, files={})
    (path / "model.weights.h5").write_bytes(b"altered")
    with pytest.raises(ValueError):
        preset_writer.add_sections(path, claims={})


def test_the_command_writes_the_claims_and_refuses_what_it_cannot_claim(tmp_path, capsys):
    path = _preset(tmp_path)
    heldout = tmp_path / "heldout.json"
    heldout.write_text(json.dumps(HELDOUT))
    cli.run(claim_modules.command, claim_modules.main,
            ["--preset", path, "--heldout", str(heldout)])
    assert "claims (exact match >= 90 %" in capsys.readouterr().out
    assert claimed_scores(load_preset(path).metadata) == {
        "arithmetic__add_or_sub": 90.0, "numbers__place_value": 100.0}
    narrow = _preset(tmp_path / "narrow", modules=("numbers__place_value",))
    babi = _preset(tmp_path / "babi", task="babi")
    for argv, error in (([narrow], "was not trained on it"), ([babi], "a babi preset"),
                        ([path, "--threshold", "120"], "percentage")):
        with pytest.raises(SystemExit) as exit_:
            cli.run(claim_modules.command, claim_modules.main,
                    ["--preset", argv[0], "--heldout", str(heldout), *argv[1:]])
        assert exit_.value.code == 2
        assert error in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(n for n in shipped_presets("math")))
def test_a_shipped_math_preset_claims_what_its_committed_measurement_gives(name):
    metadata = load_preset(name).metadata
    claims = metadata["claims"]
    with open(REPO / claims["sample"]["source"], encoding="utf-8") as f:
        measured = json.load(f)
    modules = evaluation.preset_templates(load_preset(name)).modules
    assert claims == module_claims(measured, claims["threshold_percent"],
                                   claims["sample"]["source"], modules)
    assert all(score >= 90 for score in claims["modules"].values())
    assert describe_claims(metadata) in describe_presets("math")
