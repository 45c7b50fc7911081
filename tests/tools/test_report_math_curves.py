"""tools/report/math_curves.py: per-module exact match after every epoch, from committed
results.json."""

import json

import pytest

from tools.report import math_curves
from tools.report.math_tables import PRESET_MODULES


def write(root, folder, size, epochs, final, modules="comparison__pair", curve=True,
          **config):
    """A run whose epochs are ``(step, seconds, exact match %)``."""
    path = root / "results" / "math" / folder / "tp_transformer-seed0" / "results.json"
    path.parent.mkdir(parents=True)
    history = [{"epoch": i + 1, "step": step, "seconds": seconds, "valid_error_percent": 1.0}
               | ({"interpolate_exact_match_percent": {"comparison__pair": score}}
                  if curve else {})
               for i, (step, seconds, score) in enumerate(epochs)]
    path.write_text(json.dumps({
        "steps": epochs[-1][0], "parameters": {"tiny": 100, "small": 600}[size],
        "train_seconds": sum(e[1] for e in epochs), "history": history,
        "config": {"preset": size, "seed": 0, "modules": modules, "curve_questions": 1000,
                   "cooldown_steps": 0, **config},
        "command": f"python -m train.math --preset {size}",
        "interpolate_accuracy_percent": {"comparison__pair": final}}))


def test_a_row_per_run_then_the_curves_side_by_side(tmp_path):
    write(tmp_path, "cmp-tiny", "tiny", [(1000, 1800, 70.0), (2000, 1800, 88.0),
                                         (3000, 1800, 87.5)], final=88.0)
    write(tmp_path, "cmp-small", "small", [(1000, 3600, 80.0), (2000, 3600, 90.5)],
          final=90.5)
    write(tmp_path, "steps60000", "tiny", [(60000, 7200, 0.0)], final=83.8,
          modules=PRESET_MODULES, curve=False)  # no curve: not a row
    lines = math_curves.curves_markdown(str(tmp_path)).splitlines()
    assert lines[2] == ("| `results/math/cmp-small/tp_transformer-seed0` | `small` | 600 | "
                        "comparison__pair | 2,000 | 2.00 | 90.5 | 90.5 (2,000, 2.00 h) | "
                        "90.5 (2,000, 2.00 h) |")
    assert lines[3] == ("| `results/math/cmp-tiny/tp_transformer-seed0` | `tiny` | 100 | "
                        "comparison__pair | 3,000 | 1.50 | 88.0 | not reached | "
                        "88.0 (2,000, 1.00 h) |")
    table = lines[lines.index("`comparison__pair` exact match % after each epoch "
                              "(step, training h):") + 4:]
    assert table[0] == "| 1 | 80.0 (1,000, 1.00 h) | 70.0 (1,000, 0.50 h) |"
    assert table[2] == "| 3 |  | 87.5 (3,000, 1.50 h) |"
    assert "first 1000 interpolate questions" in table[-1]


def test_the_figure_adds_the_four_module_runs_end_points(tmp_path):
    pytest.importorskip("matplotlib")
    write(tmp_path, "cmp-tiny", "tiny", [(1000, 1800, 70.0)], final=70.0)
    write(tmp_path, "steps60000", "tiny", [(60000, 7200, 0.0)], final=83.8,
          modules=PRESET_MODULES, curve=False)
    assert math_curves.end_points(str(tmp_path), "comparison__pair") == [
        ("tiny, constant", 2.0, 83.8)]
    path = tmp_path / "curves.png"
    assert math_curves.plot_curves(str(tmp_path), str(path)) == 1
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no math run"):
        math_curves.plot_curves(str(tmp_path / "empty"), str(path))


def test_no_runs_says_which_flag_makes_them(tmp_path):
    assert "--curve_questions" in math_curves.curves_markdown(str(tmp_path))


def test_a_continued_run_with_a_curve_starts_at_its_parents_hours(tmp_path):
    write(tmp_path, "parent", "tiny", [(80000, 7200, 0.0)], final=87.0,
          modules=PRESET_MODULES, curve=False, cooldown_steps=20000)
    parent = "results/math/parent/tp_transformer-seed0/results.json"
    write(tmp_path, "continued", "tiny", [(5000, 1800, 85.0), (10000, 1800, 88.0)],
          final=88.0, modules=PRESET_MODULES, init_from="p", module_weights="c=6",
          init_from_preset={"results_json": parent})
    run = dict(math_curves.curve_runs(str(tmp_path)))["results/math/continued/tp_transformer-seed0"]
    assert math_curves.hours_before(str(tmp_path), run) == 2.0
    assert math_curves.curve_label(run) == ("tiny (100), 4 module(s), preset continued, "
                                            "c=6, seed 0, per epoch")
    # its end is on its curve, not a second point; the parent (no curve) is one
    assert [p[0] for p in math_curves.end_points(str(tmp_path), "comparison__pair")] == [
        "tiny, cool-down 20,000"]
