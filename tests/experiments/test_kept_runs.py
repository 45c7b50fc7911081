"""experiments/kept_runs.py: the seed comes from the folder, and a file that says otherwise fails."""

import json
import os

import pytest

from experiments.kept_runs import load_seed_runs


def _keep(root, folder, config):
    os.makedirs(root / folder)
    with open(root / folder / "results.json", "w") as f:
        json.dump({"config": config}, f)


def test_seeds_from_folder_names_sorted_and_others_skipped(tmp_path):
    _keep(tmp_path, "tpr_rnn-seed10", {"seed": 10})
    _keep(tmp_path, "tpr_rnn-seed2", {})  # no recorded seed: the folder's
    _keep(tmp_path, "tpr_rnn-latest", {"seed": 3})
    runs = load_seed_runs(str(tmp_path / "tpr_rnn-*" / "results.json"))
    assert list(runs) == [2, 10]
    assert runs[10]["config"]["seed"] == 10
    _keep(tmp_path, "seed4", {"seed": 4})
    assert list(load_seed_runs(str(tmp_path / "seed*" / "results.json"))) == [4]


def test_a_recorded_seed_that_disagrees_with_the_folder_is_an_error(tmp_path):
    _keep(tmp_path, "seed1", {"seed": 5})
    with pytest.raises(ValueError, match="config.seed is 5, the folder says 1"):
        load_seed_runs(str(tmp_path / "seed*" / "results.json"))
