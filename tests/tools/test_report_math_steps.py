"""The steps table (tools/report/math_tables.py): the preset's recipe per training length,
from committed results.json."""

import json

from tools.report import math_tables

MODULES = ("arithmetic__add_or_sub", "numbers__place_value")


def write(root, folder, seed, steps, accuracies, seconds):
    path = root / folder / f"tp_transformer-seed{seed}" / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "steps": steps, "train_seconds": seconds, "config": {"seed": seed},
        "interpolate_accuracy_percent": dict(zip(MODULES, accuracies))}))


def test_one_row_per_length_with_the_mean_and_range_over_seeds(tmp_path):
    write(tmp_path, "results/math/focus", 1, 15000, (30.0, 99.0), 3600)
    write(tmp_path, "results/math/focus", 0, 15000, (20.0, 100.0), 1800)
    write(tmp_path, "results/math/steps30000", 0, 30000, (91.0, 100.0), 7200)
    lines = math_tables.steps_markdown(str(tmp_path)).splitlines()
    assert lines[0].startswith("| steps of 128 | seeds | `arithmetic__add_or_sub` | "
                               "`numbers__place_value` | modules ≥ 90 % |")
    # 15,000 steps: seeds in order, means 25.0 and 99.5 with their ranges, 0.75 h per run
    assert lines[2] == ("| 15,000 | 0, 1 | 25.0 (20.0–30.0) | 99.5 (99.0–100.0) | "
                        "1 of 2 | 0.75 |")
    assert lines[3] == "| 30,000 | 0 | 91.0 | 100.0 | 2 of 2 | 2.00 |"
    assert "--steps N" in lines[-1]


def test_no_runs_says_where_they_go(tmp_path):
    assert math_tables.FOCUS in math_tables.steps_markdown(str(tmp_path))
