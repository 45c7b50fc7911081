"""tools/babi_table1.py: bAbI Table 1 from synthetic all-tasks results.json files."""

import json

import pytest

from tools import babi_table1


def _write(root, model, seed, errors, **extra):
    """A results.json as ``python -m train.babi --task all`` writes it (the fields used)."""
    folder = root / "results" / "babi" / "all_tasks" / f"{model}-seed{seed}"
    folder.mkdir(parents=True)
    result = {"test_error_percent": {str(t): e for t, e in zip(babi_table1.TASKS, errors)},
              "valid_error_percent": {str(t): 0.0 for t in babi_table1.TASKS},
              "test_error_percent_mean": sum(errors) / 20, "epochs": 40,
              "stopped": "early_stopping", "train_seconds": 7200.0, "history": [],
              "config": {"seed": seed, "task": "all", "model": model},
              "source": {"commit": "0123456789abcdef" * 2 + "01234567", "dirty": False},
              **extra}
    (folder / "results.json").write_text(json.dumps(result))


def _rows(text):
    return {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()
            if line.startswith("| ")}


def test_no_committed_run_gives_the_command(tmp_path):
    text = babi_table1.markdown(str(tmp_path), "tpr_rnn")
    assert text.startswith("No all-tasks TPR-RNN run is committed yet")
    assert "python -m train.babi --task all --model tpr_rnn --seed 0" in text
    assert "cp runs/babi-all/tpr_rnn-seed0/results.json results/babi/all_tasks/tpr_rnn-seed0/" in text
    assert "|" not in text.replace("`", "")  # no table without runs


def test_one_seed_says_so_and_gives_no_spread(tmp_path):
    errors = [0.0] * 20
    errors[2], errors[18], errors[6] = 16.0, 4.5, 2.5     # task 3 fails, 19 and 7 do not
    _write(tmp_path, "tpr_rnn", 0, errors)
    text = babi_table1.markdown(str(tmp_path), "tpr_rnn")
    assert text.startswith("**TPR-RNN, 1 seed (0): every number rests on one seed.**")
    assert "task 3 trains on the 1,000 official questions available here" in text
    rows = _rows(text)
    assert rows["task"] == "| task | seed 0 | paper best | paper mean ± std |"
    assert rows["3 (1k train)"] == "| 3 (1k train) | 16.0 | 2.20 | 4.14 ± 1.85 |"
    assert rows["19"] == "| 19 | 4.5 | 1.20 | 6.96 ± 7.03 |"
    assert rows["**mean over tasks**"] == "| **mean over tasks** | **1.15** | 0.78 | 1.34 ± 0.52 |"
    assert rows["**failed tasks (> 5 %)**"] == "| **failed tasks (> 5 %)** | 1 | – | 0.86 ± 1.11 |"
    assert ("- seed 0: 40 epochs (patience), 2.0 h of training; failed tasks: 3; "
            "code at `0123456`.") in text


def test_three_seeds_give_best_and_sample_std(tmp_path):
    base = [0.0] * 20
    for seed, (t3, t17) in enumerate([(16.0, 1.0), (10.0, 6.0), (13.0, 0.4)]):
        errors = list(base)
        errors[2], errors[16] = t3, t17
        _write(tmp_path, "memn2n", seed, errors)
    text = babi_table1.markdown(str(tmp_path), "memn2n")
    assert text.startswith("**MemN2N, 3 seeds (0, 1, 2).**")
    assert "rests on one seed" not in text
    rows = _rows(text)
    assert rows["task"] == ("| task | seed 0 | seed 1 | seed 2 | best seed | mean ± std "
                            "| paper (PE LS RN joint) |")
    # task 3: mean 13, sample std 3 (ddof = 1); the population std would be 2.45.
    assert rows["3 (1k train)"] == "| 3 (1k train) | 16.0 | 10.0 | 13.0 | 10.0 | 13.00 ± 3.00 | 6.8 |"
    assert rows["17"].endswith("| 1.0 | 6.0 | 0.4 | 0.4 | 2.47 ± 3.07 | 41.8 |")
    # means over tasks: 0.85, 0.80, 0.67 -> best seed 2
    assert rows["**mean over tasks**"] == ("| **mean over tasks** | **0.85** | **0.80** | **0.67** "
                                           "| 0.67 (seed 2) | 0.77 ± 0.09 | 7.5 |")
    # failed: seed 0 {3}, seed 1 {3, 17}, seed 2 {3}
    assert rows["**failed tasks (> 5 %)**"] == ("| **failed tasks (> 5 %)** | 1 | 2 | 1 "
                                                "| 1 (seed 2) | 1.33 ± 0.58 | 6 |")
    assert "- seed 1: 40 epochs (patience), 2.0 h of training; failed tasks: 3, 17;" in text


def test_a_seed_that_disagrees_with_its_folder_is_refused(tmp_path):
    _write(tmp_path, "tpr_rnn", 1, [0.0] * 20)
    path = tmp_path / "results/babi/all_tasks/tpr_rnn-seed1/results.json"
    result = json.loads(path.read_text())
    result["config"]["seed"] = 4
    path.write_text(json.dumps(result))
    with pytest.raises(ValueError, match="config.seed is 4, the folder says 1"):
        babi_table1.markdown(str(tmp_path), "tpr_rnn")


def test_a_missing_task_is_refused(tmp_path):
    _write(tmp_path, "tpr_rnn", 0, [0.0] * 20)
    path = tmp_path / "results/babi/all_tasks/tpr_rnn-seed0/results.json"
    result = json.loads(path.read_text())
    del result["test_error_percent"]["20"]
    path.write_text(json.dumps(result))
    with pytest.raises(ValueError, match=r"no test error for task\(s\) \[20\]"):
        babi_table1.markdown(str(tmp_path), "tpr_rnn")


def test_the_paper_columns_are_the_cited_tables():
    """Spot checks against the papers' tables (the constants are citations)."""
    assert babi_table1.PAPER["tpr_rnn"]["task"](17) == ("0.60", "3.44 ± 3.16")
    assert babi_table1.PAPER["tpr_rnn"]["task"](19) == ("1.20", "6.96 ± 7.03")
    assert babi_table1.MEMN2N_TABLE3[19] == 75.7
    assert sum(babi_table1.MEMN2N_TABLE3.values()) / 20 == pytest.approx(7.49)
    assert sum(v > 5 for v in babi_table1.MEMN2N_TABLE3.values()) == 6


def test_plot_draws_each_seeds_validation_curve(tmp_path):
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match="no committed all-tasks run"):
        babi_table1.plot_curves(str(tmp_path), str(tmp_path / "none.png"))
    history = [{"epoch": e, "seconds": 1800.0, "valid_error_percent": 10.0 / e}
               for e in range(1, 5)]
    _write(tmp_path, "tpr_rnn", 0, [1.0] * 20, history=history)
    _write(tmp_path, "tpr_rnn", 1, [1.0] * 20, history=history[:2])
    path = tmp_path / "curve.png"
    assert babi_table1.plot_curves(str(tmp_path), str(path)) == 2
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
