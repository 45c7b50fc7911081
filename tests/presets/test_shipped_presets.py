"""The presets shipped in tpr_keras/presets are a contract: each loads, scores its recorded
sample table on the official test files, and, exported and served from serving/models.config,
answers that sample through the official tensorflow-serving-api stubs at the same accuracy."""

import os
import pathlib

import grpc
import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

from serving.server import ModelManager, ModelServer
from tpr_keras.data.babi import files, parse_babi_file
from tpr_keras.models.babi import join_story
from tpr_keras.presets import load_preset, shipped_presets
from tpr_keras.training import evaluation
from train.export import export_preset

REPO = pathlib.Path(__file__).resolve().parents[2]
PRESETS = sorted(shipped_presets())
DATA = {"babi": "babi", "entailment": "entailment", "math": "mathematics"}
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
    assert training["command"].startswith("python -m train.")
    assert len(training["source"]["commit"]) == 40
    assert meta["data"]["files_sha256"] and all(
        len(h) == 64 for h in meta["data"]["files_sha256"].values())
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, names in os.walk(preset.path) for f in names)
    assert size < 5e6
    assert os.path.isfile(preset.asset_path("vocab.txt"))


@pytest.mark.parametrize("name", PRESETS)
def test_preset_scores_its_recorded_sample(name, shared_data):
    preset = load_preset(name)
    meta = preset.metadata
    recorded = meta["evaluation_sample"]
    table = evaluation.evaluate_model(
        meta["task"], preset.build_model(), evaluation.preset_vocabulary(preset),
        shared_data / DATA[meta["task"]], meta["evaluation_options"],
        limit=recorded["limit"])
    rows = evaluation.compare_tables(table, recorded["table"])
    assert all(ok for *_, ok in rows), [r for r in rows if not r[3]]


def sample_requests(meta, data_dir):
    """``[(inputs {name: [str]}, expected outputs [str] or labels, row)]``: the recorded
    sample as strings, one request per task / split / module."""
    limit = meta["evaluation_sample"]["limit"]
    task = meta["task"]
    out = []
    if task == "babi":
        root = files.find_babi_dir(data_dir, download=False)
        for t in meta["evaluation_options"]["tasks"]:
            samples = parse_babi_file(files.task_file(root, t, "test"))[:limit]
            out.append(({"story": [join_story(s.story) for s in samples],
                         "question": [" ".join(s.question) for s in samples]},
                        [s.answer for s in samples], str(t)))
    elif task == "entailment":
        for split in evaluation.ENTAILMENT_SPLITS:
            lines = (data_dir / f"{split}.txt").read_text().splitlines()[:limit]
            fields = [line.split(",") for line in lines]
            out.append(({"premise": [f[0] for f in fields], "hypothesis": [f[1] for f in fields]},
                        [f[2] == "1" for f in fields], split))
    else:
        table = meta["evaluation_sample"]["table"]
        for regime in ("interpolate", "extrapolate"):
            for module in table[f"{regime}_accuracy_percent"]:
                lines = (data_dir / regime / f"{module}.txt").read_text().splitlines()
                out.append(({"question": lines[0:2 * limit:2]}, lines[1:2 * limit:2],
                            f"{regime}/{module}"))
    return out


def served_accuracy(meta, answers, expected):
    if meta["task"] == "entailment":
        return 100.0 * np.mean(np.asarray(answers) == np.asarray(expected))
    return 100.0 * np.mean([a == e for a, e in zip(answers, expected)])


def recorded_accuracy(meta, row):
    table = meta["evaluation_sample"]["table"]
    if meta["task"] == "babi":
        return 100.0 - table["test_error_percent"][row]
    if meta["task"] == "entailment":
        return table["accuracy_percent"][row]
    regime, module = row.split("/")
    return table[f"{regime}_accuracy_percent"][module]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Every shipped preset exported with train.export and served from serving/models.config
    (base paths under a temporary folder instead of the repository root)."""
    if not PRESETS:
        pytest.skip("no trained preset is shipped")
    root = tmp_path_factory.mktemp("repo")
    metas = {}
    for name in PRESETS:
        preset = load_preset(name)
        export_preset(preset, root / "exports")
        metas[preset.metadata["model_name"]] = preset.metadata
    config = text_format.Parse((REPO / "serving" / "models.config").read_text(),
                               model_server_config_pb2.ModelServerConfig())
    configs = []
    for entry in config.model_config_list.config:
        if entry.name in metas:
            entry.base_path = str(root / entry.base_path)
            configs.append(entry)
    assert sorted(c.name for c in configs) == sorted(metas), "models.config lacks a preset"
    server = ModelServer(ModelManager(configs), port=0, rest_api_port=0).start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield prediction_service_pb2_grpc.PredictionServiceStub(channel), metas
    channel.close()
    server.stop(grace=2)


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_served_preset_answers_its_sample_at_the_recorded_accuracy(name, served, shared_data):
    stub, metas = served
    meta = load_preset(name).metadata
    assert metas[meta["model_name"]]["name"] == name
    output = {"babi": "answer", "entailment": "entails", "math": "answer"}[meta["task"]]
    for inputs, expected, row in sample_requests(meta, shared_data / DATA[meta["task"]]):
        request = predict_pb2.PredictRequest(
            model_spec=model_pb2.ModelSpec(name=meta["model_name"]))
        for key, values in inputs.items():
            request.inputs[key].CopyFrom(tf.make_tensor_proto(values, dtype=tf.string))
        response = stub.Predict(request, timeout=120)
        values = tf.make_ndarray(response.outputs[output])
        answers = [v.decode() if isinstance(v, bytes) else bool(v) for v in values]
        assert served_accuracy(meta, answers, expected) == pytest.approx(
            recorded_accuracy(meta, row), abs=0.05), (name, row)
