"""Figures 4/5, Table 1 and the seed comparison of finished train.math runs, as
the library computes them (``tpr_keras.analysis.modules``; the command is tested in
``tests/tools/test_analysis_modules.py``, the Markdown in ``tests/tools/test_report_modules.py``).
The runs are ``tests/conftest.py``'s."""

import math

import pytest

from tpr_keras.analysis import modules as ma


def test_figures_table_numbers_and_missing_module(math_run_pair, capsys):
    pair = math_run_pair
    runs = {"TP-Transformer": ma.load_run(pair[0]), "Transformer": ma.load_run(pair[1])}
    tables = {regime: ma.compare(runs, regime) for regime in ma.REGIMES}
    interpolate = tables["interpolate"]
    assert interpolate["modules"] == ["algebra__linear_1d", "arithmetic__mul",
                                      "numbers__place_value"]
    assert interpolate["missing"] == {"TP-Transformer": [], "Transformer": ["arithmetic__mul"]}
    assert interpolate["summary"]["TP-Transformer"] == {"modules": 3,
                                                        "mean": pytest.approx(234.5 / 3),
                                                        "above_95": 2}
    assert interpolate["summary"]["Transformer"] == {"modules": 2, "mean": 92.5,
                                                     "above_95": 0}
    assert interpolate["difference"]["arithmetic__mul"] is None
    assert interpolate["difference"]["numbers__place_value"] == pytest.approx(5.5)
    # The tool's own mean and count agree with the summary train.math writes.
    assert interpolate["summary"]["Transformer"] == runs["Transformer"]["summary"]["interpolate"]
    warning = capsys.readouterr().err
    assert "Transformer has no interpolate accuracy for 1 module(s) (arithmetic__mul)" in warning
    assert "TP-Transformer has no" not in warning


def test_seeds_mean_std_verdict_and_welch(math_seed_runs):
    runs = {label: [ma.load_run(d) for d in dirs]
            for label, dirs in math_seed_runs.items()}
    ma.check_seeds(runs)
    table = ma.seed_table(runs, "interpolate")
    place = table["rows"]["numbers__place_value"]
    assert place["tp_transformer"] == {"n": 3, "mean": 92.0, "std": 2.0}  # ddof = 1
    assert place["transformer"] == {"n": 3, "mean": 86.0, "std": 1.0}
    assert place["difference"] == 6.0 and place["larger_than_spread"] is True  # 6 > 2 + 1
    assert place["welch_t"] == pytest.approx(6 / math.sqrt(4 / 3 + 1 / 3))
    assert place["welch_dof"] == pytest.approx(50 / 17)
    pair = table["rows"]["comparison__pair"]
    assert (pair["tp_transformer"]["std"], pair["transformer"]["std"]) == (10.0, 3.0)
    assert pair["difference"] == 2.0 and pair["larger_than_spread"] is False  # 2 < 13
    add = table["rows"]["arithmetic__add_or_sub"]
    assert add["difference"] == -2.0 and add["larger_than_spread"] is True  # 2 > 0 + 1
    assert add["welch_t"] == pytest.approx(-2 / math.sqrt(1 / 3))
    assert add["welch_dof"] == pytest.approx(2.0)
    # Summary rows: per seed the mean over its modules / its count above 95 %.
    mean = table["summary"]["mean"]
    assert mean["tp_transformer"]["mean"] == pytest.approx(248 / 3)
    assert mean["tp_transformer"]["std"] == pytest.approx(4.0)
    assert mean["transformer"]["mean"] == pytest.approx(242 / 3)
    assert mean["transformer"]["std"] == pytest.approx(5 / 3)
    assert mean["larger_than_spread"] is False
    count = table["summary"]["above_95"]
    assert count["tp_transformer"] == count["transformer"] == {"n": 3, "mean": 1.0, "std": 0.0}
    assert count["larger_than_spread"] is False and count["welch_t"] is None
    extrapolate = ma.seed_table(runs, "extrapolate")["rows"]["numbers__place_value_big"]
    assert extrapolate["difference"] == 15.0 and extrapolate["larger_than_spread"] is True


def test_welch_edge_cases_and_scipy_agreement():
    assert ma.welch(5.0, 0.0, 3, 5.0, 0.0, 3)[0] != ma.welch(5.0, 0.0, 3, 5.0, 0.0, 3)[0]  # nan
    assert ma.welch(6.0, 0.0, 3, 5.0, 0.0, 3)[0] == math.inf
    assert ma.versus({"n": 1, "mean": 3.0, "std": None},
                     {"n": 3, "mean": 1.0, "std": 1.0})["larger_than_spread"] is None
    stats = pytest.importorskip("scipy.stats")
    a, b = [50.0, 60.0, 70.0, 65.0], [55.0, 58.0, 61.0]
    found = ma.versus(ma.spread(a), ma.spread(b))
    expected = stats.ttest_ind(a, b, equal_var=False)
    assert found["welch_t"] == pytest.approx(expected.statistic)
    assert found["p_value"] == pytest.approx(expected.pvalue)


def test_seeds_refuses_too_few_seeds_mismatched_labels_and_repeated_seeds(math_seed_runs):
    def check(specs):
        runs = {label: [ma.load_run(d) for d in dirs] for label, dirs in specs.items()}
        ma.check_seeds(runs)

    tp, tf = math_seed_runs["tp_transformer"], math_seed_runs["transformer"]
    check({"TP-Transformer": tp, "Transformer": tf})  # labels read as model names
    with pytest.raises(ValueError, match="1 run\\(s\\); a seed spread needs at least 2"):
        check({"tp_transformer": tp, "transformer": tf[:1]})
    with pytest.raises(ValueError, match="config.model is 'transformer', but it is labelled "
                                         "'tp_transformer'"):
        check({"tp_transformer": tp[:2] + tf[:1], "transformer": tf})
    with pytest.raises(ValueError, match="but it is labelled 'TPT'"):
        check({"TPT": tp, "transformer": tf})
    with pytest.raises(ValueError, match="seed \\[0\\] appears more than once"):
        check({"tp_transformer": tp + [tp[0]], "transformer": tf})
    with pytest.raises(ValueError, match="two models"):
        check({"tp_transformer": tp})
