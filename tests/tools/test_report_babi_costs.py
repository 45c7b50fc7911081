"""The costs (tools/report/babi.py): a table's hours and CPU-hours from its committed
results.json."""

import json

from tools.report import babi


def _run(root, pattern_dir, name, seconds, machine=None):
    folder = root / "results" / "babi" / pattern_dir / name
    folder.mkdir(parents=True)
    result = {"train_seconds": seconds}
    if machine is not None:
        result["machine"] = machine
    (folder / "results.json").write_text(json.dumps(result))


def test_cpu_hours_follow_each_runs_threads_and_estimate_what_is_left(tmp_path):
    recipe = "recipes/all_tasks_authors_130ep"
    _run(tmp_path, recipe, "tpr_rnn-seed1", 3600, {"cpus": 2, "intra_op_threads": 1})
    _run(tmp_path, recipe, "tpr_rnn-seed2", 7200)  # before the machine record: one thread
    _run(tmp_path, recipe, "tpr_rnn-seed3", 1800, {"cpus": 2, "intra_op_threads": None})
    rows = {row["table"]: row for row in babi.table_costs(tmp_path)}
    table1 = rows[babi.COST_TABLES[0][0]]
    assert table1["runs"] == 3 and table1["needed"] == 5
    assert table1["hours"] == 3.5
    assert table1["cpu_hours"] == 1 + 2 + 0.5 * 2  # default threads: every core
    assert table1["unrecorded"] == 1
    assert table1["cpu_hours_left"] == 2 * 4.0 / 3
    empty = rows[babi.COST_TABLES[5][0]]
    assert empty["runs"] == 0 and empty["cpu_hours_left"] is None
    text = babi.costs_markdown(str(tmp_path))
    assert "| 3 of 5 | 3.5 | 4.0 | 1.33 | 2.7 |" in text
    assert "1 run(s) predate that record" in text


def test_second_recipe_runs_cost_but_do_not_count_as_cells(tmp_path):
    one = {"cpus": 2, "intra_op_threads": 1}
    _run(tmp_path, "paper_runs/long/table2/all", "task1-seed0", 360, one)
    _run(tmp_path, "paper_runs/long/table2/all", "task6-seed0", 360, one)
    _run(tmp_path, "paper_runs/long/table2/all__all_tasks", "task6-seed0", 1080, one)
    name = next(t[0] for t in babi.COST_TABLES if t[0].startswith("Table 2,"))
    row = {r["table"]: r for r in babi.table_costs(tmp_path)}[name]
    assert (row["runs"], row["extra_runs"], row["needed"]) == (2, 1, 60)
    assert row["cpu_hours"] == 0.5
    assert row["cpu_hours_left"] == 58 * 0.5 / 2  # the mean cost a cell, second runs included
    assert "| 2 of 60 (+1 of other recipes) | 0.5 | 0.5 | 0.25 | 14.5 |" in babi.costs_markdown(
        str(tmp_path))
