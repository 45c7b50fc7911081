"""The everyday-module run on other devices (block ``math-devices``): the same
``train.math`` command on a GPU and on a CPU thread, per step and per hour, beside the
CPU preset run's first epoch.

Runs: ``results/math/everyday20-devices/<run>/results.json`` (a ``train.math`` run of
the twenty everyday modules, any backend and machine); the reference is the first epoch
of ``results/math/everyday20/tiny-seed0`` (the served preset's one-thread CPU run).
"""

import json
import os

from tools.report.common import portable_command
from tools.report.math_curves import KEY
from tools.report.math_everyday import everyday_runs

FOLDER = os.path.join("results", "math", "everyday20-devices")
REFERENCE = os.path.join("results", "math", "everyday20", "tiny-seed0", "results.json")


def speed_table(runs):
    """One row per run: where it ran, how far, how fast."""
    lines = ["| run | machine | backend | size (weights) | steps | seconds of training | "
             "examples/s | steps per hour | interpolate mean % at its last step |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for name, r, epochs in runs:
        config = r["config"]
        history = r["history"][:epochs]  # epochs None: all of it
        last = history[-1]
        seconds = sum(e["seconds"] for e in history)
        per_second = last["step"] * config["batch_size"] / seconds
        if epochs:  # the reference's first epoch: its curve, not a final score
            mean = sum(last[KEY].values()) / len(last[KEY])
        else:
            mean = r["summary"]["interpolate"]["mean"]
        lines.append(f"| `{name}` | {r['machine'].get('description', '?')} | "
                     f"{config.get('backend', 'tensorflow')} | {config['preset']} "
                     f"({r['parameters']:,}) | {last['step']:,} | {seconds:,.0f} | "
                     f"{per_second:,.0f} | {per_second / config['batch_size'] * 3600:,.0f} | "
                     f"{mean:.1f}{' (curve)' if epochs else ''} |")
    return lines


def module_table(runs):
    """Modules as rows; per run its curve after each epoch (the reference: its first
    epochs only), then its final score."""
    columns = []
    for name, r, epochs in runs:
        for e in r["history"][:epochs]:
            if KEY in e:
                columns.append((f"`{name}` {e['step']:,}", e[KEY]))
        if not epochs:
            columns.append((f"`{name}` final", r["interpolate_accuracy_percent"]))
    modules = sorted(set().union(*(scores for _, scores in columns)))
    lines = ["| module | " + " | ".join(head for head, _ in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for module in modules:
        lines.append(f"| `{module}` | " + " | ".join(
            f"{scores[module]:.1f}" if module in scores else "–" for _, scores in columns)
            + " |")
    lines.append("| **mean** | " + " | ".join(
        f"**{sum(s.values()) / len(s):.1f}**" for _, s in columns) + " |")
    return lines


def devices_markdown(root):
    """The ``math-devices`` block."""
    runs = [(name, r, None) for name, r in everyday_runs(root, FOLDER)]
    if not runs:
        return f"No run is committed under `{FOLDER}/` yet."
    reference = os.path.join(root, REFERENCE)
    if os.path.exists(reference):
        with open(reference, encoding="utf-8") as f:
            runs.append(("tiny-seed0", json.load(f), 1))
    out = speed_table(runs) + [""] + module_table(runs) + [""]
    out.append("Examples/s: the epochs' steps times the batch over their seconds (the "
               "compiles of the first steps included; validation and curves excluded). "
               "Columns with a step: exact match % of the first "
               f"{runs[0][1]['config'].get('curve_questions')} interpolate questions of "
               "each module after that step; final: all interpolate questions. Commands: "
               + "; ".join(f"`{portable_command(r['command'])}`" for _, r, _ in runs) + ".")
    return "\n".join(out)
