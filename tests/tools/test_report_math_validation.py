"""A math preset's section says which questions chose its kept epoch, from its run's
``results.json``, and gives its fresh-sample scores from ``results/math/heldout/``."""

import json

from tools.report.presets import math_validation_lines, validation_source


def write(root, path, record):
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(json.dumps(record))
    return path


def test_a_run_without_a_validation_record_chose_its_epoch_on_the_test_file(tmp_path):
    old = write(tmp_path, "results/math/old/results.json", {"steps": 5})
    new = write(tmp_path, "results/math/new/results.json",
                {"validation": {"source": "heldout_train", "questions": {"m": 1000}}})
    assert validation_source(str(tmp_path), {"results_json": old}) == "test_interpolate"
    assert validation_source(str(tmp_path), {"results_json": new}) == "heldout_train"
    assert validation_source(str(tmp_path), {"results_json": "results/none.json"}) is None

    text = " ".join(math_validation_lines(str(tmp_path), "focus", {"results_json": old}))
    assert text.startswith("Kept epoch: its run kept the epoch of the lowest validation error "
                           "on the `interpolate/` test files, which the interpolate table")
    assert math_validation_lines(str(tmp_path), "focus", {"results_json": new}) == []
    routed = {"parts": {"default": {"training": {"results_json": new}},
                        "comparison__pair": {"training": {"results_json": old}}}}
    text = " ".join(math_validation_lines(str(tmp_path), "routed", routed))
    assert text.startswith("Kept epoch: the run of its `comparison__pair` decoder kept")


def test_the_fresh_sample_scores_are_the_committed_ones(tmp_path):
    new = write(tmp_path, "results/math/new/results.json",
                {"validation": {"source": "heldout_train"}})
    write(tmp_path, "results/math/heldout/focus-at-20d3540.json", {"modules": {
        "numbers__place_value": {"questions": 2000, "accuracy_percent": 100.0},
        "comparison__pair": {"questions": 2000, "accuracy_percent": 88.25}}})
    write(tmp_path, "results/math/heldout/focus_other.json", {"modules": {}})  # another preset
    [line] = math_validation_lines(str(tmp_path), "focus", {"results_json": new})
    assert "(2,000 interpolate questions per module;" in line
    assert "row `focus-at-20d3540` of the `math-heldout` table" in line
    assert line.endswith("its exact match % is: `comparison__pair` 88.25, "
                         "`numbers__place_value` 100.00.")
