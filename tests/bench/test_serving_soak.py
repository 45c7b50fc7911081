"""bench.serving_soak: a short soak against a real server subprocess, with version churn,
writes its JSON; every valid request is answered as the reference, every malformed one with
its expected status, and the newest good version serves at the end. The soak serves the
preset's export made once per test run (``--model_base_path``: tests/serving/shared_exports.py,
``TaskModel.from_preset(name).export`` as ``python -m train.export --preset`` writes it,
which tests/train/test_preset_commands.py runs), not one of its own; the bench itself runs in
the test process (its ``main``), its server in a process of its own."""

import json

import pytest

from bench import serving_soak
from tests.serving.shared_exports import preset_export


def run(args):
    """``python -m bench.serving_soak <args>``'s exit status, run in this process."""
    try:
        return serving_soak.main(args)
    except SystemExit as exit_:
        return exit_.code


@pytest.mark.slow
def test_a_short_soak_answers_every_valid_request(tmp_path, tmp_path_factory, capsys):
    out = tmp_path / "soak.json"
    version, _ = preset_export(tmp_path_factory, "tpr_rnn_babi_all_tasks")  # the default
    code = run(["--model_base_path", str(version.parent), "--minutes", "0.25", "--clients", "2",
                "--churn_seconds", "3",
                "--kinds", "good,corrupt,empty_variables,missing_assets,good",
                "--keep_versions", "2", "--sample_seconds", "0.5", "--json", str(out)])
    # 0: every check passed; 3: one failed (a few seconds are too short to judge memory)
    assert code in (0, 3), capsys.readouterr().err[-3000:]
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
    assert (code == 0) == soak["passed"]
    samples = soak["samples"]
    assert len(samples) >= 10
    assert all(s["rss_mib"] > 100 and s["fds"] > 3 and s["threads"] > 1 for s in samples)
    assert soak["memory"]["peak_rss_mib"] >= max(s["rss_mib"] for s in samples)


def test_unknown_version_kinds_are_usage_errors(capsys):
    code = run(["--kinds", "good,half_written"])
    assert code == 2 and "unknown ['half_written']" in capsys.readouterr().err
