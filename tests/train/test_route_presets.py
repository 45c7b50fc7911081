"""``train.route_presets``: two math presets become one routed preset that loads, answers
by module and records both parts."""

import json
import os
from pathlib import Path

import keras
import numpy as np
import pytest

from tests import preloaded_python
from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.presets.weight_storage import dequantized, quantized

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = ModuleTemplates({"numbers__place_value": ["What is the units digit of N?"]})


def test_expert_flags_must_be_module_equals_preset():
    """Refused before anything loads."""
    from train import cli
    from train.route_presets import parse_experts

    for entries, message in [(["a"], "expected MODULE"), (["a=x", "a=y"], "names a twice"),
                             (["a,b=x", "b=y"], "names b twice"), (["a,=x"], "expected"),
                             ([], "at least one --expert")]:
        with pytest.raises(cli.UsageError, match=message):
            parse_experts(entries)
    assert parse_experts(["a, b=x", "c=y"]) == {"a": "x", "b": "x", "c": "y"}


def test_int8_modules_name_experts_and_need_float16_storage():
    """Refused before anything is evaluated; an expert answering two modules is one."""
    from train import cli
    from train.route_presets import int8_experts

    routes = {"a": "a", "b": "x_y", "c": "x_y"}
    assert int8_experts("", routes, "float32") == []
    assert int8_experts("c, b,a", routes, "float16") == ["a", "x_y"]
    with pytest.raises(cli.UsageError, match="needs --weights_dtype float16"):
        int8_experts("a", routes, "float32")
    with pytest.raises(cli.UsageError, match="--int8_modules d: no --expert answers"):
        int8_experts("a,d", routes, "float16")


def test_the_routed_preset_recognises_a_wide_module_by_its_expression_pattern(capsys):
    """The default's templates keep a wide module with none; routed, its pattern is added
    (and said), so that an expert can answer it."""
    from tpr_keras.data.mathematics.expression_patterns import EXPRESSION_PATTERNS
    from train.route_presets import with_patterns

    wide = ModuleTemplates({"numbers__place_value": ["What is the units digit of N?"],
                            "arithmetic__add_sub_multiple": []})
    routed = with_patterns(wide)
    assert wide.wide == ["arithmetic__add_sub_multiple"] and routed.wide == []
    assert routed.patterns == {"arithmetic__add_sub_multiple":
                               EXPRESSION_PATTERNS["arithmetic__add_sub_multiple"]}
    assert routed.module_of("What is 1 - 2 + 3?") == "arithmetic__add_sub_multiple"
    assert "arithmetic__add_sub_multiple: recognised by its expression pattern" in (
        capsys.readouterr().out)
    assert with_patterns(TEMPLATES) == TEMPLATES and capsys.readouterr().out == ""


def write_preset(path, seed, vocab, modules):
    from tpr_keras.models import TPTransformer

    keras.utils.set_random_seed(seed)
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                          vocabulary=vocab.tokens)
    model.save_to_preset(str(path), assets={"vocab.txt": vocab.save,
                                            "modules.json": TEMPLATES.save}, metadata={
        "task": "math", "model_name": "math", "evaluation_options": {"modules": modules},
        "training": {"command": f"python -m train.math --seed {seed}", "seed": seed,
                     "source": {"commit": "a" * 40, "dirty": False},
                     "train_seconds": 10.0 * seed, "wall_seconds": 20.0 * seed,
                     "machine": "test machine"}})


