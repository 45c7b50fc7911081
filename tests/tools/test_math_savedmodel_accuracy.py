"""tools/math_savedmodel_accuracy.py: per-module exact match through a SavedModel's signature.

An untrained exported model answers some questions; files built from its own answers (some
replaced by wrong ones) have a known accuracy, which the script must measure exactly and
compare with a train.math ``results.json`` module by module.
"""

import json

import pytest
import tensorflow as tf

from tpr_keras.data.mathematics import CharVocabulary
from tpr_keras.export.tp_transformer import export_math_model
from tpr_keras.models import TPTransformer

QUESTIONS = ["What is the tens digit of 2934?", "Round 7.6 to the nearest integer.",
             "Let x = 3. What is x + x?", "What is 2 + 2?", "Is 3 > 4?", "Sort 3, 1, 2."]


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("math_savedmodel_accuracy")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The SavedModel's path and its own answer to each of QUESTIONS."""
    vocab = CharVocabulary.build("".join(QUESTIONS) + "0123456789")
    tf.keras.utils.set_random_seed(0)
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                      vocabulary=vocab.tokens)
    path = export_math_model(model, vocab, tmp_path_factory.mktemp("export"), "math")
    out = tf.saved_model.load(path).signatures["serving_default"](
        question=tf.constant(QUESTIONS))
    answers = [a.decode() for a in out["answer"].numpy()]
    assert all(answers) and not any("\n" in a for a in answers)
    return path, answers


def _write(path, questions, answers):
    path.write_text("".join(f"{q}\n{a}\n" for q, a in zip(questions, answers)))
    return str(path)


def test_folder_per_module_accuracy_and_comparison(script, exported, tmp_path, capsys):
    path, served = exported
    sample = tmp_path / "interpolate"
    sample.mkdir()
    _write(sample / "a.txt", QUESTIONS, served)  # 6 / 6
    _write(sample / "b.txt", QUESTIONS[:4],  # 2 / 4
           served[:2] + ["x" + a for a in served[2:4]])
    _write(sample / "c_big.txt", QUESTIONS[4:], [served[4], "x" + served[5]])  # 1 / 2
    _write(sample / "d.txt", QUESTIONS[:1], served[:1])  # not in the reported results
    results = tmp_path / "results.json"
    results.write_text(json.dumps({
        "interpolate_accuracy_percent": {"a": 100.0, "b": 60.0},
        "extrapolate_accuracy_percent": {"c_big": 50.0}}))
    out_json = tmp_path / "out.json"
    status = script.main([path, str(sample), "--reported", str(results), "--json",
                          str(out_json), "--batch", "4"])
    assert status == 1
    result = json.loads(out_json.read_text())
    modules = result["modules"]
    assert {m: (r["correct"], r["questions"]) for m, r in modules.items()} == {
        "a": (6, 6), "b": (2, 4), "c_big": (1, 2), "d": (1, 1)}
    assert modules["b"]["accuracy_percent"] == 50.0
    assert modules["b"]["difference"] == pytest.approx(-10.0)
    # Binomial standard error of the difference, both samples of 4 questions.
    assert modules["b"]["stderr"] == pytest.approx(100 * (0.25 / 4 + 0.24 / 4) ** 0.5)
    assert modules["b"]["within"] is False and modules["a"]["within"] is True
    assert modules["c_big"]["difference"] == pytest.approx(0.0)
    assert modules["d"]["reported"] is None and modules["d"]["within"] is None
    assert result["outside_tolerance"] == ["b"]
    assert (result["correct"], result["questions"]) == (10, 13)
    assert [w["expected"] for w in modules["b"]["wrong"]] == ["x" + a for a in served[2:4]]
    printed = capsys.readouterr().out
    assert "OUTSIDE 3 points" in printed and "2 of 3 compared module(s)" in printed
    assert "d  " in printed and "not in the reported results" in printed
    # Ten points off is within a tolerance of 10.
    assert script.main([path, str(sample), "--reported", str(results),
                        "--tolerance", "10"]) == 0


def test_single_file_prints_wrong_answers(script, exported, tmp_path, capsys):
    path, served = exported
    questions_file = _write(tmp_path / "numbers__place_value.txt", QUESTIONS[:3],
                            [served[0], "x" + served[1], served[2]])
    out_json = tmp_path / "out.json"
    assert script.main([path, questions_file, "--json", str(out_json)]) == 0
    result = json.loads(out_json.read_text())
    assert result["questions_file"] == questions_file
    assert (result["correct"], result["questions"]) == (2, 3)
    assert result["accuracy_percent"] == pytest.approx(200 / 3)
    assert f"wrong: {QUESTIONS[1]!r} -> {served[1]!r}" in capsys.readouterr().out


@pytest.mark.parametrize("text, message", [
    ("What is 1 + 1?\n2\nWhat is 2 + 2?\n", "bad.txt:3: a question without an answer"),
    ("What is 1 + 1?\n\nWhat is 2 + 2?\n4\n", "bad.txt:2: an empty answer line"),
    ("", "bad.txt: the file is empty"),
])
def test_malformed_file_names_file_and_line(script, tmp_path, capsys, text, message):
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    with pytest.raises(SystemExit) as exit_info:
        script.main(["unused-saved-model", str(bad)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_empty_folder_is_an_error(script, tmp_path, capsys):
    with pytest.raises(SystemExit):
        script.main(["unused-saved-model", str(tmp_path)])
    assert "no <module>.txt files" in capsys.readouterr().err
