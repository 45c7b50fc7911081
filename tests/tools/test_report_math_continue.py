"""The continued table (tools/report/math_tables.py): a run that continues a math preset,
beside its parent run."""

import json

from tools.report import math_curves, math_tables
from tools.report.math_tables import PRESET_MODULES


def write(root, folder, steps, seconds, scores, epochs, **config):
    path = root / "results" / "math" / folder / "tp_transformer-seed0" / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "steps": steps, "train_seconds": seconds, "parameters": 100,
        "config": {"preset": "tiny", "seed": 0, "learning_rate": 1e-3,
                   "modules": PRESET_MODULES, **config},
        "history": [{"epoch": i + 1, "step": step, "seconds": s, "valid_error_percent": err}
                    for i, (step, s, err) in enumerate(epochs)],
        "command": f"python -m train.math --steps {steps}",
        "interpolate_accuracy_percent": scores}))
    return f"results/math/{folder}/tp_transformer-seed0/results.json"


def test_a_continued_run_sits_under_its_parent_with_its_curve(tmp_path):
    parent = write(tmp_path, "tiny-cooldown", 80000, 7200, {"a": 95.3, "c": 87.0},
                   [(80000, 7200, 4.43)], cooldown_steps=20000)
    write(tmp_path, "tiny-continued", 4000, 1800, {"a": 94.0, "c": 91.5},
          [(2000, 900, 5.0), (4000, 900, 3.25)], cooldown_steps=2000, warmup_steps=500,
          module_weights="c=3", init_from="tp_transformer_math_focus",
          init_from_preset={"preset": "tp_transformer_math_focus", "weights_sha256": "ab" * 32,
                            "command": "python -m train.math --steps 80000",
                            "commit": "f765745" + "0" * 33, "results_json": parent})
    lines = math_tables.continued_markdown(str(tmp_path)).splitlines()
    assert lines[0] == ("`results/math/tiny-continued/tp_transformer-seed0`: from "
                        "`tp_transformer_math_focus` (weights SHA-256 `abababababab…`, trained "
                        "at `f765745`).")
    assert lines[2] == ("| run | module weights | learning rate | steps of 128 | training h | "
                        "`a` | `c` | pooled validation error % | modules ≥ 90 % |")
    assert lines[4] == ("| parent | equal | 0.001, cool-down 20,000 | 80,000 | 2.00 | 95.3 | "
                        "87.0 | 4.43 | 1 of 2 |")
    assert lines[5] == ("| continued | c=3 | warm-up 500, 0.001, cool-down 2,000 | 4,000 | "
                        "+0.50 = 2.50 | 94.0 | 91.5 | 3.25 | 2 of 2 |")
    assert lines[9:11] == ["| 1 | 2,000 | 0.25 | 5.00 |", "| 2 | 4,000 | 0.50 | 3.25 |"]
    assert lines[-1].endswith("parent: `python -m train.math --steps 80000`; continued: "
                              "`python -m train.math --steps 4000`.")
    # the size comparison keeps the continued run out (it did not start from scratch)
    assert "4,000" not in math_curves.sizes_markdown(str(tmp_path))
    assert "80,000" in math_curves.sizes_markdown(str(tmp_path))


def test_a_parent_not_committed_leaves_its_row_out(tmp_path):
    write(tmp_path, "cont", 10, 36, {"a": 50.0}, [(10, 36, 9.0)], init_from="some/folder")
    lines = math_tables.continued_markdown(str(tmp_path)).splitlines()
    assert lines[0] == "`results/math/cont/tp_transformer-seed0`: from `some/folder`."
    assert [line.split(" |")[0] for line in lines[4:5]] == ["| continued"]
    assert "| continued | equal | 0.001 | 10 | 0.01 | 50.0 | 9.00 | 0 of 1 |" in lines


def test_no_continued_run_says_where_it_goes(tmp_path):
    assert "--init_from" in math_tables.continued_markdown(str(tmp_path))