@pytest.mark.slow
def test_two_presets_become_one_routed_preset(tiny_math, tmp_path, command_in_process):
    from tpr_keras.models import MathAnswerer, TaskModel
    from tpr_keras.presets import load_preset
    from tpr_keras import evaluation

    text = "".join((tiny_math / "train-easy" / "numbers__place_value.txt").read_text())
    vocab = CharVocabulary.build(text)
    write_preset(tmp_path / "default", 1, vocab, ["numbers__place_value"])
    write_preset(tmp_path / "expert", 2, vocab, ["numbers__place_value"])
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="")

    def route(*extra):
        return preloaded_python.run(
            ["-m", "train.route_presets", "--default", str(tmp_path / "default"),
             "--data_dir", str(tiny_math), "--sample", "4", "--allow_dirty", *extra],
            env=env, timeout=600, cwd=REPO)

    done = route("--expert", f"numbers__place_value={tmp_path / 'expert'}",
                 "--output", str(tmp_path / "routed"))
    assert done.returncode == 0, done.stderr[-3000:]
    preset = load_preset(str(tmp_path / "routed"))
    meta = preset.metadata
    training = meta["training"]
    assert training["command"].startswith("python -m train.route_presets --default")
    assert training["seed"] == {"default": 1, "numbers__place_value": 2}
    assert training["train_seconds"] == 30.0 and training["machine"] == "test machine"
    assert training["parts"]["numbers__place_value"]["training"]["command"] == (
        "python -m train.math --seed 2")
    answerer = TaskModel.from_preset(str(tmp_path / "routed"))
    assert isinstance(answerer, MathAnswerer)
    assert answerer.backbone.expert_modules == ("numbers__place_value",)
    # Every question of the module is the expert's: the table is the expert's own.
    expert = load_preset(str(tmp_path / "expert"))
    table = evaluation.evaluate_model("math", expert.build_model(), vocab, tiny_math,
                                      meta["evaluation_options"])
    assert meta["evaluation"]["table"] == table
    assert meta["evaluation_sample"]["limit"] == 4
    # the default's plain templates (a preset written before) are written compressed
    assert sorted(meta["files"]) == ["assets/modules.json.gz", "assets/vocab.txt",
                                     "config.json", "model.weights.h5"]
    assert evaluation.preset_templates(preset) == TEMPLATES
    # An expert for a module the default does not serve, or was not trained on, is refused.
    # (in this process: the command line it records is the first call's)
    done = command_in_process("train.route_presets", [
        "--default", tmp_path / "default", "--data_dir", tiny_math, "--sample", "4",
        "--allow_dirty", "--expert", f"comparison__pair={tmp_path / 'expert'}", "--output",
        tmp_path / "other"])
    assert done.returncode != 0 and "not a module of default" in done.stderr
    assert not (tmp_path / "other").exists()
    # A routed preset lends the decoder that answers the module in it: its expert.
    done = command_in_process("train.route_presets", [
        "--default", tmp_path / "default", "--data_dir", tiny_math, "--sample", "4",
        "--allow_dirty", "--expert", f"numbers__place_value={tmp_path / 'routed'}",
        "--output", tmp_path / "lent"])
    assert done.returncode == 0, done.stderr[-3000:]
    lent = load_preset(str(tmp_path / "lent"))
    part = lent.metadata["training"]["parts"]["numbers__place_value"]
    assert (part["lent_by"], part["decoder"], part["preset"]) == (
        "routed", "numbers__place_value", "expert")
    assert part["training"]["seed"] == 2 and lent.metadata["training"]["train_seconds"] == 30.0
    assert all(np.array_equal(a, b) for a, b in zip(
        lent.build_model().decoders()[1].get_weights(), expert.build_model().get_weights()))
    # float16 storage: the weights rounded, and the recorded table is the stored model's.
    done = command_in_process("train.route_presets", [
        "--default", tmp_path / "default", "--data_dir", tiny_math, "--sample", "4",
        "--allow_dirty", "--expert", f"numbers__place_value={tmp_path / 'expert'}",
        "--weights_dtype", "float16", "--output", tmp_path / "half"])
    assert done.returncode == 0, done.stderr[-3000:]
    half = load_preset(str(tmp_path / "half"))
    assert half.metadata["weights_dtype"] == "float16"
    stored = half.build_model()
    assert all(np.array_equal(a, b.astype("float16").astype("float32")) for a, b in zip(
        stored.decoders()[1].get_weights(), expert.build_model().get_weights()))
    assert half.metadata["evaluation"]["table"] == evaluation.evaluate_model(
        "math", stored, vocab, tiny_math, half.metadata["evaluation_options"],
        templates=evaluation.preset_templates(half))
    # int8 storage of the expert: its matrices quantised, the default's still float16.
    done = command_in_process("train.route_presets", [
        "--default", tmp_path / "default", "--data_dir", tiny_math, "--sample", "4",
        "--allow_dirty", "--expert", f"numbers__place_value={tmp_path / 'expert'}",
        "--weights_dtype", "float16", "--int8_modules", "numbers__place_value",
        "--output", tmp_path / "eight"])
    assert done.returncode == 0, done.stderr[-3000:]
    eight = load_preset(str(tmp_path / "eight"))
    assert eight.metadata["weights_dtype"] == "int8"
    stored = eight.build_model()
    for decoder, want in zip(stored.decoders(), half.build_model().decoders()):
        for a, b in zip(decoder.get_weights(), want.get_weights()):
            quantised = decoder is stored.decoders()[1] and b.ndim >= 2
            np.testing.assert_array_equal(a, dequantized(*quantized(b)) if quantised else b)
    assert eight.metadata["evaluation"]["table"] == evaluation.evaluate_model(
        "math", stored, vocab, tiny_math, eight.metadata["evaluation_options"],
        templates=evaluation.preset_templates(eight))
    json.loads((tmp_path / "routed" / "metadata.json").read_text())
