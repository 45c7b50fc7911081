"""experiments/memn2n_joint_runs.py: one command per seed, kept runs skipped, only finished
runs kept."""

import json
import os
import types

import pytest


@pytest.fixture(scope="module")
def runs_module(load_script):
    return load_script("memn2n_joint_runs")


def _args(tmp_path):
    return types.SimpleNamespace(runs=str(tmp_path / "runs"), keep=str(tmp_path / "kept"),
                              data_dir="DATA", max_train_minutes=None)


def _write(path, stopped):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"stopped": stopped}, f)


def test_the_commands_differ_only_by_the_seed(runs_module, tmp_path):
    args = _args(tmp_path)
    one, two = runs_module.command(args, 1), runs_module.command(args, 2)
    differ = [(a, b) for a, b in zip(one, two) if a != b]
    assert len(one) == len(two) and differ == [
        ("--seed=1", "--seed=2"),
        (f"--model_dir={args.runs}/seed1", f"--model_dir={args.runs}/seed2")]
    assert "--size=joint_paper" in one and "--task=all" in one and "--model=memn2n" in one
    assert "--max_train_minutes=90" in runs_module.command(
        types.SimpleNamespace(**{**vars(args), "max_train_minutes": 90.0}), 1)


def test_kept_and_finished_seeds_are_skipped_a_budgeted_one_is_not(runs_module, tmp_path):
    args = _args(tmp_path)
    _write(runs_module.kept_path(args, 1), "epochs")  # committed
    _write(os.path.join(args.runs, "seed2", "results.json"), "epochs")  # finished, not kept
    _write(os.path.join(args.runs, "seed3", "results.json"), "time_budget")  # to resume
    assert runs_module.todo(args, [1, 2, 3, 4]) == [3, 4]
    assert os.path.exists(runs_module.kept_path(args, 2))  # kept on the way
    assert not os.path.exists(runs_module.kept_path(args, 3))


def test_dry_run_prints_the_ten_seeds(runs_module, tmp_path, capsys):
    assert runs_module.main(["--dry_run", "--runs", str(tmp_path / "r"),
                             "--keep", str(tmp_path / "k"), "--data_dir", "D"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("--seed=")[1].split()[0] for line in lines] == [
        str(s) for s in range(1, 11)]
