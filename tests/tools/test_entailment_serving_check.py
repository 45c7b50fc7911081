"""tools/entailment_serving_check.py: the served model's accuracy, split by split."""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import entailment
from tpr_keras.export.entailment import export_entailment_model
from tpr_keras.models import PlainEntailmentModel

PAIRS = [("(a&b)", "a"), ("a", "(a&b)"), ("(p>q)", "(~q>~p)"), ("(a|b)", "(b|a)"),
         ("~~a", "a"), ("(a>b)", "(b>a)")]


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("entailment_serving_check")


def predictions(model, pairs):
    def ids(texts):
        rows = [entailment.tokenize(t) for t in texts]
        width = max(len(r) for r in rows)
        return np.array([list(r) + [0] * (width - len(r)) for r in rows], "int32")

    logits = model({"a": ids([p for p, _ in pairs]), "b": ids([h for _, h in pairs])})
    return (tf.reshape(logits, [-1]).numpy() > 0).astype(int)


def test_served_accuracy_per_split(script, tmp_path, monkeypatch, capsys):
    tf.keras.utils.set_random_seed(3)
    model = PlainEntailmentModel(units=8, cell="tpru", num_roles=4, seed=3)
    run = tmp_path / "run"
    export_entailment_model(model, run / "export")
    predicted = predictions(model, PAIRS)
    data = tmp_path / "data"
    data.mkdir()
    # validate: every label is the model's answer; test_easy: the first two are flipped.
    for split, flipped in (("validate", 0), ("test_easy", 2)):
        labels = [1 - p if i < flipped else p for i, p in enumerate(predicted)]
        (data / f"{split}.txt").write_text(
            "".join(f"{a},{b},{y},0,0,0\n" for (a, b), y in zip(PAIRS, labels)))
    (run / "results.json").write_text(json.dumps(
        {"accuracy_percent": {"validate": 100.0, "test_easy": 400 / 6}}))
    out = tmp_path / "check.json"
    monkeypatch.setattr(sys, "argv", [
        "entailment_serving_check.py", str(run), "--data_dir", str(data),
        "--splits", "validate,test_easy", "--batch", "4", "--model_config_file", "",
        "--json", str(out)])
    script.main()
    rows = json.loads(out.read_text())["splits"]
    assert rows["validate"]["served_percent"] == 100.0
    assert rows["test_easy"]["served_percent"] == pytest.approx(400 / 6)
    assert rows["test_easy"]["pairs"] == 6
    printed = capsys.readouterr().out
    assert "test_easy: served 66.67 % of 6 pairs, training run 66.67 %" in printed
    assert "probability" in printed  # saved_model_cli's outputs


def test_other_models_of_the_config_file_are_served_where_exported(script, tmp_path):
    (tmp_path / "babi").mkdir()
    config = tmp_path / "models.config"
    config.write_text(
        "model_config_list {\n"
        f' config {{ name: "babi" base_path: "{tmp_path / "babi"}" model_platform: "tensorflow" }}\n'
        f' config {{ name: "math" base_path: "{tmp_path / "none"}" model_platform: "tensorflow" }}\n'
        ' config { name: "entailment" base_path: "elsewhere" model_platform: "tensorflow" }\n'
        "}\n")
    models = script.configs(str(tmp_path / "e"), str(config))
    assert [(m.name, m.base_path) for m in models] == [
        ("entailment", os.path.abspath(tmp_path / "e")), ("babi", str(tmp_path / "babi"))]
    assert [m.name for m in script.configs("e", "")] == ["entailment"]
