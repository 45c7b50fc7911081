import json
import os
import subprocess
import sys
import textwrap

import pytest

from tools import test_times
from tools.report import test_times as report


def run_pytest(folder, *args):
    """A real pytest session over ``folder`` with durations, as .ci/run prints it (without
    the options a measured run of this suite puts in ``PYTEST_ADDOPTS``, e.g. ``-p
    tests.cpu_times``, which this folder cannot import)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--durations=0", str(folder), *args], cwd=folder, env=env,
                          capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def two_sessions(tmp_path):
    tests = tmp_path / "tests"
    (tests / "train").mkdir(parents=True)
    (tests / "pytest.ini").write_text("[pytest]\n")
    (tests / "train" / "test_slow.py").write_text(textwrap.dedent("""
        import time
        def test_slow():
            time.sleep(0.3)
        def test_fails():
            time.sleep(0.1)
            assert False
    """))
    (tests / "test_top.py").write_text("import time\ndef test_top():\n    time.sleep(0.05)\n")
    first = run_pytest(tests)
    second = run_pytest(tests, "-k", "top")
    log = tmp_path / "ci.log"
    log.write_text("pip output\n" + first + "\nmore\n" + second)
    return log


def test_reads_both_halves_per_folder_and_the_slowest(two_sessions, tmp_path):
    out = tmp_path / "durations.json"
    assert test_times.main([str(two_sessions), "--json", str(out), "--machine", "here"]) == 0
    record = json.loads(out.read_text())
    first, second = record["halves"]
    assert first["counts"] == {"failed": 1, "passed": 2}
    assert second["counts"]["passed"] == 1 and second["counts"]["deselected"] == 2
    assert set(first["folders"]) == {"tests/train", "tests"}
    assert first["folders"]["tests/train"]["tests"] == 2
    assert first["folders"]["tests/train"]["seconds"] >= 0.4
    assert first["slowest"][0]["test"] == "train/test_slow.py::test_slow"
    assert list(second["folders"]) == ["tests"]
    # The generated block shows each half and its folders.
    (tmp_path / "results" / "tests").mkdir(parents=True)
    (tmp_path / report.RECORD).write_text(out.read_text())
    block = report.markdown(str(tmp_path))
    assert block.count("| `tests/train` | 2 |") == 1 and "Measured on here" in block


def test_a_log_without_durations_is_refused(tmp_path):
    log = tmp_path / "ci.log"
    log.write_text("===== 3 passed in 1.00s =====\n")
    with pytest.raises(test_times.LogError, match="without durations"):
        test_times.read_halves(log.read_text())
    with pytest.raises(test_times.LogError, match="no pytest summary"):
        test_times.read_halves("nothing\n")


def test_a_baseline_run_beside_it_gives_the_ratio_of_their_times(two_sessions, tmp_path):
    old = tmp_path / "old.log"
    old.write_text("install\n===== 4 passed, 1 skipped in 30.00s (0:00:30) =====\n"
                   "==== 2 passed in 10.00s ====\n")  # no durations: not needed here
    out = tmp_path / "durations.json"
    assert test_times.main([str(two_sessions), "--json", str(out), "--machine", "here",
                            "--baseline_log", str(old), "--baseline_commit", "abc1234",
                            "--baseline_command", "python -m pytest tests"]) == 0
    record = json.loads(out.read_text())
    assert record["baseline"] == {
        "commit": "abc1234", "command": "python -m pytest tests",
        "halves": [{"seconds": 30.0, "counts": {"passed": 4, "skipped": 1}},
                   {"seconds": 10.0, "counts": {"passed": 2}}]}
    now = sum(h["seconds"] for h in record["halves"])
    (tmp_path / "results" / "tests").mkdir(parents=True)
    (tmp_path / report.RECORD).write_text(out.read_text())
    block = report.markdown(str(tmp_path))
    assert "`abc1234` (`python -m pytest tests`; 4 + 2 tests passed) took 0.7 min" in block
    assert f"**{now / 40:.2f}** of that time" in block
    with pytest.raises(test_times.LogError, match="needs --baseline_commit"):
        test_times.main([str(two_sessions), "--baseline_log", str(old)])
