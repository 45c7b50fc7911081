"""The twenty everyday math modules trained as one run over several sittings (block
``math-everyday``): per run, its sittings (commit, machine, steps, hours), then each
module's learning curve, the exact match of its first ``--curve_questions`` interpolate
questions after every epoch, beside its final score and the step it first reached
:data:`~tools.report.math_tables.TARGET` %.

Runs: ``results/math/everyday20/<run>/results.json``, trained with ``train.math
--sitting_dir results/math/everyday20/<run>/sitting`` (train/sittings.py); the run's
``sittings`` list says where each stretch ran.
"""

import glob
import json
import os

from tools.report.common import portable_command
from tools.report.math_curves import KEY, curve, first_reach
from tools.report.math_tables import TARGET

FOLDER = os.path.join("results", "math", "everyday20")


def everyday_runs(root, folder=FOLDER):
    """``[(run name, results)]`` of the committed everyday-module runs (the
    ``<folder>/<run>/results.json`` under ``root``)."""
    runs = []
    for path in sorted(glob.glob(os.path.join(root, folder, "*", "results.json"))):
        with open(path, encoding="utf-8") as f:
            runs.append((os.path.basename(os.path.dirname(path)), json.load(f)))
    return runs


def sittings_table(result):
    """One row per sitting of ``result``."""
    lines = ["| sitting | commit | machine | steps | training h | wall h |",
             "|---:|---|---|---:|---:|---:|"]
    for i, s in enumerate(result.get("sittings", []), 1):
        commit = (s.get("commit") or "?")[:7] + (" (dirty)" if s.get("dirty") else "")
        lines.append(f"| {i} | `{commit}` | {s['machine'].get('description', '?')} | "
                     f"{s['start_step']:,}–{s['end_step']:,} | "
                     f"{s['train_seconds'] / 3600:.2f} | {s['wall_seconds'] / 3600:.2f} |")
    return lines


def curves_table(result):
    """Modules as rows, epochs as columns (exact match % of the first N interpolate
    questions), then the final interpolate score and the first epoch at the target."""
    modules = sorted(result["interpolate_accuracy_percent"])
    epochs = [epoch for epoch in result["history"] if KEY in epoch]
    head = " | ".join(f"{e['step'] / 1000:.1f}k" for e in epochs)
    lines = [f"| module | {head} | final | first ≥ {TARGET:g} % (step) |",
             "|---|" + "---:|" * len(epochs) + "---:|---:|"]
    reached = 0
    for module in modules:
        points = curve(result, module)
        first = first_reach(points)
        final = result["interpolate_accuracy_percent"][module]
        reached += final >= TARGET
        cells = " | ".join(f"{e[KEY].get(module, float('nan')):.1f}" for e in epochs)
        lines.append(f"| `{module}` | {cells} | {final:.1f} | "
                     + ("–" if first is None else f"{first[0]:,}") + " |")
    lines.append(f"| **modules ≥ {TARGET:g} %** | " + " | ".join(
        str(sum(e[KEY].get(m, 0) >= TARGET for m in modules)) for e in epochs)
        + f" | **{reached} of {len(modules)}** | |")
    return lines


def command_note(result):
    """``every sitting``, or which flags the earlier sittings' commands gave otherwise."""
    def flags(command):
        return dict(token.partition(" ")[::2] for token in f" {command}".split(" --")[1:])

    latest = flags(result["command"])
    earlier = [flags(s.get("command", result["command"])) for s in result.get("sittings", [])]
    differ = sorted({f"--{name} {value}".strip() for given in earlier
                     for name, value in given.items() if latest.get(name) != value})
    lacking = sorted({f"--{name} {value}".strip() for given in earlier
                      for name, value in latest.items() if name not in given})
    if not differ and not lacking:
        return "every sitting"
    parts = [f"`{d}`" for d in differ] + [f"no `{d}`" for d in lacking]
    return "the latest sitting; earlier ones had " + ", ".join(parts)


def everyday_markdown(root):
    """The ``math-everyday`` block."""
    runs = everyday_runs(root)
    if not runs:
        return f"No run is committed under `{FOLDER}/` yet."
    out = []
    for name, r in runs:
        config = r["config"]
        hours = f"{r['train_seconds'] / 3600:.2f} h of training"
        if r["steps"] >= config["steps"]:
            length = f"(the whole run, {hours}), defined as"
        else:
            length = f"so far ({hours}), run to"
        out += [f"**`{name}`**: `{config['preset']}` {config['model']}, "
                f"{r['parameters']:,} weights, {len(r['interpolate_accuracy_percent'])} "
                f"modules, {r['steps']:,} steps of {config['batch_size']} {length} "
                f"{config['steps']:,} steps with the last {config.get('cooldown_steps') or 0:,} "
                "cooling the rate down linearly.", ""]
        out += sittings_table(r) + [""]
        out += curves_table(r) + [""]
        sizes = config.get("curve_questions")
        out += [f"Each column: after the epoch ending at that step, exact match % of the "
                f"first {sizes} interpolate questions of the module (they choose no epoch); "
                f"final: all interpolate questions, with the kept (best held-out "
                f"validation) weights. Command ({command_note(r)}): "
                f"`{portable_command(r['command'])}`", ""]
    return "\n".join(out).rstrip()
