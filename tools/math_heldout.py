"""Math models on a fresh sample from DeepMind's generator: the table that picks the preset.

    python -m tools.math_heldout           # Markdown on stdout (the ``math-heldout`` block)

Each ``results/math/heldout/<name>.json`` is what ``tools.math_savedmodel_accuracy
EXPORT SAMPLE/interpolate --json ...`` wrote for one model's exported SavedModel, on a
sample of the interpolate regime drawn by ``experiments/math_heldout_sample.py`` under a
seed the dataset's files were not made with. Its questions are none of the test file's, so
choosing among runs by it leaves the interpolate test file out of the choice. One row per
model: exact match % per module, then the lowest module (what a bar on every module asks
of the choice) and the mean.
"""

import glob
import json
import os

from tools.report_common import print_block

FOLDER = os.path.join("results", "math", "heldout")


def load(root):
    """``[(name, scores)]``, by file name: every committed held-out score."""
    rows = []
    for path in sorted(glob.glob(os.path.join(root, FOLDER, "*.json"))):
        with open(path, encoding="utf-8") as f:
            rows.append((os.path.splitext(os.path.basename(path))[0], json.load(f)))
    return rows


def accuracies(scores):
    """``{module: exact match %}`` of one model's scores."""
    return {m: r["accuracy_percent"] for m, r in scores["modules"].items()}


def lowest(scores):
    """``(exact match %, module)`` of the model's weakest module."""
    return min((v, m) for m, v in accuracies(scores).items())


def markdown(root):
    rows = load(root)
    if not rows:
        return (f"No held-out score is committed (`{FOLDER}/<name>.json`, written by "
                "`tools.math_savedmodel_accuracy --json`).")
    modules = sorted({m for _, scores in rows for m in scores["modules"]})
    lines = ["| model | SavedModel | " + " | ".join(f"`{m}`" for m in modules)
             + " | lowest | mean | questions per module |",
             "|---|---|" + "---:|" * (len(modules) + 3)]
    commands = []
    for name, scores in rows:
        values = accuracies(scores)
        counts = sorted({r["questions"] for r in scores["modules"].values()})
        lines.append(
            f"| {name} | `{scores['saved_model']}` | "
            + " | ".join(f"{values[m]:.2f}" if m in values else "–" for m in modules)
            + f" | {lowest(scores)[0]:.2f} | {sum(values.values()) / len(values):.2f} | "
            + "/".join(f"{c:,}" for c in counts) + " |")
        commands.append(f"`python -m tools.math_savedmodel_accuracy {scores['saved_model']} "
                        f"{scores['questions_path']} --json {FOLDER}/{name}.json`")
    return "\n".join(lines + ["", "Exact match %. Commands: " + "; ".join(commands) + "."])


def main():
    print_block("tools.math_heldout", __doc__, markdown)


if __name__ == "__main__":
    main()
