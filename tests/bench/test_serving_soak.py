"""bench.serving_soak: a short soak against a real server subprocess, with version churn,
writes its JSON; every valid request is answered as the reference, every malformed one with
its expected status, and the newest good version serves at the end."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def run(args, timeout=900):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-m", "bench.serving_soak", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_short_soak_answers_every_valid_request(tmp_path):
    out = tmp_path / "soak.json"
    done = run(["--minutes", "0.25", "--clients", "2", "--churn_seconds", "3",
                "--kinds", "good,corrupt,empty_variables,missing_assets,good",
                "--keep_versions", "2", "--sample_seconds", "0.5", "--json", str(out)])
    # 0: every check passed; 3: one failed (a few seconds are too short to judge memory)
    assert done.returncode in (0, 3), done.stderr[-3000:]
    soak = json.loads(out.read_text())
    assert {"requests", "versions", "memory", "checks", "passed", "samples",
            "examples_per_second", "warmup_seconds", "server_stats"} <= set(soak)
    requests = soak["requests"]
    assert requests["valid"] > 0 and requests["malformed"] > 0
    assert requests["valid_failed"] == 0, requests["valid_failed_by_status"]
    assert requests["wrong_answers"] == 0
    assert requests["malformed_unexpected"] == 0, requests["malformed_unexpected_examples"]
    versions = soak["versions"]
    kinds = [d["kind"] for d in versions["dropped"]]
    assert kinds[:4] == ["good", "corrupt", "empty_variables", "missing_assets"], kinds
    assert versions["served_at_end"] == versions["expected_at_end"] > 1
    assert versions["deleted"] >= 1
    assert soak["checks"]["no_failed_valid"] and soak["checks"]["newest_good_served"]
    assert set(soak["checks"]) == {"no_failed_valid", "no_wrong_answers",
                                   "no_unexpected_malformed", "newest_good_served",
                                   "rss_flat", "fds_flat", "threads_flat"}
    assert soak["passed"] == all(soak["checks"].values())
    assert (done.returncode == 0) == soak["passed"]
    samples = soak["samples"]
    assert len(samples) >= 10
    assert all(s["rss_mib"] > 100 and s["fds"] > 3 and s["threads"] > 1 for s in samples)
    assert soak["memory"]["peak_rss_mib"] >= max(s["rss_mib"] for s in samples)


def test_unknown_version_kinds_are_usage_errors():
    done = run(["--kinds", "good,half_written"], timeout=300)
    assert done.returncode == 2 and "unknown ['half_written']" in done.stderr
