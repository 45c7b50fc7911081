"""``train.extract_part``: one decoder of a routed preset (stored float16 and int8) becomes a
preset of its own with exactly the weights the routed preset computes with."""

import keras
import numpy as np
import pytest

from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.presets import load_preset
from tpr_keras.presets.preset_writer import write_preset
from tpr_keras.presets.weight_storage import round_weights

VOCAB = CharVocabulary.build("0123456789+-*/ ?Whatis")
SMALL = CharVocabulary.build("0123456789 ?Whatis")  # an expert that knows fewer symbols
TEMPLATES = ModuleTemplates({"arithmetic__mul": ["What is N*N?"],
                             "arithmetic__div": ["What is N/N?"],
                             "numbers__place_value": ["What is the units digit of N?"]})
MODULES = ["arithmetic__div", "arithmetic__mul", "numbers__place_value"]


def decoder(seed, vocab):
    from tpr_keras.models import TPTransformer

    keras.utils.set_random_seed(seed)
    return TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                         vocabulary=vocab.tokens)


def routed_preset(path):
    """Three decoders stored as a shipped routed preset is: the default float16, the
    ``arithmetic__mul`` expert int8, the small-vocabulary ``numbers__place_value`` one."""
    from tpr_keras.models.tp_transformer.routed_tp_transformer import RoutedTPTransformer

    model = RoutedTPTransformer(decoder(1, VOCAB), {"arithmetic__mul": decoder(2, VOCAB),
                                                    "numbers__place_value": decoder(3, SMALL)})
    round_weights(model, "float16")
    round_weights(model.expert_decoders[0], "int8")
    parts = {name: {"preset": f"p{seed}", "weights_sha256": f"{seed}" * 64,
                    "training": {"command": f"train {seed}", "seed": seed}}
             for seed, name in enumerate(("default", *model.expert_names), 1)}
    write_preset(model, path, task="math", model_name="math", description="routed",
                 headline="h", assets={"vocab.txt": VOCAB.save, "modules.json.gz":
                                       TEMPLATES.save}, weights_dtype="int8",
                 training={"command": "route", "parts": parts},
                 evaluation_options={"modules": MODULES})
    return load_preset(str(path))


@pytest.fixture(scope="module")
def extracted(tmp_path_factory, command_in_process):
    """The routed preset and its three parts, each written by ``train.extract_part``:
    ``(folder, {part: preset folder})``."""
    folder = tmp_path_factory.mktemp("extract")
    routed_preset(folder / "routed")
    parts = {}
    for name in ("default", "arithmetic__mul", "numbers__place_value"):
        done = command_in_process("train.extract_part", [
            "--preset", folder / "routed", "--part", name, "--output", folder / name])
        assert done.returncode == 0, done.stderr[-3000:]
        parts[name] = folder / name
    return folder, parts


def test_each_part_becomes_a_preset_with_the_weights_it_computes_with(extracted):
    from train.tasks.math import load_initial_weights

    folder, parts = extracted
    stored = load_preset(str(folder / "routed")).build_model().decoders()
    for route, (name, vocab, modules) in enumerate([
            ("default", VOCAB, MODULES), ("arithmetic__mul", VOCAB, ["arithmetic__mul"]),
            ("numbers__place_value", SMALL, ["numbers__place_value"])]):
        part = load_preset(str(parts[name]))
        assert part.class_name == "TPTransformer"
        assert "weights_dtype" not in part.metadata  # float32: Keras' own file
        want = stored[route].decoder if route == 2 else stored[route]
        got = part.build_model().get_weights()
        assert all(np.array_equal(a, b) for a, b in zip(got, want.get_weights()))
        assert CharVocabulary.load(part.asset_path("vocab.txt")).tokens == vocab.tokens
        assert part.metadata["evaluation_options"]["modules"] == modules
        training = part.metadata["training"]
        assert training["command"] == f"train {route + 1}"
        assert training["part_of"]["preset"] == "routed"
        assert training["part_of"]["part"] == name
        assert training["part_of"]["part_weights_sha256"] == f"{route + 1}" * 64
        assert training["part_of"]["command"].startswith("python -m train.extract_part")
    # the int8 expert's matrices are q * scale, not float16 numbers: they came through exact
    assert any(not np.array_equal(w, w.astype("float16").astype("float32"))
               for w in stored[1].get_weights())
    # train.math --init_from continues the extracted part
    fresh = decoder(9, VOCAB)
    record = load_initial_weights(fresh, str(parts["arithmetic__mul"]))
    assert record["command"] == "train 2"
    assert all(np.array_equal(a, b) for a, b in zip(fresh.get_weights(),
                                                     stored[1].get_weights()))


def test_a_plain_preset_or_an_unknown_part_is_refused(extracted, tmp_path,
                                                      command_in_process):
    folder, parts = extracted
    done = command_in_process("train.extract_part", [
        "--preset", folder / "routed", "--part", "comparison__pair",
        "--output", tmp_path / "x"])
    assert done.returncode != 0
    assert "not a part of routed (its parts: default, arithmetic__mul, numbers__place_value)" in (
        done.stderr)
    done = command_in_process("train.extract_part", [
        "--preset", parts["default"], "--part", "default", "--output", tmp_path / "x"])
    assert done.returncode != 0 and "not a routed one" in done.stderr
    assert not (tmp_path / "x").exists()
