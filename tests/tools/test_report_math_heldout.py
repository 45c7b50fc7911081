"""The held-out table (tools/report/math_tables.py): exported models scored on a fresh
generator sample, side by side."""

import json

from tools.report import math_tables


def write(root, name, scores, questions=2000):
    folder = root / "results" / "math" / "heldout"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps({
        "saved_model": f"runs/{name}/export/math/1", "questions_path": "runs/s/interpolate",
        "modules": {m: {"questions": questions, "correct": round(v * questions / 100),
                        "accuracy_percent": v} for m, v in scores.items()}}))


def test_one_row_per_model_with_its_weakest_module_and_mean(tmp_path):
    assert "No held-out score is committed" in math_tables.heldout_markdown(str(tmp_path))
    write(tmp_path, "b-run", {"add": 95.5, "cmp": 90.25})
    write(tmp_path, "a-run", {"add": 96.0, "cmp": 88.5, "place": 100.0})
    text = math_tables.heldout_markdown(str(tmp_path))
    lines = text.splitlines()
    assert lines[0] == ("| model | SavedModel | `add` | `cmp` | `place` | lowest | mean | "
                        "questions per module |")
    assert lines[2] == ("| a-run | `runs/a-run/export/math/1` | 96.00 | 88.50 | 100.00 | "
                        "88.50 | 94.83 | 2,000 |")
    assert lines[3] == ("| b-run | `runs/b-run/export/math/1` | 95.50 | 90.25 | – | 90.25 | "
                        "92.88 | 2,000 |")
    assert ("`python -m tools.math_savedmodel_accuracy runs/b-run/export/math/1 "
            "runs/s/interpolate --json results/math/heldout/b-run.json`") in text
    assert math_tables.lowest(math_tables.heldout_scores(str(tmp_path))[1][1]) == (90.25, "cmp")
