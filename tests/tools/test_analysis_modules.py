"""``python -m tools.analysis.modules`` on finished train.math runs: Figures 4/5 and Table 1 of
two runs, the seed comparison, and the command lines it refuses. The runs are
``tests/conftest.py``'s; the tables themselves are tested in ``tests/analysis``."""

import json

import pytest

from tools.analysis import modules as command

PNG = b"\x89PNG\r\n\x1a\n"


def test_figures_command_writes_pngs_markdown_and_json(math_run_pair, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pair = math_run_pair
    out, extra = tmp_path / "out", tmp_path / "numbers.json"
    assert command.main(["--runs", f"TP-Transformer={pair[0]}",
                         f"--runs=Transformer={pair[1]}/results.json", "--out", str(out),
                         "--json", str(extra)]) == 0
    for name in ("interpolate.png", "extrapolate.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG and len(data) > 5000
    table = (out / "modules.md").read_text()
    assert capsys.readouterr().out == table + "\n"
    result = json.loads((out / "modules.json").read_text())
    assert json.loads(extra.read_text()) == result
    assert result["mode"] == "figures"
    assert result["regimes"]["interpolate"]["accuracy"]["Transformer"]["arithmetic__mul"] is None
    assert result["regimes"]["extrapolate"]["summary"]["TP-Transformer"]["mean"] == 20.0
    # A label that names a model must be that run's model: swapped directories are refused.
    with pytest.raises(SystemExit) as error:
        command.main(["--runs", f"transformer={pair[0]}", "--runs", f"tp_transformer={pair[1]}",
                      "--out", str(out)])
    assert error.value.code == 2
    assert "config.model is 'tp_transformer', but it is labelled 'transformer'" in (
        capsys.readouterr().err)


def test_seeds_command_refuses_swapped_labels_and_writes_nothing(math_seed_runs, tmp_path):
    tp, tf = math_seed_runs["tp_transformer"], math_seed_runs["transformer"]
    with pytest.raises(SystemExit) as error:
        command.main(["--seeds", "tp_transformer=" + ",".join(tf),
                      "--seeds", "transformer=" + ",".join(tp), "--out", str(tmp_path / "refused")])
    assert error.value.code == 2 and not (tmp_path / "refused").exists()


def test_seeds_command_with_a_missing_module(math_seed_runs, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    seeds = math_seed_runs
    gap = seeds["transformer"][0] + "/results.json"
    run = json.loads(open(gap).read())
    del run["interpolate_accuracy_percent"]["comparison__pair"]
    open(gap, "w").write(json.dumps(run))
    out, extra = tmp_path / "out", tmp_path / "seeds-numbers.json"
    assert command.main(["--seeds", "tp_transformer=" + ",".join(seeds["tp_transformer"]),
                         "--seeds", "transformer=" + ",".join(seeds["transformer"]),
                         "--out", str(out), "--json", str(extra)]) == 0
    captured = capsys.readouterr()
    assert "transformer-seed0 has no interpolate accuracy for comparison__pair" in captured.err
    assert captured.out == (out / "seeds.md").read_text() + "\n"
    assert "| comparison__pair | 60.00 ± 10.00 | 59.50 ± 2.12 (n=2) | +0.50 | no |" in (
        captured.out)
    data = (out / "seeds.png").read_bytes()
    assert data[:8] == PNG and len(data) > 5000
    result = json.loads((out / "seeds.json").read_text())
    assert json.loads(extra.read_text()) == result
    assert result["seeds"] == {"tp_transformer": [0, 1, 2], "transformer": [0, 1, 2]}
    row = result["regimes"]["interpolate"]["rows"]["comparison__pair"]
    assert row["transformer"] == {"n": 2, "mean": 59.5, "std": pytest.approx(2.1213203)}
    assert result["regimes"]["interpolate"]["summary"]["above_95"]["welch_t"] is None
