"""``python -m tools.analysis.systematic --compare``: Figure 5's comparison table and figure of
two saved evaluations, and the command line it refuses (the evaluation itself is tested in
``tests/analysis/test_systematic.py``)."""

import json

import pytest

from tools.analysis import systematic as command


def _result(alex, logan):
    """An evaluation's JSON: Alex trained on both tasks, Logan on task 1 only."""
    return {"pairs": [
        {"name": "Alex", "task": 1, "seen": True, "accuracy": alex[0], "count": 10},
        {"name": "Alex", "task": 6, "seen": True, "accuracy": alex[1], "count": 10},
        {"name": "Logan", "task": 1, "seen": True, "accuracy": logan[0], "count": 10},
        {"name": "Logan", "task": 6, "seen": False, "accuracy": logan[1], "count": 10}]}


def test_compare_tables_the_drop_against_the_fully_trained_name(tmp_path):
    for label, res in (("A", _result((100, 90), (100, 80))), ("B", _result((90, 90), (60, 40)))):
        (tmp_path / f"{label}.json").write_text(json.dumps(res))
    out = tmp_path / "cmp"
    assert command.main(["--compare", f"TPR={tmp_path / 'A.json'}",
                         "--compare", f"Mem={tmp_path / 'B.json'}", "--out", str(out)]) == 0
    table = (out / "compare.md").read_text()
    assert "| Logan | 1 | 90.0 | +5.0 | 50.0 | +40.0 |" in table
    assert "TPR +5.0 points, Mem +40.0 points" in table
    pytest.importorskip("matplotlib")
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        command.main(["--out", str(out)])
