"""experiments/memn2n_matlab_check.py: the 1k subset and the MATLAB log's results.json."""

import os

import pytest

LOG = """warning: function test.m shadows a core library function
questions 20000 vocab 175 max_words 11
1 | train error: 0.65925 | val error: 0.56502 | cost: Inf | t: 48.6
2 | train error: 0.4975 | val error: 0.4869 | cost: 1.423 | t: 97.9
1 | train error: 0.3 | val error: 0.31 | cost: 0.7 | t: 150.0
task 1
test error: 0.016
task 2
test error: 0.5
"""


@pytest.fixture(scope="module")
def check(load_script):
    return load_script("memn2n_matlab_check")


def test_convert_numbers_both_phases_in_one_count(check):
    result = check.convert(LOG, linear_start_epochs=2)
    assert [h["epoch"] for h in result["history"]] == [1, 2, 3]
    assert [h["phase"] for h in result["history"]] == ["linear_start", "linear_start",
                                                       "softmax"]
    assert result["history"][0]["train_loss"] is None  # their log's Inf
    assert result["history"][1]["train_error_percent"] == pytest.approx(49.75)
    assert result["history"][2]["valid_error_percent"] == pytest.approx(31.0)
    assert result["test_error_percent"] == pytest.approx({"1": 1.6, "2": 50.0})


def test_subset_keeps_the_first_questions_of_each_training_file(check, tmp_path):
    source = tmp_path / "data" / "en-10k"
    source.mkdir(parents=True)
    story = "1 Mary went home.\n2 Where is Mary?\thome\t1\n"
    (source / "qa1_x_train.txt").write_text(story * 3)
    (source / "qa1_x_test.txt").write_text(story)
    check.subset(str(tmp_path / "data"), str(tmp_path / "out"), questions=2)
    assert (tmp_path / "out" / "qa1_x_train.txt").read_text() == story * 2
    assert os.path.islink(tmp_path / "out" / "qa1_x_test.txt")
