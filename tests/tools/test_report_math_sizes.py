"""The sizes (tools/report/math_curves.py): the preset's command per model size and schedule,
from committed results.json."""

import json

import pytest

from tools.report import math_curves
from tools.report.math_tables import PRESET_MODULES


def write(root, folder, size, steps, parameters, accuracy, epochs, seed=0, cooldown=0,
          modules=PRESET_MODULES, recipe="size"):
    path = root / "results" / "math" / folder / f"tp_transformer-seed{seed}" / "results.json"
    path.parent.mkdir(parents=True)
    history = [{"epoch": i + 1, "step": step, "seconds": seconds, "valid_error_percent": err}
               for i, (step, seconds, err) in enumerate(epochs)]
    path.write_text(json.dumps({
        "steps": steps, "parameters": parameters, "train_seconds": sum(e[1] for e in epochs),
        "config": {"preset": size, "seed": seed, "cooldown_steps": cooldown,
                   "modules": modules, "recipe": recipe},
        "history": history,
        "command": f"python -m train.math --preset {size} --steps {steps}",
        "interpolate_accuracy_percent": {"arithmetic__add_or_sub": accuracy,
                                         "numbers__place_value": 100.0}}))


def test_longest_run_per_size_ordered_by_weights_with_curves_side_by_side(tmp_path):
    write(tmp_path, "steps30000", "tiny", 30000, 100, 66.6, [(15000, 1800, 30.0),
                                                             (30000, 1800, 20.0)])
    write(tmp_path, "steps60000", "tiny", 60000, 100, 84.6, [(30000, 3600, 20.0),
                                                             (60000, 3600, 8.0)])
    write(tmp_path, "small", "small", 10000, 600, 91.0, [(4500, 3600, 25.0), (9000, 3600, 7.5),
                                                        (10000, 720, 7.0)])
    write(tmp_path, "focus", "tiny", 90000, 100, 10.0, [(90000, 60, 1.0)])  # another command
    write(tmp_path, "steps60000", "tiny", 60000, 100, 10.0, [(60000, 60, 1.0)], seed=1)
    write(tmp_path, "one-module", "small", 99000, 600, 10.0, [(99000, 60, 1.0)],
          modules="comparison__pair")  # not the preset's modules
    write(tmp_path, "authors", "tiny", 99000, 100, 10.0, [(99000, 60, 1.0)],
          recipe="authors_code")  # the authors' training step, not the size's
    lines = math_curves.sizes_markdown(str(tmp_path)).splitlines()
    assert lines[0] == ("| size | learning rate | weights | steps of 128 | training h | "
                        "steps/s | `arithmetic__add_or_sub` | `numbers__place_value` | "
                        "modules ≥ 90 % |")
    assert lines[2] == ("| `tiny` | constant | 100 | 60,000 | 2.00 | 8.3 | 84.6 | 100.0 | "
                        "1 of 2 |")
    assert lines[3] == ("| `small` | constant | 600 | 10,000 | 2.20 | 1.3 | 91.0 | 100.0 | "
                        "2 of 2 |")
    curve = lines[lines.index("| epoch | `tiny` | `small` |") + 2:]
    assert curve[0] == "| 1 | 20.0 (30,000, 1.00 h) | 25.0 (4,500, 1.00 h) |"
    assert curve[1] == "| 2 | 8.0 (60,000, 2.00 h) | 7.5 (9,000, 2.00 h) |"
    assert curve[2] == "| 3 |  | 7.0 (10,000, 2.20 h) |"
    assert "--preset small --steps 10000" in curve[-1]


def test_a_cooled_down_run_is_its_own_row_and_curve_after_its_constant_run(tmp_path):
    """The cooled-down run resumed the constant one, so its history begins with it."""
    constant = [(30000, 3600, 20.0), (60000, 3600, 8.0)]
    write(tmp_path, "tiny-cooldown", "tiny", 66000, 100, 95.4, constant + [(66000, 600, 4.6)],
          cooldown=6000)
    write(tmp_path, "steps60000", "tiny", 60000, 100, 84.6, constant)
    lines = math_curves.sizes_markdown(str(tmp_path)).splitlines()
    assert lines[2].startswith("| `tiny` | constant | 100 | 60,000 | 2.00 |")
    assert lines[3] == ("| `tiny` | cool-down 6,000 | 100 | 66,000 | 2.17 | 8.5 | 95.4 | "
                        "100.0 | 2 of 2 |")
    curve = lines[lines.index("| epoch | `tiny` | `tiny`, cool-down 6,000 |") + 2:]
    assert curve[1] == "| 2 | 8.0 (60,000, 2.00 h) | = |"
    assert curve[2] == "| 3 |  | 4.6 (66,000, 2.17 h) |"


def test_no_runs_says_where_they_go(tmp_path):
    assert "results/math/<size>" in math_curves.sizes_markdown(str(tmp_path))


def test_plot_draws_one_line_per_size(tmp_path):
    pytest.importorskip("matplotlib")
    write(tmp_path, "small", "small", 9000, 600, 91.0, [(4500, 3600, 25.0)])
    write(tmp_path, "steps60000", "tiny", 60000, 100, 84.6, [(60000, 3600, 8.0)])
    path = tmp_path / "sizes.png"
    write(tmp_path, "small-cooldown", "small", 9500, 600, 93.0,
          [(4500, 3600, 25.0), (9500, 600, 20.0)], cooldown=500)
    assert math_curves.plot_sizes(str(tmp_path), str(path)) == 3
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no run"):
        math_curves.plot_sizes(str(tmp_path / "empty"), str(path))
