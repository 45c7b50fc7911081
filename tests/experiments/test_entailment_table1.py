"""experiments/entailment_table1.py: the commands of Table 1's rows and the report of finished
ones."""

import json
import types

import pytest


@pytest.fixture(scope="module")
def table1(load_script):
    return load_script("entailment_table1")


def _args(tmp_path, rows, keep=None):
    return types.SimpleNamespace(runs=str(tmp_path), rows=rows, data_dir="data", epochs=90,
                              patience=20, seed=0, jit_compile=True, jobs=2,
                              keep=str(keep or tmp_path / "kept"), max_train_minutes=None)


def test_every_row_trains_the_paper_protocol(table1, tmp_path):
    commands = {name: table1.command(_args(tmp_path, []), name) for name in table1.ROWS}
    for name, argv in commands.items():
        assert argv[1:3] == ["-m", "train.entailment"]
        assert {"--recipe=paper", "--dim=64", "--epochs=90", "--patience=20", "--jit_compile",
                f"--model_dir={tmp_path / name}", "--data_dir=data"} <= set(argv)
    assert "--roles=8" in commands["tpru8"] and "--arch=bidaf" in commands["bidaf-lstm"]
    assert "--cell=gru" in commands["gru"] and "--roles=32" in commands["bidaf-tpru32"]
    assert not any(a.startswith("--max_train_minutes") for a in commands["gru"])
    budget = _args(tmp_path, [])
    budget.max_train_minutes = 150.0
    assert "--max_train_minutes=150" in table1.command(budget, "bidaf-lstm")


def test_best_epoch_is_the_first_lowest_validation_error(table1):
    history = [{"epoch": 1, "valid_error_percent": 40.0},
               {"epoch": 2, "valid_error_percent": 30.0},
               {"epoch": 3, "valid_error_percent": 30.0},
               {"epoch": 4, "valid_error_percent": 35.0}]
    assert table1.best_epoch(history) == 2
    assert table1.best_epoch([{"epoch": 1}]) is None


def test_report_shows_finished_rows_beside_the_paper(table1, tmp_path, capsys):
    (tmp_path / "tpru32").mkdir()
    accuracy = dict(zip(table1.SPLITS, (74.04, 73.0, 63.26, 62.0, 52.5, 75.0)))
    history = [{"epoch": e, "valid_error_percent": v}
               for e, v in enumerate([45.0, 30.0, 26.0, 27.0], 1)]
    (tmp_path / "tpru32" / "results.json").write_text(json.dumps({
        "accuracy_percent": accuracy, "parameters": 31234, "epochs": 4,
        "stopped": "early_stopping", "history": history, "train_seconds": 5400.0}))
    table1.report(_args(tmp_path, ["tpru32", "lstm"]))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("| parameters | epochs (stop; best) | training h |")
    assert lines[2] == ("| TPRU, 32 roles | 74.0 | 73.0 | 63.3 | 62.0 | 52.5 | 75.0 | 31,234 "
                        "| 4 (patience; 3) | 1.5 |")
    assert lines[3].startswith("| *paper, TPRU, 32 roles* | *73.7* | *73.7* | *62.7* |")
    assert lines[4].startswith("| LSTM | – |") and "not finished" in lines[4]
    pytest.importorskip("matplotlib")
    figure = tmp_path / "figures" / "table1.png"
    table1.plot(_args(tmp_path, ["tpru32", "lstm"]), str(figure))
    header = figure.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")) == (
        750, 450)


def test_a_finished_row_is_kept_skipped_and_reported_from_the_kept_copy(table1, tmp_path, capsys):
    runs, kept = tmp_path / "runs", tmp_path / "kept"
    args = _args(runs, ["lstm", "gru"], keep=kept)
    args.runs = str(runs)
    (runs / "lstm").mkdir(parents=True)
    result = {"accuracy_percent": dict.fromkeys(table1.SPLITS, 70.0), "parameters": 50000,
              "epochs": 90, "stopped": "epochs", "train_seconds": 3600.0,
              "history": [{"epoch": 1, "valid_error_percent": 30.0}]}
    (runs / "lstm" / "results.json").write_text(json.dumps(result))
    assert table1.run_row(args, "lstm") == "skip lstm (finished)"
    assert json.loads((kept / "lstm" / "results.json").read_text()) == result
    # A new sitting: the runs folder is gone, the committed copy is not.
    (runs / "lstm" / "results.json").unlink()
    assert table1.results_path(args, "lstm") == str(kept / "lstm" / "results.json")
    assert table1.run_row(args, "lstm") == "skip lstm (finished)"
    assert table1.results_path(args, "gru") is None and table1.keep_row(args, "gru") is None
    table1.report(args)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("| LSTM | 70.0 |") and "90 (epoch cap; 1) | 1.0 |" in lines[2]
    assert "not finished" in lines[4]
