"""tools/report/math_everyday.py: a run over sittings, its sittings and per-module curves."""

import json

from tools.report import math_everyday


def write(root, name="tiny-seed0"):
    path = root / "results" / "math" / "everyday20" / name / "results.json"
    path.parent.mkdir(parents=True)
    key = "interpolate_exact_match_percent"
    history = [{"epoch": 1, "step": 4500, "seconds": 1800, key: {"a__x": 50.0, "b__y": 91.0}},
               {"epoch": 2, "step": 9000, "seconds": 1800, key: {"a__x": 90.5, "b__y": 95.0}}]
    sittings = [{"commit": "0123456789", "dirty": False, "start_step": 0, "end_step": 6000,
                 "train_seconds": 2700, "wall_seconds": 3600,
                 "machine": {"description": "AMD EPYC, 2 cores"}},
                {"commit": "abcdef0123", "dirty": True, "start_step": 6000, "end_step": 9000,
                 "train_seconds": 900, "wall_seconds": 1800,
                 "machine": {"description": "Intel Xeon, 2 cores"}}]
    path.write_text(json.dumps({
        "steps": 9000, "parameters": 267456, "train_seconds": 3600, "history": history,
        "sittings": sittings,
        "config": {"preset": "tiny", "model": "tp_transformer", "batch_size": 128,
                   "steps": 300000, "cooldown_steps": 100000, "curve_questions": 200},
        "command": "python -m train.math --size tiny --sitting_dir results/math/everyday20/x",
        "interpolate_accuracy_percent": {"a__x": 89.9, "b__y": 96.0}}))


def test_sittings_then_a_row_per_module(tmp_path):
    write(tmp_path)
    lines = math_everyday.everyday_markdown(str(tmp_path)).splitlines()
    assert lines[0].startswith("**`tiny-seed0`**: `tiny` tp_transformer, 267,456 weights, "
                               "2 modules, 9,000 steps of 128 so far (1.00 h of training)")
    assert lines[4] == "| 1 | `0123456` | AMD EPYC, 2 cores | 0–6,000 | 0.75 | 1.00 |"
    assert lines[5] == "| 2 | `abcdef0 (dirty)` | Intel Xeon, 2 cores | 6,000–9,000 | 0.25 | 0.50 |"
    assert lines[7] == "| module | 4.5k | 9.0k | final | first ≥ 90 % (step) |"
    # a__x reaches 90 % on its curve at 9,000 steps but its final score is below
    assert lines[9] == "| `a__x` | 50.0 | 90.5 | 89.9 | 9,000 |"
    assert lines[10] == "| `b__y` | 91.0 | 95.0 | 96.0 | 4,500 |"
    assert lines[11] == "| **modules ≥ 90 %** | 1 | 2 | **1 of 2** | |"
    assert "Command (every sitting): `python -m train.math --size tiny" in lines[13]


def test_the_command_note_names_what_earlier_sittings_gave_otherwise():
    latest = "python -m train.math --size tiny --max_train_minutes 95 --seed 0"
    result = {"command": latest, "sittings": [
        {"command": "python -m train.math --size tiny --max_train_minutes 80 --seed 0"},
        {"command": "python -m train.math --size tiny --max_train_minutes 80"},
        {"command": latest}]}
    assert math_everyday.command_note(result) == (
        "the latest sitting; earlier ones had `--max_train_minutes 80`, no `--seed 0`")
    result["sittings"] = [{"command": latest}, {}]
    assert math_everyday.command_note(result) == "every sitting"
    result["command"] = latest + " --length_groups 2"
    result["sittings"] = [{"command": latest}, {"command": result["command"]}]
    assert math_everyday.command_note(result) == (
        "the latest sitting; earlier ones had no `--length_groups 2`")


def test_no_run_yet(tmp_path):
    assert "No run is committed" in math_everyday.everyday_markdown(str(tmp_path))


def test_a_run_at_its_defined_steps_is_called_whole(tmp_path):
    write(tmp_path)
    path = tmp_path / "results" / "math" / "everyday20" / "tiny-seed0" / "results.json"
    result = json.loads(path.read_text())
    result["config"]["steps"] = 9000
    path.write_text(json.dumps(result))
    first = math_everyday.everyday_markdown(str(tmp_path)).splitlines()[0]
    assert "9,000 steps of 128 (the whole run, 1.00 h of training), defined as 9,000" in first
    assert "so far" not in first
