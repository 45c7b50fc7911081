"""tools/report/math_everyday_experts.py: the expert runs' rows and the fresh-sample table."""

import json

from tools.report import math_everyday_experts as experts

KEY = "interpolate_exact_match_percent"


def write_expert(root, module, curve, final, **extra):
    path = root / "results" / "math" / "everyday20" / "experts" / module / "results.json"
    path.parent.mkdir(parents=True)
    history = [{"epoch": i + 1, "step": 200 * (i + 1), "seconds": 360, KEY: {module: value},
                "train_accuracy": 0.9 + 0.02 * i, "valid_error_percent": error}
               for i, (value, error) in enumerate(curve)]
    path.write_text(json.dumps({
        "steps": 200 * len(curve), "train_seconds": 360 * len(curve), "history": history,
        "config": {"cooldown_steps": 300, "curve_questions": 200, "preset": "tiny",
                   "init_from": "runs/presets/everyday20"},
        "command": f"python -m train.math --modules {module} --data_dir=/home/me/tpr/runs/data",
        "interpolate_accuracy_percent": {module: final}, **extra}))


def write_fresh(root, name, scores):
    path = root / "results" / "math" / "everyday20" / "fresh" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "saved_model": f"runs/{name}/1", "questions_path": "runs/heldout/seed7/interpolate",
        "modules": {m: {"accuracy_percent": s, "questions": 1000} for m, s in scores.items()}}))


def test_an_expert_row_names_its_curve_final_score_and_the_kept_epoch(tmp_path):
    write_expert(tmp_path, "a__x", [(80.0, 12.0), (91.5, 9.5), (90.0, 10.5)], 90.4)
    lines = experts.experts_markdown(str(tmp_path)).splitlines()
    assert lines[2] == ("| `a__x` | tiny, from `everyday20` | 600 (300) | 0.30 | "
                        "80.0 → 91.5 (step 400) → 90.0 | **90.4** | 94.0 | 9.5 (epoch 2) |")
    assert "--data_dir=runs/data`" in lines[-1] and "first 200 interpolate" in lines[-1]


def test_a_run_with_sittings_to_come_shows_its_steps_of_its_schedule(tmp_path):
    write_expert(tmp_path, "a__x", [(60.0, 30.0), (65.0, 25.0)], 66.1,
                 config={"steps": 1000, "cooldown_steps": 300, "curve_questions": 200},
                 sittings=[{"start_step": 0, "end_step": 400}])
    row = experts.experts_markdown(str(tmp_path)).splitlines()[2]
    assert row.startswith("| `a__x` | ?, from scratch | 400 of 1,000 (300), sitting 1 | 0.20 | "
                          "60.0 → 65.0")


def test_a_run_its_time_budget_cut_short_says_so(tmp_path):
    # no sittings folder: one process that stopped before the end of its schedule
    write_expert(tmp_path, "a__x", [(60.0, 30.0), (65.0, 25.0)], 66.1, stopped="time_budget",
                 config={"steps": 1000, "cooldown_steps": 300, "curve_questions": 200})
    row = experts.experts_markdown(str(tmp_path)).splitlines()[2]
    assert row.startswith("| `a__x` | ?, from scratch | 400 of 1,000 (300), stopped: "
                          "time_budget | 0.20 |")


def test_fresh_scores_side_by_side_with_the_modules_at_the_target(tmp_path):
    write_fresh(tmp_path, "one", {"a__x": 89.9, "b__y": 95.0})
    write_fresh(tmp_path, "two", {"a__x": 90.0})
    lines = experts.fresh_markdown(str(tmp_path)).splitlines()
    assert lines[0] == "| module | `one` | `two` |"
    assert lines[2:5] == ["| `a__x` | 89.9 | **90.0** |", "| `b__y` | **95.0** | – |",
                          "| **modules ≥ 90 %** | 1 | 1 |"]
    assert "1,000 questions per module" in lines[-1]
    assert "--json results/math/everyday20/fresh/two.json" in lines[-1]


def test_nothing_committed_says_so(tmp_path):
    assert "No expert run" in experts.experts_markdown(str(tmp_path))
    assert "No fresh-sample score" in experts.fresh_markdown(str(tmp_path))
