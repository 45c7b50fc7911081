"""experiments/babi_paper_runs.py: which run a Table 2 / Table 3 cell reports, and what it trains.

The second recipe (``--fallback_above``) must be chosen on the validation error alone; these
tests build finished runs' ``results.json`` files by hand and check the choice, the commands
and the report.
"""

import json
import os
import shutil
import types

import pytest


@pytest.fixture(scope="module")
def runs_module(load_script):
    return load_script("babi_paper_runs")


def _args(tmp_path, fallback_above=1.0, table=2):
    return types.SimpleNamespace(runs=str(tmp_path), table=table, protocol="long",
                              data_dir=None, fallback_above=fallback_above)


def _finish(module, args, task, seed, valid, test, recipe="paper", operations="all", epochs=50):
    folder = module.run_dir(args.runs, args.table, operations, task, seed, args.protocol, recipe)
    os.makedirs(folder)
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump({"valid_error_percent": {str(task): valid},
                   "test_error_percent": {str(task): test},
                   "epochs": epochs, "stopped": "early_stopping"}, f)


def test_second_recipe_only_above_the_validation_threshold(runs_module, tmp_path):
    args = _args(tmp_path)
    _finish(runs_module, args, 17, 0, valid=25.8, test=36.6)
    _finish(runs_module, args, 17, 1, valid=0.9, test=9.0)  # test is bad, validation is not
    assert runs_module.needs_fallback(args, "all", 17, 0)
    assert not runs_module.needs_fallback(args, "all", 17, 1)
    assert not runs_module.needs_fallback(args, "all", 17, 2)  # not finished
    args.fallback_above = None
    assert not runs_module.needs_fallback(args, "all", 17, 0)


def test_the_lower_validation_error_is_reported_whatever_the_test_error(runs_module, tmp_path):
    args = _args(tmp_path)
    _finish(runs_module, args, 17, 0, valid=25.8, test=36.6)
    result, recipe = runs_module.selected(args, "all", 17, 0)
    assert (recipe, result["test_error_percent"]["17"]) == ("paper", 36.6)  # no second run yet
    _finish(runs_module, args, 17, 0, valid=0.9, test=1.5, recipe="all_tasks")
    result, recipe = runs_module.selected(args, "all", 17, 0)
    assert (recipe, result["test_error_percent"]["17"]) == ("all_tasks", 1.5)

    # A second run that validates worse is not reported, even with a better test error.
    _finish(runs_module, args, 6, 1, valid=39.4, test=43.1)
    _finish(runs_module, args, 6, 1, valid=45.0, test=0.5, recipe="all_tasks")
    assert runs_module.selected(args, "all", 6, 1)[1] == "paper"
    # A tie keeps the paper's recipe.
    _finish(runs_module, args, 18, 0, valid=11.0, test=8.8)
    _finish(runs_module, args, 18, 0, valid=11.0, test=1.0, recipe="all_tasks")
    assert runs_module.selected(args, "all", 18, 0)[1] == "paper"
    # Without --fallback_above the second run is ignored.
    args.fallback_above = None
    assert runs_module.selected(args, "all", 17, 0)[1] == "paper"


def test_commands_of_the_two_recipes(runs_module, tmp_path):
    args = _args(tmp_path)
    paper = runs_module.command(args, "all", 17, 0)
    second = runs_module.command(args, "write+move", 17, 0, "all_tasks")
    assert "--learning_rate=0.001" not in paper and "--epochs=200" in paper
    assert f"--model_dir={tmp_path}/long/table2/write_move__all_tasks/task17-seed0" in second
    for flag in ("--learning_rate=0.001", "--beta_1=0.9", "--beta_2=0.999", "--batch_size=32"):
        assert flag in second
    # The doubled cap comes after the protocol's, so absl's last value (400) wins.
    epochs = [a for a in second if a.startswith("--epochs=")]
    assert epochs == ["--epochs=200", "--epochs=400"]


