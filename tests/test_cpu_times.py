"""tests/cpu_times.py: a pytest run with the plugin records each test's wall time, its own
CPU time and its waited-for children's, and records nothing without ``--cpu_times_dir``."""

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]

TESTS = '''
import subprocess, sys, time

BUSY = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < {}: pass"

def test_busy():
    exec(BUSY.format(0.6))

def test_sleeps():
    time.sleep(0.6)

def test_child():
    subprocess.run([sys.executable, "-c", BUSY.format(0.5)], check=True)
'''


def run_pytest(folder, *options):
    (folder / "test_work.py").write_text(TESTS)
    (folder / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "tests.cpu_times", *options, "test_work.py"],
        cwd=folder, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_each_test_gets_its_wall_own_and_children_cpu(tmp_path):
    run_pytest(tmp_path, "--cpu_times_dir", tmp_path / "times")
    [log] = (tmp_path / "times").iterdir()
    assert log.suffix == ".jsonl" and log.stem.isdigit()  # the test process's pid
    rows = {r["id"]: r for r in map(json.loads, log.read_text().splitlines())}
    assert sorted(rows) == ["test_work.py::test_busy", "test_work.py::test_child",
                            "test_work.py::test_sleeps"]
    busy, sleeps, child = (rows[f"test_work.py::test_{n}"] for n in ("busy", "sleeps", "child"))
    # The busy loop spins until the process has used 0.6 CPU seconds; the child's until
    # it has used 0.5; sleeping uses none (pytest's own work per test is milliseconds).
    assert busy["cpu"] >= 0.6 and busy["wall"] >= busy["cpu"] - 0.05
    assert child["children_cpu"] >= 0.5 and busy["children_cpu"] == 0
    assert sleeps["wall"] >= 0.6 and sleeps["cpu"] < 0.3 and sleeps["children_cpu"] == 0
    assert busy["start"] < sleeps["start"] < child["start"]  # the file's order


def test_nothing_is_recorded_without_a_folder(tmp_path):
    run_pytest(tmp_path)
    assert not list(tmp_path.rglob("*.jsonl"))
