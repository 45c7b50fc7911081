"""The everyday-math experts and the fresh-sample scores that decide a preset's claims.

Experts (block ``math-everyday-experts``): each ``results/math/everyday20/experts/<run>/
results.json`` is a ``train.math`` run on one module alone (the run's folder starts with the
module's name), most of them ``--init_from`` the twenty-module model. Per run: its size and
what it started from (the preset it continued, or nothing: from scratch), steps,
cool-down (a run of several sittings not finished yet: its steps so far of its schedule's,
and its sitting), training hours, the module's curve (the first ``--curve_questions``
interpolate questions after every epoch: first, best, last), its final interpolate score with the kept weights, and the last epoch's training accuracy
(teacher-forced, per symbol) beside the kept epoch's held-out validation error: a model
that answers its training questions and not new ones has memorised them.

Fresh sample (block ``math-everyday-fresh``): each ``results/math/everyday20/fresh/
<name>.json`` is ``tools.math_savedmodel_accuracy --json`` of an exported model on a
sample of DeepMind's generator that chose nothing; one column per model, one row per
module, scores at or above :data:`~tools.report.math_tables.TARGET` in bold.
"""

import glob
import json
import os

from tools.report.common import portable_command
from tools.report.math_curves import curve
from tools.report.math_tables import TARGET

FOLDER = os.path.join("results", "math", "everyday20")


def _load(pattern):
    found = []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            found.append((path, json.load(f)))
    return found


def experts_markdown(root):
    """The ``math-everyday-experts`` block."""
    runs = _load(os.path.join(root, FOLDER, "experts", "*", "results.json"))
    if not runs:
        return f"No expert run is committed under `{FOLDER}/experts/` yet."
    lines = ["| run (module) | size, start | steps (cool-down) | training h | "
             "curve: first → best → last | final (kept weights) | training accuracy, last "
             "epoch | validation error, kept epoch |", "|---|---|---:|---:|---|---:|---:|---:|"]
    commands = []
    for path, r in runs:
        run = os.path.basename(os.path.dirname(path))
        (module,) = r["interpolate_accuracy_percent"]  # one module each
        config, points = r["config"], curve(r, module)
        best = max(points, key=lambda p: p[2])
        kept = min(r["history"], key=lambda e: e["valid_error_percent"])
        final = r["interpolate_accuracy_percent"][module]
        mark = "**" if final >= TARGET else ""
        steps = f"{r['steps']:,} ({config.get('cooldown_steps') or 0:,})"
        if r["steps"] < config.get("steps", r["steps"]):  # sittings to come, or cut short
            where = (f"sitting {len(r['sittings'])}" if r.get("sittings")
                     else f"stopped: {r.get('stopped', 'early')}")
            steps = (f"{r['steps']:,} of {config['steps']:,} "
                     f"({config.get('cooldown_steps') or 0:,}), {where}")
        start = config.get("init_from")
        start = f"from `{os.path.basename(os.path.normpath(start))}`" if start else "from scratch"
        lines.append(
            f"| `{run}` | {config.get('preset', '?')}, {start} | {steps} | "
            f"{r['train_seconds'] / 3600:.2f} | {points[0][2]:.1f} → {best[2]:.1f} "
            f"(step {best[0]:,}) → {points[-1][2]:.1f} | {mark}{final:.1f}{mark} | "
            f"{100 * r['history'][-1]['train_accuracy']:.1f} | "
            f"{kept['valid_error_percent']:.1f} (epoch {kept['epoch']}) |")
        commands.append(f"`{portable_command(r['command'])}`")
    return "\n".join(lines + [
        "", f"Curve: exact match % of the first {runs[0][1]['config']['curve_questions']} "
        "interpolate questions after each epoch; final: all interpolate questions. "
        "Commands: " + "; ".join(commands) + "."])


def fresh_markdown(root):
    """The ``math-everyday-fresh`` block."""
    scores = _load(os.path.join(root, FOLDER, "fresh", "*.json"))
    if not scores:
        return f"No fresh-sample score is committed under `{FOLDER}/fresh/` yet."
    names = [os.path.splitext(os.path.basename(p))[0] for p, _ in scores]
    modules = sorted({m for _, s in scores for m in s["modules"]})
    lines = ["| module | " + " | ".join(f"`{n}`" for n in names) + " |",
             "|---|" + "---:|" * len(names)]
    for module in modules:
        cells = []
        for _, s in scores:
            value = s["modules"].get(module, {}).get("accuracy_percent")
            cells.append("–" if value is None else
                         f"**{value:.1f}**" if value >= TARGET else f"{value:.1f}")
        lines.append(f"| `{module}` | " + " | ".join(cells) + " |")
    lines.append(f"| **modules ≥ {TARGET:g} %** | " + " | ".join(
        str(sum(r["accuracy_percent"] >= TARGET for r in s["modules"].values()))
        for _, s in scores) + " |")
    counts = sorted({r["questions"] for _, s in scores for r in s["modules"].values()})
    folders = sorted({s["questions_path"] if not s["questions_path"].endswith(".txt")
                      else os.path.dirname(s["questions_path"]) for _, s in scores})
    commands = [f"`python -m tools.math_savedmodel_accuracy {s['saved_model']} "
                f"{s['questions_path']} --json {FOLDER}/fresh/{n}.json`"
                for n, (_, s) in zip(names, scores)]
    return "\n".join(lines + [
        "", f"Exact match % on {'/'.join(f'{c:,}' for c in counts)} questions per module "
        f"of the fresh sample ({', '.join(folders)}). Commands: "
        + "; ".join(commands) + "."])
