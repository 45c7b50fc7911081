"""tools.math_fit: exact match per training difficulty and interpolate, pooled, and its table."""

import json

import pytest

from tools import math_fit
from tools.report import math_tables
from tools.math_savedmodel_accuracy import read_pairs


def write(root, regime, module, pairs):
    path = root / regime / f"{module}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{q}\n{a}\n" for q, a in pairs))


@pytest.fixture
def data(tmp_path):
    """Module ``m``: 4 questions per file; the answerer below knows what a training file
    says, so only interpolate (whose answers are not in training) can go wrong."""
    for i, regime in enumerate(math_fit.DIFFICULTIES):
        write(tmp_path, regime, "m", [(f"{regime} q{j}", f"{i}{j}") for j in range(4)])
    write(tmp_path, "interpolate", "m", [("new q0", "x"), ("train-easy q1", "01"),
                                         ("new q2", "y"), ("new q3", "z")])
    return tmp_path


def memory(data_dir):
    """An answerer that knows the answers of the training files and says "?" otherwise."""
    known = {}
    for regime in math_fit.DIFFICULTIES:
        known.update(zip(*read_pairs(data_dir / regime / "m.txt")))
    return lambda questions: [known.get(q, "?") for q in questions]


def test_training_is_pooled_and_interpolate_scored_alone(data):
    table = math_fit.fit(memory(data), str(data), ["m"], per_file=3)
    row = table["m"]
    for regime in math_fit.DIFFICULTIES:
        assert row[regime] == {"questions": 3, "correct": 3, "accuracy_percent": 100.0}
    assert row["train"] == {"questions": 9, "correct": 9, "accuracy_percent": 100.0}
    # the first 3 interpolate questions: one repeats a training question
    assert row["interpolate"]["correct"] == 1
    assert row["interpolate"]["accuracy_percent"] == pytest.approx(100 / 3)


def markdown_of(root, table):
    """The Markdown lines of ``table`` committed as preset ``p``'s JSON under ``root``."""
    folder = root / "results" / "math" / "fit"
    folder.mkdir(parents=True)
    (folder / "p.json").write_text(json.dumps({"command": "python -m tools.math_fit X",
                                               "preset": "p", "per_file": 4,
                                               "modules": table}))
    return math_tables.fit_markdown(str(root)).splitlines()


def test_markdown_reads_the_committed_json(data, tmp_path):
    table = math_fit.fit(memory(data), str(data), ["m"], per_file=4)
    lines = markdown_of(tmp_path, table)
    assert lines[0] == "`p`, the first 4 questions of each file:"
    assert lines[4] == "| `m` | 100.0 | 100.0 | 100.0 | 100.0 | 25.0 | +75.0 |"
    assert lines[-1] == "Exact match %. `python -m tools.math_fit X`"


def test_interpolate_is_also_scored_by_kind_of_question(tmp_path):
    write(tmp_path, "interpolate", "c", [("Is 3 > 2?", "True"), ("Is 1/2 < 1?", "True"),
                                         ("Which is bigger: 1/3 or 1?", "1"),
                                         ("Is 5 >= 7?", "False")])
    for regime in math_fit.DIFFICULTIES:
        write(tmp_path, regime, "c", [("Is 3 > 2?", "True")])
    table = math_fit.fit(lambda qs: ["True"] * len(qs), str(tmp_path), ["c"], per_file=4)
    assert {k: (v["questions"], v["correct"])
            for k, v in table["c"]["interpolate_kinds"].items()} == {
        "True/False, fractions": (1, 1), "True/False, integers": (2, 1),
        "value, fractions": (1, 0)}
    lines = markdown_of(tmp_path, table)
    start = lines.index("| module | kind | questions | exact match % |")
    assert lines[start + 2:start + 5] == ["| `c` | True/False, fractions | 1 | 100.0 |",
                                          "| `c` | True/False, integers | 2 | 50.0 |",
                                          "| `c` | value, fractions | 1 | 0.0 |"]


def test_a_file_without_its_answer_names_the_file_and_line(data):
    (data / "interpolate" / "m.txt").write_text("q0\na0\nq1\n")
    with pytest.raises(ValueError, match=r"m\.txt:3: a question without an answer line"):
        math_fit.fit(lambda qs: qs, str(data), ["m"], per_file=2)


def test_no_runs_says_where_they_go(tmp_path):
    assert math_tables.FIT in math_tables.fit_markdown(str(tmp_path))


def test_a_run_folder_is_scored_as_its_saved_model_answers(tmp_path):
    """``--model_dir``: the run's saved model and vocabulary, and its modules."""
    from tpr_keras.data.mathematics import CharVocabulary
    from tpr_keras.models import MathAnswerer, MathPreprocessor
    from tpr_keras.models.tp_transformer import TPTransformer

    vocabulary = CharVocabulary.build("Is 0123456789<>?TrueFals")
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocabulary),
                                         vocabulary=vocabulary.tokens)
    questions = ["Is 3 > 2?", "Is 10 < 7?"]
    expected = MathAnswerer(model, MathPreprocessor(vocabulary)).generate(questions)
    (tmp_path / "export").mkdir()
    model.save(tmp_path / "export" / "model.keras")
    vocabulary.save(tmp_path / "export" / "vocab.txt")
    (tmp_path / "results.json").write_text(json.dumps(
        {"config": {"modules": "comparison__pair,numbers__place_value"}}))
    answerer, modules = math_fit.load_answerer("ignored", str(tmp_path))
    assert modules == ["comparison__pair", "numbers__place_value"]
    assert answerer.generate(questions) == expected
    with pytest.raises((OSError, ValueError), match="model.keras"):
        math_fit.load_answerer("ignored", str(tmp_path / "missing"))
