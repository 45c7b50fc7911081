"""experiments/memn2n_joint_runs.py: the run §4.2 reports is the one with the lowest training error."""

import json
import os

import pytest

from experiments import memn2n_joint_runs as memn2n_joint


def result(seed, train, test, test_16=None, stopped="epochs"):
    """A finished joint run's results.json: ``test`` % on every task (task 16 apart)."""
    errors = {str(t): float(test) for t in range(1, 21)}
    if test_16 is not None:
        errors["16"] = float(test_16)
    return {"train_error_percent_mean": train, "test_error_percent": errors,
            "valid_error_percent": {k: v + 1.0 for k, v in errors.items()},
            "epochs": 50, "stopped": stopped, "train_seconds": 3600.0,
            "config": {"seed": seed}}


def keep(root, seed, run):
    folder = os.path.join(root, memn2n_joint.RESULTS, f"seed{seed}")
    os.makedirs(folder)
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(run, f)


def test_the_pick_is_the_lowest_training_error_not_the_test_error():
    runs = {1: result(1, train=4.0, test=1.0),  # best on test, worse on training
            2: result(2, train=2.5, test=9.0),
            3: result(3, train=3.0, test=2.0)}
    assert memn2n_joint.pick(runs) == 2
    runs[4] = result(4, train=2.5, test=0.0)  # a tie: the lower seed
    assert memn2n_joint.pick(runs) == 2
    with pytest.raises(ValueError, match="no training error"):
        memn2n_joint.pick({5: {"test_error_percent": {}}})


def test_summary_means_without_task_3_and_the_target():
    run = result(1, train=1.0, test=5.0, test_16=2.0)
    run["test_error_percent"]["3"] = 100.0  # trains on a tenth of the data here
    s = memn2n_joint.summary(run)
    assert s["mean_19"] == pytest.approx((18 * 5.0 + 2.0) / 19)
    assert s["mean_20"] == pytest.approx((18 * 5.0 + 2.0 + 100.0) / 20)
    assert s["task_16"] == 2.0 and s["failed"] == [3]
    assert memn2n_joint.meets_target(run)
    assert not memn2n_joint.meets_target(result(1, 1.0, test=5.0, test_16=48.0))
    assert not memn2n_joint.meets_target(result(1, 1.0, test=8.0, test_16=0.0))  # 7.58


def test_markdown_lists_every_run_and_details_the_picked_one(tmp_path):
    assert "No joint_paper run is committed yet" in memn2n_joint.markdown(str(tmp_path))
    keep(tmp_path, 1, result(1, train=4.0, test=1.0))
    keep(tmp_path, 7, result(7, train=0.5, test=6.0, test_16=50.0))
    text = memn2n_joint.markdown(str(tmp_path))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "|" in line[2:]]
    assert rows[1].startswith("| 1 | 50 (epochs) | 4.00 |")
    assert rows[2].startswith("| **7** | **50 (epochs)** | **0.50** |")
    assert "seed 7 of 2" in text and "does not meet" in text
    assert "| 16 | 50.0 | 0.2 |" in text  # the picked run beside the paper's column


def test_a_folder_and_its_recorded_seed_must_agree(tmp_path):
    keep(tmp_path, 2, result(3, train=1.0, test=1.0))
    with pytest.raises(ValueError, match="config.seed is 3"):
        memn2n_joint.load_runs(str(tmp_path))
