"""bench.backends: one family on both backends, timed side by side, written as JSON."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]


def run(args):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-m", "bench.backends", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_both_backends_side_by_side(tmp_path):
    out = tmp_path / "backends.json"
    done = run(["--families", "memn2n", "--backends", "tensorflow,jax",
                "--dtype_policies", "float32", "--batch_size", "memn2n=4",
                "--seconds", "0.3", "--repeats", "2", "--json", str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    bench = json.loads(out.read_text())
    rows = {(r["backend"], r["dtype_policy"]): r for r in bench["rows"]}
    assert set(rows) == {("tensorflow", "float32"), ("jax", "float32")}
    assert rows[("tensorflow", "float32")]["time_ratio"] == 1.0
    assert all(r["examples_per_second"] > 0 and r["peak_memory_mb"] > 0 and
               r["batch_size"] == 4 for r in rows.values())
    assert len(bench["windows"]) == 4  # 2 rounds x 2 configurations


def test_unknown_names_are_usage_errors():
    done = run(["--backends", "torch"])
    assert done.returncode == 2 and "unknown --backends ['torch']" in done.stderr
    done = run(["--families", "lstm"])
    assert done.returncode == 2 and "unknown families ['lstm']" in done.stderr
