"""The all-tasks TPR-RNN recipe ablation: which difference from the authors' code moves a
seed off the plateau. Reads committed runs and prints one row per run.

Runs are kept as ``results/babi/recipes/<recipe>/tpr_rnn-seed<N>/results.json`` (each with
its command); the earlier Appendix-recipe runs (``results/babi/all_tasks/``) are the
baseline rows. ``python -m tools.report`` places the table in
``results/studies/babi_recipe_ablation.md``.
"""

import glob
import json
import os
import re

BASELINE = os.path.join("results", "babi", "all_tasks")
RECIPES = os.path.join("results", "babi", "recipes")
TASK_3 = "3"  # trains on the 1,000 official questions available here, not 10,000


def runs(root):
    """``[(recipe, seed, results)]``: the Appendix baseline's, then each recipe's, by seed."""
    found = []
    patterns = [("appendix (earlier recipe)", os.path.join(root, BASELINE, "tpr_rnn-seed*"))]
    for folder in sorted(glob.glob(os.path.join(root, RECIPES, "*"))):
        patterns.append((os.path.basename(folder), os.path.join(folder, "tpr_rnn-seed*")))
    for recipe, pattern in patterns:
        for path in sorted(glob.glob(os.path.join(pattern, "results.json"))):
            seed = int(re.search(r"-seed(\d+)$", os.path.dirname(path)).group(1))
            with open(path) as f:
                found.append((recipe, seed, json.load(f)))
    return found


def row(recipe, seed, result):
    """One Markdown row: the run's length, best validation and test numbers."""
    errors = {t: float(e) for t, e in result["test_error_percent"].items()}
    without_3 = [e for t, e in errors.items() if t != TASK_3]
    failed = sorted((int(t) for t, e in errors.items() if e > 5.0))
    history = result.get("history", [])
    best = min((h["valid_error_percent"] for h in history), default=float("nan"))
    halved = next((h["epoch"] for h in history if h.get("learning_rate", 0) <
                   history[0].get("learning_rate", 0) * 0.75 and h["epoch"] > 1), None)
    config = result.get("config", {})
    return (f"| {recipe} | {seed} | {result['epochs']} ({result.get('stopped', '?')}) | "
            f"{config.get('optimizer', '?')} | {'–' if halved is None else halved} | "
            f"{best:.2f} | {sum(without_3) / len(without_3):.2f} | "
            f"{sum(errors.values()) / len(errors):.2f} | "
            f"{', '.join(map(str, failed)) or '–'} |")


def markdown(root):
    """The ablation table of every committed run, with the commands of the recipes."""
    found = runs(root)
    lines = ["| recipe | seed | epochs (stopped) | optimizer | first epoch at the halved lr | "
             "best valid error % | test error %, 19 tasks (no 3) | 20 tasks | "
             "failed tasks (> 5 %) |", "|---|---:|---|---|---:|---:|---:|---:|---|"]
    lines += [row(recipe, seed, result) for recipe, seed, result in found]
    commands = {}
    for recipe, _, result in found:
        commands.setdefault(recipe, re.sub(r"seed([= ]?)\d+", r"seed\1N", result["command"]))
    lines += ["", "Commands (`N`: the seed): "
              + "; ".join(f"{recipe}: `{command}`" for recipe, command in commands.items())
              + ". Task 3 trains on the 1,000 official questions available here."]
    return "\n".join(lines)
