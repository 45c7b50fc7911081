"""The math preset's command per model size and learning-rate schedule: learning curves
against steps and time.

    python -m tools.math_sizes                  # Markdown on stdout; python -m tools.report
                                                # puts it into results/studies/math_towards_90.md (math-sizes)
    python -m tools.math_sizes --plot results/figures/math/sizes.png   # + the curves

The bar is >= 90 % interpolate exact match on every served module, or learning curves
that show what size and time that takes on this CPU. This compares the longest committed run
of each ``--preset`` size and schedule of the preset's command (the four focus modules, batch
128, seed 0): ``results/math/<folder>/tp_transformer-seed0`` for every folder but ``focus``
and ``all`` (other commands) and runs that start from a preset's weights
(:mod:`tools.math_continue`). The schedule is the recipe's constant rate, or that rate
cooled down linearly to zero over the last ``--cooldown_steps`` steps: such a run is the
constant run resumed from its checkpoint by the same command with more steps, so its curve
begins with the constant run's. Per run: weights, steps, training hours and steps/s, and
each module's interpolate exact match at the end; then the pooled validation error after
each epoch, with the steps and training hours it took, side by side.
"""

import glob
import json
import os

from tools.math_steps import MODEL, PRESET_MODULES, TARGET
from tools.report_common import hours_axes, save_figure, validation_curve

MATH = os.path.join("results", "math")
SEED = 0


def schedule(result):
    """``"constant"`` or ``"cool-down N"`` (the run's ``--cooldown_steps``)."""
    steps = result["config"].get("cooldown_steps") or 0
    return f"cool-down {steps:,}" if steps else "constant"


def label(key):
    size, plan = key
    return f"`{size}`" if plan == "constant" else f"`{size}`, {plan}"


def load(root):
    """``{(size, schedule): results}``: the committed seed-0 run with the most steps of each
    size and schedule, ordered by weights, constant before cooled down."""
    runs = {}
    pattern = os.path.join(root, MATH, "*", f"{MODEL}-seed{SEED}", "results.json")
    for path in sorted(glob.glob(pattern)):
        folder = os.path.basename(os.path.dirname(os.path.dirname(path)))
        if folder in ("focus", "all"):  # other commands: 15,000 steps; all 56 modules
            continue
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        if result["config"].get("init_from"):  # continues a preset: tools.math_continue
            continue
        if result["config"]["modules"] != PRESET_MODULES:  # e.g. one module's curves
            continue
        key = (result["config"]["preset"], schedule(result))
        if key not in runs or result["steps"] > runs[key]["steps"]:
            runs[key] = result
    return dict(sorted(runs.items(), key=lambda item: (
        item[1]["parameters"], item[0][1] != "constant", item[1]["steps"])))


def markdown(root):
    """A row per size and schedule (final scores), then the validation curves side by
    side."""
    runs = load(root)
    if not runs:
        return f"No run is committed (`{MATH}/<size>/{MODEL}-seed{SEED}`)."
    names = sorted({m for r in runs.values() for m in r["interpolate_accuracy_percent"]})
    lines = ["| size | learning rate | weights | steps of 128 | training h | steps/s | "
             + " | ".join(f"`{m}`" for m in names) + f" | modules ≥ {TARGET:g} % |",
             "|---|---|---:|---:|---:|---:|" + "---:|" * (len(names) + 1)]
    for (size, plan), r in runs.items():
        scores = [r["interpolate_accuracy_percent"].get(m) for m in names]
        reached = sum(s is not None and s >= TARGET for s in scores)
        cells = " | ".join("–" if s is None else f"{s:.1f}" for s in scores)
        lines.append(f"| `{size}` | {plan} | {r['parameters']:,} | {r['steps']:,} | "
                     f"{r['train_seconds'] / 3600:.2f} | {r['steps'] / r['train_seconds']:.1f} "
                     f"| {cells} | {reached} of {len(names)} |")
    curves = {key: validation_curve(r) for key, r in runs.items()}
    lines += ["", "Pooled validation error % after each epoch (step, training h); `=`: the "
              "point of the same size's constant run, which the cooled-down run resumed:", "",
              "| epoch | " + " | ".join(label(key) for key in curves) + " |",
              "|---:|" + "---|" * len(curves)]
    for i in range(max(len(c) for c in curves.values())):
        cells = []
        for (size, plan), c in curves.items():
            constant = curves.get((size, "constant"), ())
            if i >= len(c):
                cells.append("")
            elif plan != "constant" and i < len(constant) and constant[i] == c[i]:
                cells.append("=")
            else:
                cells.append(f"{c[i][2]:.1f} ({c[i][0]:,}, {c[i][1]:.2f} h)")
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    lines += ["", "Interpolate exact match % at the end of each run. Commands: "
              + "; ".join(f"`{r['command']}`" for r in runs.values()) + "."]
    return "\n".join(lines)


def plot(root, path):
    """Pooled validation error against training hours, one line per size and schedule
    (cooled-down runs dashed), as a PNG at ``path`` (needs the ``analysis`` extra)."""
    runs = load(root)
    if not runs:
        raise ValueError(f"no run of the math preset's command is committed under {root}")
    fig, ax = hours_axes()
    for (size, plan), r in runs.items():
        points = validation_curve(r)
        ax.plot([p[1] for p in points], [p[2] for p in points], marker="o", markersize=3,
                linestyle="-" if plan == "constant" else "--",
                label=f"{size} ({r['parameters']:,} weights), {plan}")
    ax.set_ylim(bottom=0)
    save_figure(fig, ax, path, "pooled validation error, 4 modules (%)",
                "TP-Transformer, math focus modules, batch 128", fontsize="small")
    return len(runs)


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.math_sizes", __doc__.split("\n\n")[0])
    parser.string("root", ".", "the repository root")
    parser.string("plot", None, "also draw the validation curves to this PNG")
    args = parser.parse()
    if args.plot:
        plot(args.root, args.plot)
    print(markdown(args.root))


if __name__ == "__main__":
    main()
