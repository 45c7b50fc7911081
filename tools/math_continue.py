"""Runs that continue a trained math preset (``train.math --init_from``): each beside the
run that trained the preset it started from, with its validation curve.

    python -m tools.math_continue     # Markdown on stdout; python -m tools.report puts it
                                      # into results/studies/math_towards_90.md (math-continued)

A continued run's ``results.json`` names its parent in ``config.init_from_preset``: the
preset, its weights' SHA-256 and the parent run's command, commit and ``results.json``.
Per run: what the continuation changed (module weights, schedule), its steps and training
hours, each module's interpolate exact match at the end and the pooled validation error,
first for the parent, then for the continued run; then the continued run's pooled
validation error after each epoch.
"""

import glob
import json
import os

from tools.math_steps import MODEL, TARGET
from tools.report_common import print_block, validation_curve

MATH = os.path.join("results", "math")


def load(root):
    """``[(folder, results)]``: every committed math run with ``--init_from``, by folder."""
    runs = []
    pattern = os.path.join(root, MATH, "*", f"{MODEL}-seed*", "results.json")
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        if result.get("config", {}).get("init_from"):
            runs.append((os.path.relpath(os.path.dirname(path), root), result))
    return runs


def parent(root, result):
    """The parent run's results (``init_from_preset.results_json`` under ``root``), or
    None when the run does not name one or it is not committed."""
    record = result["config"].get("init_from_preset") or {}
    path = record.get("results_json")
    if not path or not os.path.exists(os.path.join(root, path)):
        return None
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return json.load(f)


def schedule(config):
    """The learning rate of a run in words: warm-up, rate, cool-down."""
    parts = [f"{config['learning_rate']:g}"]
    if config.get("warmup_steps"):
        parts.insert(0, f"warm-up {config['warmup_steps']:,}")
    if config.get("cooldown_steps"):
        parts.append(f"cool-down {config['cooldown_steps']:,}")
    return ", ".join(parts)


def final_error(result):
    """The pooled validation error % of the run's last validation."""
    curve = validation_curve(result)
    return curve[-1][2] if curve else None


def row(name, result, names, hours_before=0.0):
    scores = [result["interpolate_accuracy_percent"].get(m) for m in names]
    reached = sum(s is not None and s >= TARGET for s in scores)
    config, error = result["config"], final_error(result)
    hours = result["train_seconds"] / 3600
    total = f"{hours:.2f}" if not hours_before else f"+{hours:.2f} = {hours_before + hours:.2f}"
    return (f"| {name} | {config.get('module_weights') or 'equal'} | {schedule(config)} | "
            f"{result['steps']:,} | {total} | "
            + " | ".join("–" if s is None else f"{s:.1f}" for s in scores)
            + f" | {'–' if error is None else f'{error:.2f}'} | {reached} of {len(names)} |")


def markdown(root):
    """Per continued run: its parent's row and its own, then its validation curve."""
    runs = load(root)
    if not runs:
        return (f"No continued run is committed (a `train.math --init_from` run under "
                f"`{MATH}/<folder>/{MODEL}-seed<S>`).")
    lines = []
    for folder, result in runs:
        before = parent(root, result)
        record = result["config"].get("init_from_preset") or {}
        names = sorted(set(result["interpolate_accuracy_percent"])
                       | set((before or {}).get("interpolate_accuracy_percent", {})))
        lines += [f"`{folder}`: from `{result['config']['init_from']}`"
                  + (f" (weights SHA-256 `{record['weights_sha256'][:12]}…`, trained at "
                     f"`{(record.get('commit') or '?')[:7]}`)" if record else "") + ".", "",
                  "| run | module weights | learning rate | steps of 128 | training h | "
                  + " | ".join(f"`{m}`" for m in names)
                  + f" | pooled validation error % | modules ≥ {TARGET:g} % |",
                  "|---|---|---|---:|---:|" + "---:|" * (len(names) + 2)]
        hours_before = 0.0
        if before is not None:
            lines.append(row("parent", before, names))
            hours_before = before["train_seconds"] / 3600
        lines.append(row("continued", result, names, hours_before))
        lines += ["", "| epoch | step | training h | pooled validation error % |",
                  "|---:|---:|---:|---:|"]
        lines += [f"| {i + 1} | {step:,} | {hours:.2f} | {error:.2f} |"
                  for i, (step, hours, error) in enumerate(validation_curve(result))]
        commands = ([f"parent: `{record['command']}`"] if record.get("command") else []) + [
            f"continued: `{result['command']}`"]
        lines += ["", "Interpolate exact match % at the end of each run. Commands: "
                  + "; ".join(commands) + ".", ""]
    return "\n".join(lines).rstrip("\n")


def main():
    print_block("tools.math_continue", __doc__, markdown)


if __name__ == "__main__":
    main()
