"""The presets shipped in tpr_keras/presets are a contract: each loads, scores its recorded
sample table on the official test files, and, exported through its task model and served
from serving/models.config, answers that sample through the official tensorflow-serving-api
stubs at the same accuracy (the pieces python -m tools.preset_serving_check runs)."""

import os
import pathlib
import re

import pytest

from serving.model_server.in_process import predict_strings, serve_model_config
from tests.serving.shared_exports import preset_export
from tpr_keras.models.task_models import backbone_class
from tpr_keras.presets import load_preset, shipped_presets
from tpr_keras import evaluation
from tpr_keras.evaluation.sample_requests import (
    ANSWER_OUTPUT,
    DATA_FOLDER,
    accuracy_rows,
    recorded_accuracy,
    sample_requests,
)

MODELS_CONFIG = pathlib.Path(__file__).resolve().parents[2] / "serving" / "models.config"

PRESETS = sorted(shipped_presets())
REQUIRED = ("task", "model_name", "description", "headline", "training", "data", "evaluation",
            "evaluation_sample", "evaluation_options", "files", "format_version")


@pytest.mark.parametrize("name", PRESETS)
def test_preset_is_complete_small_and_verified(name):
    preset = load_preset(name)  # raises on a checksum or format-version mismatch
    meta = preset.metadata
    assert not set(REQUIRED) - set(meta), set(REQUIRED) - set(meta)
    training = meta["training"]
    for key in ("command", "source", "seed", "train_seconds", "wall_seconds", "machine"):
        assert training.get(key) is not None, key
    assert "python -m train." in training["command"]
    assert len(training["source"]["commit"]) == 40
    assert meta["data"]["files_sha256"] and all(
        len(h) == 64 for h in meta["data"]["files_sha256"].values())
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, names in os.walk(preset.path) for f in names)
    # Small: at most 1.5 MB per model (a routed preset holds several) and 1 MB beside them.
    models = 1 + len(preset.config.get("experts", {}))
    assert size < 1.5e6 * models + 1e6, (size, models)
    assert os.path.isfile(preset.asset_path("vocab.txt"))


@pytest.mark.parametrize("name", PRESETS)
def test_preset_scores_its_recorded_sample(name, shared_data):
    preset = load_preset(name)
    meta = preset.metadata
    recorded = meta["evaluation_sample"]
    table = evaluation.evaluate_model(
        meta["task"], preset.build_model(backbone_class(preset)),
        evaluation.preset_vocabulary(preset),
        shared_data / DATA_FOLDER[meta["task"]], meta["evaluation_options"],
        limit=recorded["limit"], templates=evaluation.preset_templates(preset))
    rows = evaluation.compare_tables(table, recorded["table"])
    assert all(ok for *_, ok in rows), [r for r in rows if not r[3]]


def config_presets(text):
    """``{preset: served name}`` of a models.config: the preset each entry's base_path
    comment names (``# python -m train.export --preset NAME``)."""
    return {preset: name for name, preset in re.findall(
        r'name: "(\w+)"\s*base_path: "[^"]*"\s*# python -m train\.export --preset (\w+)', text)}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Every shipped preset exported as train.export does (``TaskModel.from_preset(name)
    .export``) and served from serving/models.config (its base paths under a temporary
    folder); a shipped preset the config does not serve (another preset has its model
    name there) is served beside them under its own name: ``(PredictionServiceStub,
    {preset name: served name})``."""
    if not PRESETS:
        pytest.skip("no trained preset is shipped")
    root = tmp_path_factory.mktemp("repo")
    (root / "exports").mkdir()
    text = MODELS_CONFIG.read_text()
    served_as = config_presets(text)
    extra = [name for name in PRESETS if name not in served_as]
    config = root / "models.config"
    config.write_text(text.rstrip().rstrip("}") + "".join(
        f'  config {{\n    name: "{name}"\n    base_path: "exports/{name}"\n'
        '    model_platform: "tensorflow"\n  }\n' for name in extra) + "}\n")
    for name in PRESETS:
        # made once per test run, shared with tests/serving (test_partial_inputs.py,
        # test_models_config.py)
        version, served_name = preset_export(tmp_path_factory, name)
        assert name in extra or served_as[name] == served_name, (name, served_name)
        served_as.setdefault(name, name)
        os.symlink(version.parent, root / "exports" / served_as[name])
    with serve_model_config(config, root, sorted(served_as.values())) as stub:
        yield stub, served_as


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_served_preset_answers_its_sample_at_the_recorded_accuracy(name, served, shared_data):
    stub, served_as = served
    meta = load_preset(name).metadata
    sample = meta["evaluation_sample"]
    requests = sample_requests(meta, shared_data / DATA_FOLDER[meta["task"]], sample["limit"])
    rows = accuracy_rows(requests, lambda inputs: predict_strings(
        stub, served_as[name], inputs, ANSWER_OUTPUT[meta["task"]]))
    assert len(rows) == len(requests) > 0
    for row, accuracy, questions in rows:
        assert 0 < questions <= sample["limit"]  # test_exam holds 100 pairs
        assert accuracy == pytest.approx(
            recorded_accuracy(sample["table"], meta["task"], row), abs=0.05), (name, row)
