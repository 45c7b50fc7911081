"""tools/report/babi.py, the linear-start check: our runs and the MATLAB code's, side by side."""

import json
import os

from tools.report import babi


def write(root, name, result):
    folder = os.path.join(root, babi.LS_CHECK, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(result, f)


def test_both_codes_rows_read_their_own_keys(tmp_path):
    ours = {"history": [{"epoch": e, "train_accuracy": 0.5 + e / 200,
                         "train_loss": 2.0 - e / 50} for e in range(1, 91)],
            "test_error_percent": {str(t): (50.0 if t == 16 else 1.0) for t in range(1, 21)},
            "command": "python -m train.babi --seed=1", "source": {"commit": "abcdef1" * 6}}
    matlab = {"code": "MATLAB (Octave)", "command": "octave ls_check.m",
              "history": [{"epoch": e, "train_error_percent": 40.0 - e / 2, "train_loss": 1.0,
                           "valid_error_percent": 41.0} for e in range(1, 31)]}
    write(tmp_path, "ours-seed1", ours)
    write(tmp_path, "matlab-seed1", matlab)
    text = babi.ls_check_markdown(str(tmp_path))
    lines = text.splitlines()
    # sorted by name: the MATLAB run first; its test did not run
    # epochs 2, 10, 30, 45, 60, 90; the MATLAB run stopped after 30, its test did not run
    assert lines[2] == ("| matlab-seed1 | MATLAB (Octave) | 39.0 / 1.00 | 35.0 / 1.00 | "
                        "25.0 / 1.00 | – | – | – | – | – | – | – |")
    # epoch 2: accuracy 0.51 -> 49.0 %, loss 1.96; 20-task mean (19 + 50) / 20 = 3.45
    assert lines[3] == ("| ours-seed1 | ours | 49.0 / 1.96 | 45.0 / 1.80 | 35.0 / 1.40 | "
                        "27.5 / 1.10 | 20.0 / 0.80 | 5.0 / 0.20 | 3.5 | 1.0 | 50.0 | 1 |")
    assert "- ours-seed1: `python -m train.babi --seed=1` (code at `abcdef1`)." in text


def test_no_runs_says_where_they_go(tmp_path):
    assert babi.LS_CHECK in babi.ls_check_markdown(str(tmp_path))
