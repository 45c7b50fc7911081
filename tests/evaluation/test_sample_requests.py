"""tpr_keras.evaluation.sample_requests: a preset's test questions as raw-text requests (one per
table row), the accuracy each row records, and the scoring of any answerer on them."""

import pytest

from tpr_keras.evaluation.sample_requests import (
    accuracy_rows,
    recorded_accuracy,
    sample_requests,
)


def test_babi_requests_are_the_test_stories_as_text(tmp_path, babi_task1_writer):
    (tmp_path / "en-10k").mkdir()
    for split, seed in (("train", 1), ("test", 0)):  # the folder is found by its train files
        babi_task1_writer(tmp_path / "en-10k" / f"qa1_single-supporting-fact_{split}.txt", 2,
                          seed)
    meta = {"task": "babi", "evaluation_options": {"tasks": [1]}}
    [(row, inputs, expected)] = sample_requests(meta, tmp_path, limit=4)
    assert row == "1" and len(expected) == 4  # 2 stories of 3 questions: the first 4
    assert len(inputs["story"]) == len(inputs["question"]) == 4
    # the story of a question: the sentences before it, tokenized, one per line
    first = inputs["story"][0].split("\n")
    assert len(first) == 2 and all(s.endswith(" .") and s == s.lower() for s in first)
    assert inputs["question"][0].startswith("where is ") and inputs["question"][0].endswith("?")
    assert inputs["story"][1].split("\n")[:2] == first  # the second question's story goes on
    assert len(sample_requests(meta, tmp_path, limit=None)[0][2]) == 6


def test_each_row_has_the_recorded_accuracy_of_its_table():
    assert recorded_accuracy({"test_error_percent": {"3": 12.5}}, "babi", "3") == 87.5
    assert recorded_accuracy({"accuracy_percent": {"test_big": 91.0}}, "entailment",
                             "test_big") == 91.0
    table = {"extrapolate_accuracy_percent": {"numbers__place_value_big": 40.0}}
    assert recorded_accuracy(table, "math", "extrapolate/numbers__place_value_big") == 40.0
    with pytest.raises(ValueError, match="unknown task 'vision'"):
        sample_requests({"task": "vision"}, ".", None)


def test_accuracy_rows_score_any_answerer():
    requests = [("a", {"question": ["q1", "q2", "q3", "q4"]}, ["1", "2", "3", "4"]),
                ("b", {"question": ["q5"]}, [True])]
    answers = {"q1": "1", "q2": "2", "q3": "x", "q4": "4", "q5": False}
    rows = accuracy_rows(requests, lambda inputs: [answers[q] for q in inputs["question"]])
    assert rows == [("a", 75.0, 4), ("b", 0.0, 1)]
    with pytest.raises(ValueError, match="row a: 1 answers to 4 questions"):
        accuracy_rows(requests, lambda inputs: ["1"])
