"""tools/report/modules.py: the per-module tables of train.math runs as Markdown (figures
mode and seeds mode). The runs are ``tests/conftest.py``'s."""

import json
import os

from tests.conftest import write_math_run
from tools.report.modules import compare_markdown, seeds_markdown
from tpr_keras.analysis import modules as ma


def test_figures_table_markdown(math_run_pair):
    runs = {"TP-Transformer": ma.load_run(math_run_pair[0]),
            "Transformer": ma.load_run(math_run_pair[1])}
    tables = {regime: ma.compare(runs, regime) for regime in ma.REGIMES}
    lines = compare_markdown(tables, list(runs)).splitlines()
    assert lines[:9] == [
        "## interpolate (3 modules)", "",
        "| module | TP-Transformer | Transformer | difference |", "|---|---:|---:|---:|",
        "| algebra__linear_1d | 99.00 | 95.00 | +4.00 |",
        "| arithmetic__mul | 40.00 | – | – |",
        "| numbers__place_value | 95.50 | 90.00 | +5.50 |",
        "| **mean** | 78.17 | 92.50 | -14.33 |",
        "| **modules > 95 %** | 2 | 0 | +2 |"]
    assert "| numbers__place_value_big | 20.00 | 10.50 | +9.50 |" in lines
    assert "| **modules > 95 %** | 0 | 0 | +0 |" in lines
    assert lines[-1] == "difference: TP-Transformer − Transformer (percentage points)."


def test_seeds_table_markdown(math_seed_runs):
    runs = {label: [ma.load_run(d) for d in dirs]
            for label, dirs in math_seed_runs.items()}
    table = ma.seed_table(runs, "interpolate")
    lines = seeds_markdown({"interpolate": table}, runs).splitlines()
    assert ("| numbers__place_value | 92.00 ± 2.00 | 86.00 ± 1.00 | +6.00 | yes | 4.65 "
            "(dof 2.9") in "\n".join(lines)
    assert any(line.startswith("| comparison__pair | 60.00 ± 10.00 | 58.00 ± 3.00 | +2.00 | no |")
               for line in lines)
    assert ("interpolate: the difference is larger than the seed spread on 2 of 3 modules "
            "(1 with tp_transformer ahead, 1 with transformer ahead); on the mean over "
            "modules: no.") in lines
    assert "| **modules > 95 %** | 1.00 ± 0.00 | 1.00 ± 0.00 | +0.00 | no | – |" in lines


def _focus_folder(root, folder, runs):
    """``results/math/<folder>/<model>-seed<S>`` for each (model, seed, interpolate,
    extrapolate, training seconds) of ``runs``."""
    parent = root / "results" / "math" / folder
    parent.mkdir(parents=True)
    for model, seed, interpolate, extrapolate, seconds in runs:
        path = os.path.join(write_math_run(parent, f"{model}-seed{seed}", model, seed,
                                           interpolate, extrapolate), "results.json")
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        result["train_seconds"] = seconds
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f)


def test_the_recipe_table_compares_the_folders_seed_means_and_takes_the_seeds_committed(
        tmp_path):
    from tools.report.modules import math_focus_recipes_block, math_focus_runs_block

    pv, pair, add, big = ("numbers__place_value", "comparison__pair", "arithmetic__add_or_sub",
                          "numbers__place_value_big")
    _focus_folder(tmp_path, "focus", [
        ("tp_transformer", s, {pv: 90 + 2 * s, pair: 50 + 10 * s, add: 96}, {big: 10 + 10 * s},
         100) for s in range(3)] + [
        ("transformer", s, {pv: 85 + s, pair: 55 + 3 * s, add: 97 + s}, {big: 5}, 200)
        for s in range(3)])
    # Two seeds of each so far; seed 1 is written first, the table lists seeds in order.
    _focus_folder(tmp_path, "focus_authors", [
        ("tp_transformer", 1, {pv: 60}, {big: 3}, 30), ("tp_transformer", 0, {pv: 50}, {big: 1}, 10),
        ("transformer", 1, {pv: 80}, {big: 2}, 40), ("transformer", 0, {pv: 70}, {big: 2}, 20)])
    lines = math_focus_recipes_block(str(tmp_path)).splitlines()
    rows = [line.split(" | ")[1:] for line in lines[2:6]]
    assert rows == [["tp_transformer", "0, 1, 2", "82.67 ± 4.00", "20.00 ± 10.00", "100 |"],
                    ["transformer", "0, 1, 2", "80.67 ± 1.67", "5.00 ± 0.00", "200 |"],
                    ["tp_transformer", "0, 1", "55.00 ± 7.07", "2.00 ± 1.41", "20 |"],
                    ["transformer", "0, 1", "75.00 ± 7.07", "2.00 ± 0.00", "30 |"]]
    # Gaps ± √(s_a²/n_a + s_b²/n_b): size interpolate √(4²/3 + (5/3)²/3) = 2.50, extrapolate
    # √(10²/3) = 5.77; authors_code interpolate √(50/2 + 50/2) = 7.07, extrapolate √(2/2) = 1.
    assert lines[-3].endswith("interpolate +2.00 ± 2.50, extrapolate +15.00 ± 5.77; "
                              "`--recipe authors_code` (lr 1e-4, PyTorch Adam, token mean): "
                              "interpolate -20.00 ± 7.07, extrapolate +0.00 ± 1.00.")
    # Moves: -22 ± √(2.50² + 7.07²) = 7.50 (2.9 errors); -15 ± √(5.77² + 1²) = 5.86 (2.6).
    assert lines[-1] == ("From the first recipe to the second the gap moves by interpolate "
                         "-22.00 ± 7.50 (2.9 standard errors), extrapolate -15.00 ± 5.86 "
                         "(2.6 standard errors).")
    runs = math_focus_runs_block(str(tmp_path), "focus_authors").splitlines()
    assert [line.split(" | ")[0] for line in runs[2:]] == [
        "| tp_transformer seed 0", "| tp_transformer seed 1", "| transformer seed 0",
        "| transformer seed 1"]