def test_report_marks_the_chosen_recipe_and_leaves_task_3_out_of_the_19_task_mean(
        runs_module, tmp_path, capsys):
    args = _args(tmp_path)
    _finish(runs_module, args, 3, 0, valid=67.0, test=76.1)
    _finish(runs_module, args, 3, 0, valid=62.0, test=66.1, recipe="all_tasks")
    _finish(runs_module, args, 17, 0, valid=25.8, test=36.6)
    _finish(runs_module, args, 17, 0, valid=0.2, test=0.7, recipe="all_tasks", epochs=400)
    _finish(runs_module, args, 1, 0, valid=0.0, test=0.1)
    out = "\n".join(runs_module.report_lines(args, [1, 3, 17], [0]))
    assert "| 17 | s0: 0.7 (400 ep, patience, all_tasks recipe) |" in out
    assert "| 1 | s0: 0.1 (50 ep, patience) |" in out
    assert "Failed (> 5 %) by the best seed: 1 (3; paper 0)" in out
    # (0.1 + 66.1 + 0.7) / 3; the paper over the same tasks: bests (0.0 + 1.2 + 0.4) / 3,
    # means (0.02 + 1.78 + 0.9) / 3
    assert "mean of the best runs 22.30 % (paper 0.53 over the same tasks)" in out
    assert "mean of the seed means 22.30 % (paper 0.90)" in out
    # (0.1 + 0.7) / 2 without task 3, beside the paper's (0.02 + 0.9) / 2 and (0.0 + 0.4) / 2
    assert ("mean of the best runs 0.40 % (paper 0.20), mean of the seed means 0.40 % "
            "(paper 0.46) over 2 tasks") in out


def test_a_run_kept_under_keep_is_skipped_on_a_machine_without_its_run_folder(runs_module,
                                                                               tmp_path):
    args = _args(tmp_path / "runs")
    args.keep = str(tmp_path / "results")
    assert runs_module.load(args, "all", 5, 1) is None
    _finish(runs_module, args, 5, 1, valid=0.4, test=0.7)
    kept = runs_module.keep_result(args, "all", 5, 1)
    assert kept.startswith(args.keep) and kept.endswith("task5-seed1/results.json")
    shutil.rmtree(args.runs)  # a new machine: runs/ is gone, the committed JSON is not
    assert runs_module.load(args, "all", 5, 1) == 0.7
    assert runs_module.load(args, "all", 5, 2) is None


def test_the_report_block_reads_only_the_committed_json(runs_module, tmp_path):
    committed = _args(tmp_path / "results" / "babi" / "paper_runs")
    _finish(runs_module, committed, 1, 0, valid=0.0, test=0.2)
    _finish(runs_module, committed, 1, 1, valid=0.0, test=0.4)
    _finish(runs_module, committed, 17, 0, valid=25.8, test=36.6)
    _finish(runs_module, committed, 17, 0, valid=0.2, test=0.7, recipe="all_tasks", epochs=400)
    # a run folder of this machine is not read
    _finish(runs_module, _args(tmp_path / "runs" / "paper"), 2, 0, valid=0.0, test=0.0)
    text = runs_module.markdown(str(tmp_path), 2)
    assert text.startswith("3 of 60 runs committed (seeds 0, 1, 2, protocol `long`")
    assert "| 1 | s0: 0.2 (50 ep, patience); s1: 0.4 (50 ep, patience) | 0.2 | 0.30 ± 0.10 |" in text
    assert "| 17 | s0: 0.7 (400 ep, patience, all_tasks recipe) |" in text
    assert "| 2 | – |" in text
    table3 = runs_module.markdown(str(tmp_path), 3)
    assert table3.startswith("0 of 72 runs committed")


