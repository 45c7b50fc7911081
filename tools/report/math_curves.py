"""The math study's learning curves from committed runs, as tables and figures: the
preset's command per model size and learning-rate schedule, and per-module exact match
after every epoch.

Sizes (block ``math-sizes``, figure ``math-sizes``): the longest committed seed-0 run of
each ``--size`` and schedule of the preset's command (the four focus modules, batch 128):
``results/math/<folder>/tp_transformer-seed0`` for every folder but ``focus`` and ``all``
(other commands), leaving out runs that start from a preset's weights (the continued table
of :mod:`tools.report.math_tables`). The schedule is the recipe's constant rate, or that
rate cooled down linearly to zero over the last ``--cooldown_steps`` steps: such a run is
the constant run resumed from its checkpoint by the same command with more steps, so its
curve begins with the constant run's. Per run: weights, steps, training hours and steps/s,
each module's interpolate exact match at the end; then the pooled validation error after
each epoch, side by side.

Curves (block ``math-curves``, figure ``math-curves``): a run trained with ``train.math
--curve_questions N`` records, after every epoch, the exact match of its first N
interpolate questions per module (``history[i]["interpolate_exact_match_percent"]``). For
every such run: a summary row (size, modules, steps, training hours, where the module first
reached :data:`~tools.report.math_tables.TARGET` %), then the curve of ``comparison__pair``
per epoch, runs side by side. The figure puts the same curves against training hours beside
the end points of the committed four-module runs, whose history has no per-module curve.
"""

import glob
import json
import os

from tools.report.common import epoch_curve, hours_axes, save_figure, validation_curve
from tools.report.math_tables import (MATH, MODEL, PRESET_MODULES, TARGET, continued_runs,
                                      parent)

SEED = 0
KEY = "interpolate_exact_match_percent"


# -------------------------------------------------------------------------- sizes
def schedule(result):
    """``"constant"`` or ``"cool-down N"`` (the run's ``--cooldown_steps``)."""
    steps = result["config"].get("cooldown_steps") or 0
    return f"cool-down {steps:,}" if steps else "constant"


def label(key):
    size, plan = key
    return f"`{size}`" if plan == "constant" else f"`{size}`, {plan}"


def sizes_runs(root):
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
        if result["config"].get("init_from"):  # continues a preset: the continued table
            continue
        if result["config"].get("recipe", "size") != "size":  # another recipe's steps
            continue
        if result["config"]["modules"] != PRESET_MODULES:  # e.g. one module's curves
            continue
        key = (result["config"]["preset"], schedule(result))
        if key not in runs or result["steps"] > runs[key]["steps"]:
            runs[key] = result
    return dict(sorted(runs.items(), key=lambda item: (
        item[1]["parameters"], item[0][1] != "constant", item[1]["steps"])))


def sizes_markdown(root):
    """A row per size and schedule (final scores), then the validation curves side by
    side."""
    runs = sizes_runs(root)
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


def plot_sizes(root, path):
    """Pooled validation error against training hours, one line per size and schedule
    (cooled-down runs dashed), as a PNG at ``path`` (needs the ``analysis`` extra)."""
    runs = sizes_runs(root)
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


# ------------------------------------------------------------------------- curves
def curve_runs(root):
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
    ``module`` (:func:`~tools.report.common.epoch_curve`)."""
    return epoch_curve(result, lambda epoch: epoch.get(KEY, {}).get(module))


def first_reach(points, target=TARGET):
    """The first ``(step, hours, score)`` at or above ``target``, or None."""
    return next((p for p in points if p[2] >= target), None)


def curves_markdown(root, module="comparison__pair"):
    """A summary row per run with per-epoch curves, then ``module``'s curves side by side."""
    runs = curve_runs(root)
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
    for (size, plan), r in sizes_runs(root).items():
        if module in r["interpolate_accuracy_percent"]:
            points.append((f"{size}, {plan}", r["train_seconds"] / 3600,
                           r["interpolate_accuracy_percent"][module]))
    for _, r in continued_runs(root):
        if module in r["interpolate_accuracy_percent"] and not has_curve(r):
            points.append((f"{r['config']['preset']}, preset continued",
                           hours_before(root, r) + r["train_seconds"] / 3600,
                           r["interpolate_accuracy_percent"][module]))
    return points


def hours_before(root, result):
    """Training hours before the run started: its parent's, for a run that continued a
    preset (``--init_from``), else 0."""
    before = parent(root, result)
    return before["train_seconds"] / 3600 if before else 0.0


def curve_label(result):
    """A curve's legend: size, weights, modules, for a continued run its draw, and the seed."""
    config = result["config"]
    text = (f"{config['preset']} ({result['parameters']:,}), "
            f"{config['modules'].count(',') + 1} module(s)")
    if config.get("init_from"):
        text += f", preset continued, {config.get('module_weights') or 'equal draw'}"
    return text + f", seed {config.get('seed', 0)}, per epoch"


def plot_curves(root, path, module="comparison__pair"):
    """The curves against training hours and the four-module runs' end points, as a PNG
    at ``path`` (needs the ``analysis`` extra)."""
    runs = curve_runs(root)
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

