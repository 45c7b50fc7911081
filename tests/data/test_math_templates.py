"""Question templates: a question's wording names the trained module it belongs to, or none."""

import gzip
import re

import pytest

from tpr_keras.data.mathematics import (
    NUMBER_PATTERN,
    ModuleTemplates,
    module_templates,
    question_template,
)

TRAIN = {  # difficulty -> module -> questions (answers do not matter to the templates)
    "train-easy": {"numbers__place_value": ["What is the tens digit of 2934?"],
                   "arithmetic__add_or_sub": ["What is 12 + 30?", "Calculate -5 - 0.25."]},
    "train-hard": {"numbers__place_value": ["What is the units digit of -10?"],
                   "algebra__linear_1d": ["Solve 3*x = 6 for x."]},
}


@pytest.fixture
def data_dir(tmp_path):
    for difficulty, modules in TRAIN.items():
        (tmp_path / difficulty).mkdir()
        for module, questions in modules.items():
            (tmp_path / difficulty / f"{module}.txt").write_text(
                "".join(f"{q}\n1\n" for q in questions))
    return tmp_path


def test_every_number_becomes_n_and_nothing_else_changes():
    assert question_template("What is -526 plus 62558774.5?") == "What is N plus N?"
    assert question_template("Calculate 4 - -3.") == "Calculate N - N."
    assert question_template("Which is smaller: 413.34 or -2/7?") == "Which is smaller: N or N/N?"
    assert question_template("Is x bigger?") == "Is x bigger?"
    # The in-graph rule is the same pattern (RE2 reads it as Python's re does).
    assert re.sub(NUMBER_PATTERN, "N", "a1.5b-2") == "aNbN"


def test_module_templates_read_every_training_file_of_the_modules(data_dir):
    known = module_templates(data_dir, ["numbers__place_value", "arithmetic__add_or_sub"])
    assert known.modules == ["arithmetic__add_or_sub", "numbers__place_value"]
    assert known.templates["numbers__place_value"] == [  # easy and hard merged
        "What is the tens digit of N?", "What is the units digit of N?"]
    assert known.module_of("What is the units digit of 81379118?") == "numbers__place_value"
    assert known.module_of("Calculate 7 - 1.") == "arithmetic__add_or_sub"
    # Another module, another wording of a trained module, a hundreds digit never asked.
    assert [known.module_of(q) for q in ("Solve 3*x = 6 for x.", "What is 12+30?",
                                         "What is the hundreds digit of 2934?")] == ["", "", ""]
    with pytest.raises(FileNotFoundError, match="comparison__pair"):
        module_templates(data_dir, ["comparison__pair"])


def test_save_and_load_round_trip(data_dir, tmp_path):
    known = module_templates(data_dir, ["numbers__place_value", "algebra__linear_1d"])
    known.save(tmp_path / "modules.json")
    assert ModuleTemplates.load(tmp_path / "modules.json") == known
    # compressed (a preset's asset): the same JSON, and the same bytes from a second save
    known.save(tmp_path / "modules.json.gz")
    assert ModuleTemplates.load(tmp_path / "modules.json.gz") == known
    assert gzip.decompress((tmp_path / "modules.json.gz").read_bytes()) == (
        tmp_path / "modules.json").read_bytes()
    first = (tmp_path / "modules.json.gz").read_bytes()
    known.save(tmp_path / "modules.json.gz")
    assert (tmp_path / "modules.json.gz").read_bytes() == first
    (tmp_path / "plain.json.gz").write_text('{"m": ["What is N?"]}')
    with pytest.raises(ValueError, match="plain.json.gz"):
        ModuleTemplates.load(tmp_path / "plain.json.gz")
    (tmp_path / "bad.json").write_text('{"m": "What is N?"}')
    with pytest.raises(ValueError, match="module"):
        ModuleTemplates.load(tmp_path / "bad.json")


def test_capped_keeps_a_wide_module_with_no_templates_so_its_questions_report_none(data_dir):
    known = module_templates(data_dir, ["numbers__place_value", "arithmetic__add_or_sub",
                                        "algebra__linear_1d"])
    capped = known.capped(1)
    assert capped.modules == known.modules and capped.wide == ["arithmetic__add_or_sub",
                                                               "numbers__place_value"]
    assert capped.module_of("Solve 3*x = 6 for x.") == "algebra__linear_1d"
    assert capped.module_of("What is 12 + 30?") == "" != known.module_of("What is 12 + 30?")
    assert known.capped(2) == known and known.wide == []


def test_a_template_of_two_modules_belongs_to_the_first_in_sorted_order():
    known = ModuleTemplates({"b": ["N + N"], "a": ["N + N", "N - N"]})
    assert known.module_of("1 + 2") == "a" and known.module_of("3 * 4") == ""
    with pytest.raises(ValueError, match="no modules"):
        ModuleTemplates({})


@pytest.mark.slow
def test_on_the_shared_data_the_presets_templates_hold_its_modules_and_no_other(shared_data):
    """The shipped math preset's templates (made from its modules' training files) on real
    files: every interpolate question of its four modules is inside, and no interpolate
    question of the other 52 modules is."""
    from tpr_keras.data.mathematics import parse_mathematics_file, templates_asset
    from tpr_keras.presets import load_preset

    preset = load_preset("tp_transformer_math_focus")
    known = ModuleTemplates.load(preset.asset_path(templates_asset(preset.metadata["assets"])))
    trained = preset.metadata["evaluation_options"]["modules"]
    assert known.modules == sorted(trained)
    files = sorted((shared_data / "mathematics" / "interpolate").glob("*.txt"))
    assert len(files) == 56
    for path in files:
        questions = parse_mathematics_file(path, None, None)[0]
        found = {known.module_of(q) for q in questions}
        assert found == ({path.stem} if path.stem in trained else {""}), path.stem


def test_patterns_recognise_a_wide_module_and_travel_with_the_templates(tmp_path):
    known = ModuleTemplates({"a": [], "b": ["N"]}, {"a": r"N( [-+] N)+"})
    assert known.wide == [] and known.capped(0).patterns == known.patterns
    assert [known.module_of(q) for q in ("1 + 2", "7", "1 * 2")] == ["a", "b", ""]
    assert ModuleTemplates({"a": [], "b": ["N"]}).wide == ["a"]
    known.save(tmp_path / "modules.json.gz")
    assert ModuleTemplates.load(tmp_path / "modules.json.gz") == known
    assert ModuleTemplates.load(tmp_path / "modules.json.gz") != known.capped(0).with_patterns({
        "b": "N"})
    with pytest.raises(ValueError, match="patterns of module"):
        ModuleTemplates({"b": ["N"]}, {"a": "N"})
    (tmp_path / "bad.json").write_text('{"modules": {"a": []}, "patterns": {"a": "N("}}')
    with pytest.raises(ValueError, match="bad.json"):
        ModuleTemplates.load(tmp_path / "bad.json")