def test_a_third_run_without_early_stopping_where_both_recipes_stay_above(runs_module,
                                                                          tmp_path):
    args = _args(tmp_path)
    _finish(runs_module, args, 16, 0, valid=55.0, test=49.3)
    assert not runs_module.needs_no_stop(args, "all", 16, 0)  # the second has not run yet
    _finish(runs_module, args, 16, 0, valid=52.0, test=52.0, recipe="all_tasks")
    assert runs_module.needs_no_stop(args, "all", 16, 0)
    _finish(runs_module, args, 16, 1, valid=9.0, test=9.0)
    _finish(runs_module, args, 16, 1, valid=0.5, test=0.4, recipe="all_tasks")
    assert not runs_module.needs_no_stop(args, "all", 16, 1)  # the second one is below
    _finish(runs_module, args, 16, 0, valid=0.4, test=0.6, recipe="no_stop", epochs=140)
    assert not runs_module.needs_no_stop(args, "all", 16, 0)  # it has run
    result, recipe = runs_module.selected(args, "all", 16, 0)
    assert (recipe, result["test_error_percent"]["16"]) == ("no_stop", 0.6)
    # It is reported only when it validates strictly better than both.
    _finish(runs_module, args, 3, 0, valid=60.0, test=65.0)
    _finish(runs_module, args, 3, 0, valid=58.0, test=66.0, recipe="all_tasks")
    _finish(runs_module, args, 3, 0, valid=58.0, test=40.0, recipe="no_stop")
    assert runs_module.selected(args, "all", 3, 0)[1] == "all_tasks"
    assert "s0: 0.6 (140 ep, patience, no_stop recipe)" in "\n".join(
        runs_module.report_lines(args, [16], [0]))


def test_the_third_recipe_is_the_papers_with_patience_as_long_as_the_cap(runs_module,
                                                                         tmp_path):
    args = _args(tmp_path)
    third = runs_module.command(args, "all", 16, 0, "no_stop")
    assert f"--model_dir={tmp_path}/long/table2/all__no_stop/task16-seed0" in third
    assert not any(a.startswith(("--learning_rate", "--batch_size")) for a in third)
    assert [a for a in third if a.startswith("--patience=")] == ["--patience=60",
                                                                "--patience=200"]
    assert [a for a in third if a.startswith("--epochs=")] == ["--epochs=200"]


def test_a_compared_recipe_sits_beside_the_reported_and_the_paper_recipe_alone(
        runs_module, tmp_path):
    args = _args(tmp_path, table=3)
    args.keep = str(tmp_path / "kept")
    for seed, (valid, test) in enumerate([(6.0, 7.0), (7.0, 8.0)]):
        _finish(runs_module, args, 10, seed, valid, test, operations="write")
    # seed 0 is rescued by the fallback recipe, which validates better
    _finish(runs_module, args, 10, 0, 1.0, 2.0, recipe="all_tasks", operations="write")
    _finish(runs_module, args, 10, 0, 5.5, 6.5, recipe="authors_step", operations="write")
    rows = {line.split(" | ")[2]: line for line in runs_module.comparison_lines(
        args, [10], [0, 1], ["write"], ["authors_step", "authors_code"])[2:]}
    assert set(rows) == {"reported", "paper", "authors_step"}  # no authors_code run: no row
    assert "s0: 2.0 (50 ep, patience, all_tasks recipe)" in rows["reported"]
    assert "| 5.0 | 1 of 2 | failed |" in rows["reported"]  # mean of 2.0 and 8.0
    assert "| 7.5 | 2 of 2 |" in rows["paper"] and "all_tasks" not in rows["paper"]
    assert "s0: 6.5 (50 ep, patience) | 6.5 | 1 of 1 |" in rows["authors_step"]
    cmd = runs_module.command(args, "write", 10, 0, "authors_step")
    assert "--recipe=authors_code" in cmd and "--learning_rate=0.008" in cmd
    assert cmd[cmd.index("--recipe=authors_code") - 1].startswith("--min_delta_loss")
