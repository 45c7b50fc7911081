"""Per-module learning curves of math runs: greedy exact match after every epoch.

    python -m tools.math_curves                                   # Markdown on stdout
    python -m tools.math_curves --plot results/figures/math/curves.png   # + the figure

A run trained with ``train.math --curve_questions N`` records, after every epoch, the
exact match of its first N interpolate questions per module
(``history[i]["interpolate_exact_match_percent"]``). For every such committed run
(``results/math/<folder>/tp_transformer-seed<S>``) this prints a summary row (size, modules,
steps, training hours, where each module first reached :data:`~tools.math_steps.TARGET`
%), then the curve of ``--module`` (default ``comparison__pair``) per epoch, runs side by
side. The figure puts the same curves against training hours beside the end points of
the committed four-module runs (``tools.math_sizes``, ``tools.math_continue``), whose
history has no per-module curve: what size and time the module needs on this CPU.
"""

import glob
import json
import os

from tools import math_continue, math_sizes
from tools.math_continue import MATH
from tools.math_steps import MODEL, TARGET
from tools.report_common import epoch_curve, hours_axes, save_figure

KEY = "interpolate_exact_match_percent"


def load(root):
    """``[(folder, results)]``: every committed math run with per-epoch exact match."""
    runs = []
    for path in sorted(glob.glob(os.path.join(root, MATH, "*", f"{MODEL}-seed*",
                                              "results.json"))):
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        if has_curve(result):
            runs.append((os.path.relpath(os.path.dirname(path), root), result))
    return runs


def has_curve(result):
    """Whether the run scored its modules after some epoch (``--curve_questions``)."""
    return any(KEY in epoch for epoch in result.get("history", []))


def curve(result, module):
    """``[(step, training hours so far, exact match %)]`` after each epoch that scored
    ``module`` (:func:`~tools.report_common.epoch_curve`)."""
    return epoch_curve(result, lambda epoch: epoch.get(KEY, {}).get(module))


def first_reach(points, target=TARGET):
    """The first ``(step, hours, score)`` at or above ``target``, or None."""
    return next((p for p in points if p[2] >= target), None)


def markdown(root, module="comparison__pair"):
    runs = load(root)
    if not runs:
        return (f"No run with per-epoch exact match is committed (`train.math "
                f"--curve_questions N` under `{MATH}/<folder>/{MODEL}-seed<S>`).")
    lines = ["| run | size | weights | modules trained | steps of 128 | training h | "
             f"`{module}` at the end | first ≥ {TARGET:g} % (step, h) | best (step, h) |",
             "|---|---|---:|---|---:|---:|---:|---|---|"]
    curves = {}
    for folder, r in runs:
        points = curves[folder] = curve(r, module)
        final = r["interpolate_accuracy_percent"].get(module)
        reached, best = first_reach(points), max(points, key=lambda p: p[2], default=None)
        lines.append(
            f"| `{folder}` | `{r['config']['preset']}` | {r['parameters']:,} | "
            f"{r['config']['modules'].replace(',', ', ')} | {r['steps']:,} | "
            f"{r['train_seconds'] / 3600:.2f} | "
            + ("–" if final is None else f"{final:.1f}") + " | "
            + ("not reached" if reached is None
               else f"{reached[2]:.1f} ({reached[0]:,}, {reached[1]:.2f} h)") + " | "
            + ("–" if best is None else f"{best[2]:.1f} ({best[0]:,}, {best[1]:.2f} h)")
            + " |")
    lines += ["", f"`{module}` exact match % after each epoch (step, training h):", "",
              "| epoch | " + " | ".join(f"`{folder}`" for folder in curves) + " |",
              "|---:|" + "---|" * len(curves)]
    for i in range(max(len(c) for c in curves.values())):
        cells = [f"{c[i][2]:.1f} ({c[i][0]:,}, {c[i][1]:.2f} h)" if i < len(c) else ""
                 for c in curves.values()]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    sizes = {r["config"]["curve_questions"] for _, r in runs}
    lines += ["", f"Each point scores the first {'/'.join(map(str, sorted(sizes)))} "
              "interpolate questions of the module after that epoch; the end column is the "
              "run's final score (the kept, best-validation epoch's weights). Commands: "
              + "; ".join(f"`{r['command']}`" for _, r in runs) + "."]
    return "\n".join(lines)


def end_points(root, module):
    """``[(label, training hours, exact match %)]`` of the committed four-module runs
    without per-epoch curves: the sizes/schedules and the continued presets (their
    hours counted from the parent's start)."""
    points = []
    for (size, plan), r in math_sizes.load(root).items():
        if module in r["interpolate_accuracy_percent"]:
            points.append((f"{size}, {plan}", r["train_seconds"] / 3600,
                           r["interpolate_accuracy_percent"][module]))
    for _, r in math_continue.load(root):
        if module in r["interpolate_accuracy_percent"] and not has_curve(r):
            points.append((f"{r['config']['preset']}, preset continued",
                           hours_before(root, r) + r["train_seconds"] / 3600,
                           r["interpolate_accuracy_percent"][module]))
    return points


def hours_before(root, result):
    """Training hours before the run started: its parent's, for a run that continued a
    preset (``--init_from``), else 0."""
    parent = math_continue.parent(root, result)
    return parent["train_seconds"] / 3600 if parent else 0.0


def curve_label(result):
    """A curve's legend: size, weights, modules, for a continued run its draw, and the seed."""
    config = result["config"]
    text = (f"{config['preset']} ({result['parameters']:,}), "
            f"{config['modules'].count(',') + 1} module(s)")
    if config.get("init_from"):
        text += f", preset continued, {config.get('module_weights') or 'equal draw'}"
    return text + f", seed {config.get('seed', 0)}, per epoch"


def plot(root, path, module="comparison__pair"):
    """The curves against training hours and the four-module runs' end points, as a PNG
    at ``path`` (needs the ``analysis`` extra)."""
    runs = load(root)
    if not runs:
        raise ValueError(f"no math run with per-epoch exact match is committed under {root}")
    fig, ax = hours_axes(figsize=(7.5, 4.2))
    for _, r in runs:
        points = curve(r, module)
        before = hours_before(root, r)  # a continued run's curve starts at its parent's end
        ax.plot([before + p[1] for p in points], [p[2] for p in points], marker="o",
                markersize=3, label=curve_label(r))
    for label, hours, score in end_points(root, module):
        ax.scatter([hours], [score], marker="x", s=30, zorder=3,
                   label=f"{label}, 4 modules, end of run")
    ax.axhline(TARGET, color="grey", linewidth=0.8, linestyle=":")
    save_figure(fig, ax, path, f"{module} interpolate exact match (%)",
                f"TP-Transformer on {module}, batch 128", fontsize="x-small",
                loc="lower right")
    return len(runs)


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.math_curves", __doc__.split("\n\n")[0])
    parser.string("root", ".", "the repository root")
    parser.string("module", "comparison__pair", "the module whose curve is shown")
    parser.string("plot", None, "also draw the curves to this PNG")
    args = parser.parse()
    if args.plot:
        plot(args.root, args.plot, args.module)
    print(markdown(args.root, args.module))


if __name__ == "__main__":
    main()
