"""The evaluation tables (what presets record and train.evaluate recomputes) against an
independent computation of the same numbers, on tiny files made here."""

import numpy as np
import pytest

from tpr_keras.data import entailment
from tpr_keras.data.babi import load_babi
from tpr_keras.models import TPRRNN, PlainEntailmentModel, TPTransformer
from tpr_keras.training import evaluation

PAIRS = [("(a&b)", "a", 1), ("a", "(a&b)", 0), ("(a|b)", "(b|a)", 1), ("a", "~a", 0),
         ("(a>b)", "(~b>~a)", 1), ("(c&d)", "(c|d)", 1), ("(c|d)", "(c&d)", 0)]


@pytest.fixture(scope="module")
def babi_dir(tmp_path_factory, babi_task1_writer):
    root = tmp_path_factory.mktemp("babi") / "en-10k"
    root.mkdir()
    for task, name in ((1, "single-supporting-fact"), (2, "two-supporting-facts")):
        babi_task1_writer(root / f"qa{task}_{name}_train.txt", 10, task)
        babi_task1_writer(root / f"qa{task}_{name}_test.txt", 12, 10 + task)
    return root.parent


def test_babi_table_matches_the_models_own_answers(babi_dir):
    data = load_babi(babi_dir, tasks=(1, 2), download=False)
    model = TPRRNN.from_preset("single_task", vocabulary_size=len(data.vocab),
                               max_words=data.max_words)
    table = evaluation.babi_table(model, data.vocab, babi_dir, tasks=(1, 2))
    test = data.test
    story = np.zeros((len(test), test.max_story_length, data.max_words), "int32")
    for i in range(len(test)):  # the loader's own dense form, one sample at a time
        rows = test.story(i)
        story[i, :len(rows)] = rows
    predicted = np.argmax(model.predict({"story": story, "question": test.questions},
                                        verbose=0), -1)
    for task in (1, 2):
        mine = test.tasks == task
        expected = 100.0 * np.mean(predicted[mine] != test.answers[mine])
        assert table["test_error_percent"][str(task)] == pytest.approx(expected, abs=1e-9)
        assert table["questions"][str(task)] == 36
    assert table["test_error_percent_mean"] == pytest.approx(
        np.mean(list(table["test_error_percent"].values())))
    assert table["failed_tasks"] == sum(e > 5 for e in table["test_error_percent"].values())

    sample = evaluation.babi_table(model, data.vocab, babi_dir, tasks=(1, 2), limit=5)
    assert sample["questions"] == {"1": 5, "2": 5}
    first = {t: np.flatnonzero(test.tasks == t)[:5] for t in (1, 2)}
    for task, rows in first.items():
        expected = 100.0 * np.mean(predicted[rows] != test.answers[rows])
        assert sample["test_error_percent"][str(task)] == pytest.approx(expected)


def test_babi_table_names_a_missing_test_file(babi_dir):
    data = load_babi(babi_dir, tasks=(1,), download=False)
    model = TPRRNN.from_preset("single_task", vocabulary_size=len(data.vocab),
                               max_words=data.max_words)
    with pytest.raises(FileNotFoundError, match=r"qa3_\*_test.txt"):
        evaluation.babi_table(model, data.vocab, babi_dir, tasks=(1, 3))


def test_entailment_table_matches_the_logits(tmp_path):
    lines = [f"{a},{b},{label},0,0,0" for a, b, label in PAIRS]
    for name in evaluation.ENTAILMENT_SPLITS:
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    model = PlainEntailmentModel.from_preset("plain_tpru", units=8, num_roles=4, seed=1)
    table = evaluation.entailment_table(model, tmp_path, limit=6)
    data = entailment.load_entailment_split("validate", tmp_path)
    logits = np.concatenate([np.reshape(model.predict(f, verbose=0), -1)
                             for f, _ in entailment.make_dataset(data, 256)])
    expected = 100.0 * np.mean((logits[:6] > 0) == (data.labels[:6] == 1))
    assert table["accuracy_percent"]["validate"] == pytest.approx(expected)
    assert table["pairs"] == {name: 6 for name in evaluation.ENTAILMENT_SPLITS}


def test_math_table_scores_greedy_answers_per_module(tmp_path):
    for regime, module in (("train-easy", "numbers__place_value"),
                           ("interpolate", "numbers__place_value"),
                           ("extrapolate", "numbers__place_value_big")):
        path = tmp_path / regime / f"{module}.txt"
        path.parent.mkdir(parents=True)
        path.write_text("".join(f"What is the units digit of {n}?\n{n % 10}\n"
                                for n in range(100, 112)))
    from tpr_keras.data.mathematics import CharVocabulary

    vocab = CharVocabulary.build(["What is the units digit of 0123456789?"])
    model = TPTransformer.from_preset("tiny", vocabulary_size=len(vocab))
    table = evaluation.math_table(model, vocab, tmp_path, ["numbers__place_value"], limit=8)
    assert list(table["interpolate_accuracy_percent"]) == ["numbers__place_value"]
    assert list(table["extrapolate_accuracy_percent"]) == ["numbers__place_value_big"]
    for regime in ("interpolate", "extrapolate"):
        score = next(iter(table[f"{regime}_accuracy_percent"].values()))
        assert score % 12.5 == pytest.approx(0)  # 8 questions
        assert table["summary"][regime]["modules"] == 1


def test_compare_tables_flags_moved_and_missing_rows():
    recorded = {"test_error_percent": {"1": 1.0, "2": 2.0}, "test_error_percent_mean": 1.5,
                "failed_tasks": 0}
    same = {"test_error_percent": {"1": 1.04, "2": 2.0}, "test_error_percent_mean": 1.52,
            "failed_tasks": 0}
    assert all(ok for *_, ok in evaluation.compare_tables(same, recorded))
    moved = dict(same, test_error_percent={"1": 1.2, "2": 2.0})
    bad = [row for row, *_, ok in evaluation.compare_tables(moved, recorded) if not ok]
    assert bad == ["task 1 test error %"]
    missing = dict(same, test_error_percent={"1": 1.0})
    bad = [row for row, *_, ok in evaluation.compare_tables(missing, recorded) if not ok]
    assert bad == ["task 2 test error %"]
