"""tools/report/modules.py: the per-module tables of train.math runs as Markdown (figures
mode and seeds mode). The runs are ``tests/conftest.py``'s."""

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
