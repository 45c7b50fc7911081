"""The math preset's recipe against its training length: exact match per module.

    python -m tools.math_steps      # Markdown on stdout; python -m tools.report puts it into
                                    # results/studies/math_towards_90.md (block math-steps)

Reads the committed TP-Transformer runs of the preset's command (``--size tiny``, the four
focus modules, batch 128): ``results/math/focus/tp_transformer-seed<S>/results.json`` (15,000
steps) and ``results/math/steps<N>/tp_transformer-seed<S>/results.json`` (the same command
with ``--steps N``). One row per length: the interpolate exact match of every module (the
mean over seeds where a length has several, with the range), training time, and how many
modules reach the bar of :data:`TARGET` %.
"""

import glob
import json
import os

FOCUS = os.path.join("results", "math", "focus")
STEPS = os.path.join("results", "math", "steps{steps}")
MODEL = "tp_transformer"
#: The bar: every module the preset serves at >= 90 % interpolate exact match.
TARGET = 90.0
#: ``--modules`` of the preset's command (the modules it serves).
PRESET_MODULES = ("numbers__place_value,arithmetic__add_or_sub,comparison__pair,"
                  "numbers__round_number")


def load(root):
    """``{steps: [results, ...]}`` of every committed run of the preset's command."""
    paths = glob.glob(os.path.join(root, FOCUS, f"{MODEL}-seed*", "results.json"))
    paths += glob.glob(os.path.join(root, STEPS.format(steps="*"), f"{MODEL}-seed*",
                                    "results.json"))
    runs = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        runs.setdefault(int(result["steps"]), []).append(result)
    for results in runs.values():
        results.sort(key=lambda r: r["config"]["seed"])
    return dict(sorted(runs.items()))


def markdown(root):
    """One row per training length; each module's mean exact match % (min-max over seeds)."""
    runs = load(root)
    if not runs:
        return f"No run is committed (`{FOCUS}` or `{STEPS}`)."
    names = sorted({m for results in runs.values() for r in results
                    for m in r["interpolate_accuracy_percent"]})
    lines = ["| steps of 128 | seeds | " + " | ".join(f"`{m}`" for m in names)
             + f" | modules ≥ {TARGET:g} % | training h per run |",
             "|---:|---|" + "---:|" * (len(names) + 2)]
    for steps, results in runs.items():
        cells, reached = [], 0
        for name in names:
            values = [r["interpolate_accuracy_percent"][name] for r in results]
            mean = sum(values) / len(values)
            reached += mean >= TARGET
            spread = f" ({min(values):.1f}–{max(values):.1f})" if len(values) > 1 else ""
            cells.append(f"{mean:.1f}{spread}")
        hours = sum(r["train_seconds"] for r in results) / len(results) / 3600
        seeds = ", ".join(str(r["config"]["seed"]) for r in results)
        lines.append(f"| {steps:,} | {seeds} | " + " | ".join(cells)
                     + f" | {reached} of {len(names)} | {hours:.2f} |")
    lines += ["", "Interpolate exact match %, mean over the seeds (min–max). Each run: "
              "`TF_NUM_INTRAOP_THREADS=1 python -m train.math --data_dir DIR --model "
              "tp_transformer --size tiny --modules numbers__place_value,"
              "arithmetic__add_or_sub,comparison__pair,numbers__round_number --steps N "
              "--epochs 1000 --seed S` (the 15,000-step rows: `results/math/focus`; longer: "
              "`results/math/steps<N>`)."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown("."))
