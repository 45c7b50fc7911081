"""The bAbI studies' tables from committed runs: the all-tasks recipe ablation, MemN2N's
linear start beside the authors' MATLAB code, and what each table's runs cost to train.

Recipe ablation (block ``babi-recipes``): ``results/babi/recipes/<recipe>/tpr_rnn-seed<N>``
beside the Appendix-recipe runs (``results/babi/all_tasks/``), one row per run.

Linear-start check (block ``babi-memn2n-ls-check``): ``results/babi/memn2n_ls_check/<run>``.
Ours are what ``python -m train.babi --task all --model memn2n --size joint_paper --setting
1k --epochs 90 --decay_every_epochs 15`` writes (their code's own 1k joint schedule: 30
epochs of linear start, then 60 halved every 15); the MATLAB code's (``matlab-seed<S>``,
``experiments.memn2n_matlab_check``) hold the per-epoch lines its ``train.m`` prints in the
same keys. One row per run: training error and mean training loss per example at a few
epochs (1-30 are the linear start), then the test error of the final weights.

Costs (block ``babi-costs``): every committed ``results.json`` of a table
(:data:`COST_TABLES`) gives its training hours (``train_seconds``, over every process of the
run, resumes included) and, from its ``machine`` record, the intra-op threads it trained
with: CPU-hours are hours × threads. A run written before ``results.json`` recorded the
machine counts as one thread (:data:`UNRECORDED_THREADS`): the recipe runs under
``results/babi/recipes`` were trained so (one intra-op thread, two runs side by side on the
2-core CPU); for the older runs it is a lower bound. For a table with fewer runs than it
needs, the CPU-hours still to spend are estimated from the mean of its committed runs. For
Tables 2 and 3 a needed run is a cell's run with the paper's recipe; the other recipes' runs
of ``--fallback_above`` (folders ``<operations>__all_tasks`` and ``<operations>__no_stop``)
add to the cost and to the mean cost per cell, not to the count.
"""

import glob
import json
import os
import re


# ------------------------------------------------------------------- recipe ablation
BASELINE = os.path.join("results", "babi", "all_tasks")
RECIPES = os.path.join("results", "babi", "recipes")
TASK_3 = "3"  # trains on the 1,000 official questions available here, not 10,000


def recipe_runs(root):
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


def recipe_row(recipe, seed, result):
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


def recipes_markdown(root):
    """The ablation table of every committed run, with the commands of the recipes."""
    found = recipe_runs(root)
    lines = ["| recipe | seed | epochs (stopped) | optimizer | first epoch at the halved lr | "
             "best valid error % | test error %, 19 tasks (no 3) | 20 tasks | "
             "failed tasks (> 5 %) |", "|---|---:|---|---|---:|---:|---:|---:|---|"]
    lines += [recipe_row(recipe, seed, result) for recipe, seed, result in found]
    commands = {}
    for recipe, _, result in found:
        commands.setdefault(recipe, re.sub(r"seed([= ]?)\d+", r"seed\1N", result["command"]))
    lines += ["", "Commands (`N`: the seed): "
              + "; ".join(f"{recipe}: `{command}`" for recipe, command in commands.items())
              + ". Task 3 trains on the 1,000 official questions available here."]
    return "\n".join(lines)


# ------------------------------------------------------------------- linear start
LS_CHECK = os.path.join("results", "babi", "memn2n_ls_check")
LS_EPOCHS = (2, 10, 30, 45, 60, 90)  # 1-30: the linear start; 31-90: the softmax is back
LS_TASKS = ("15", "16")  # the tasks a linear start is known to decide (§4.2, Table 1)


def train_error(record):
    """A history record's training error in %, from either code's keys."""
    if "train_error_percent" in record:
        return float(record["train_error_percent"])
    return 100.0 * (1.0 - float(record["train_accuracy"]))


def ls_check_runs(root):
    """``{run name: results}`` of every committed comparison run, by name."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(root, LS_CHECK, "*", "results.json"))):
        with open(path, encoding="utf-8") as f:
            runs[os.path.basename(os.path.dirname(path))] = json.load(f)
    return runs


def ls_check_row(name, result):
    """One Markdown row of ``result``."""
    by_epoch = {int(h["epoch"]): h for h in result.get("history", [])}
    cells = []
    for epoch in LS_EPOCHS:
        h = by_epoch.get(epoch)
        loss = None if h is None else h.get("train_loss")
        cells.append("–" if h is None else f"{train_error(h):.1f} / "
                     + ("∞" if loss is None else f"{float(loss):.2f}"))
    test = result.get("test_error_percent") or {}
    if len(test) == 20:
        values = [float(v) for v in test.values()]
        cells.append(f"{sum(values) / 20:.1f}")
        cells += [f"{float(test[t]):.1f}" for t in LS_TASKS]
        cells.append(str(sum(v > 5.0 for v in values)))
    else:
        cells += ["–"] * (2 + len(LS_TASKS))
    return f"| {name} | {result.get('code', 'ours')} | " + " | ".join(cells) + " |"


def ls_check_markdown(root):
    """The comparison table and each run's command."""
    runs = ls_check_runs(root)
    if not runs:
        return f"No comparison run is committed (`{LS_CHECK}/<run>/results.json`)."
    epochs = " | ".join(f"epoch {e}{' (LS)' if e <= 30 else ''}: train error % / loss"
                        for e in LS_EPOCHS)
    head = ("| run | code | " + epochs
            + " | test error %, 20 tasks | " + " | ".join(f"task {t}" for t in LS_TASKS)
            + " | failed (> 5 %) |")
    lines = [head, "|---|---|" + "---:|" * (len(LS_EPOCHS) + 2 + len(LS_TASKS)), *(
        ls_check_row(name, result) for name, result in runs.items())]
    lines.append("")
    for name, result in runs.items():
        source = result.get("source", {})
        where = (f" (code at `{source['commit'][:7]}`"
                 f"{', uncommitted changes' if source.get('dirty') else ''})"
                 if source.get("commit") else "")
        lines.append(f"- {name}: `{result.get('command', '?')}`{where}.")
    return "\n".join(lines)


# -------------------------------------------------------------------------- costs
#: (table, committed results.json glob under results/babi, runs the table needs); a fourth
#: element, where present, marks the paths of runs that do not count towards that number.
COST_TABLES = (
    ("Table 1, TPR-RNN, the authors' recipe, 130 epochs (5 seeds)",
     "recipes/all_tasks_authors_130ep/tpr_rnn-seed*/results.json", 5),
    ("Recipe ablation: the authors' recipe, 80 epochs (the first 80 of the 130)",
     "recipes/all_tasks_authors_80ep/tpr_rnn-seed*/results.json", None),
    ("Recipe ablation: the authors' recipe, 50 epochs",
     "recipes/all_tasks_authors/tpr_rnn-seed*/results.json", None),
    ("Earlier Table 1, TPR-RNN, Appendix A recipe, 50 epochs",
     "all_tasks/tpr_rnn-seed*/results.json", None),
    ("MemN2N joint, §4.2's schedule without restart (20 epochs)",
     "all_tasks/memn2n-seed*/results.json", None),
    ("MemN2N joint at the paper's protocol (10 runs, best by training error)",
     "memn2n_joint/seed*/results.json", 10),
    ("Table 2, single-task TPR-RNN (20 tasks, 3 seeds)",
     "paper_runs/long/table2/*/*/results.json", 60, "__"),
    ("Table 3, single-task TPR-RNN ablations (3 operation sets, 8 tasks, 3 seeds)",
     "paper_runs/long/table3/*/*/results.json", 72, "__"),
    ("Ablation: MemN2N joint at the paper's protocol without the pad word's gradient",
     "memn2n_joint_without_pad_gradient/seed*/results.json", None),
    ("Ablation: MemN2N joint at the paper's protocol with '. ?' kept as words",
     "memn2n_joint_sentence_ends_kept/seed*/results.json", None),
)
#: Threads of a run whose results.json has no ``machine`` record.
UNRECORDED_THREADS = 1


def run_cost(result):
    """``(hours, cpu_hours, threads_recorded)`` of one run's results."""
    hours = (result.get("train_seconds") or 0.0) / 3600
    machine = result.get("machine")
    if not machine:
        return hours, hours * UNRECORDED_THREADS, False
    # No thread count set: the framework's default, one thread per core.
    return hours, hours * (machine.get("intra_op_threads") or machine["cpus"]), True


def table_costs(root):
    """One dict per :data:`TABLES` row: runs, hours, CPU-hours, estimate left."""
    rows = []
    for name, pattern, needed, *extra in COST_TABLES:
        runs, count = [], 0
        for path in sorted(glob.glob(os.path.join(root, "results", "babi", pattern),
                                     recursive=True)):
            with open(path, encoding="utf-8") as f:
                runs.append(run_cost(json.load(f)))
            count += not (extra and extra[0] in os.path.relpath(path, root))
        hours = sum(r[0] for r in runs)
        cpu_hours = sum(r[1] for r in runs)
        left = None
        if needed and count and count < needed:
            left = (needed - count) * cpu_hours / count
        rows.append({"table": name, "runs": count, "extra_runs": len(runs) - count,
                     "needed": needed, "hours": hours, "cpu_hours": cpu_hours,
                     "unrecorded": sum(not r[2] for r in runs), "cpu_hours_left": left})
    return rows


def costs_markdown(root="."):
    """Each table's committed runs: hours, CPU-hours, and what is still to spend."""
    lines = ["| table | committed runs | training hours | CPU-hours | mean CPU-hours a run "
             "| CPU-hours still to spend (estimate) |", "|---|---:|---:|---:|---:|---:|"]
    rows = table_costs(root)
    for row in rows:
        runs = (f"{row['runs']}" + (f" of {row['needed']}" if row["needed"] else "")
                + (f" (+{row['extra_runs']} of other recipes)" if row["extra_runs"] else ""))
        if not row["runs"]:
            lines.append(f"| {row['table']} | {runs} | – | – | – | not yet measured |")
            continue
        left = "–" if row["cpu_hours_left"] is None else f"{row['cpu_hours_left']:.1f}"
        lines.append(f"| {row['table']} | {runs} | {row['hours']:.1f} | "
                     f"{row['cpu_hours']:.1f} | {row['cpu_hours'] / row['runs']:.2f} | {left} |")
    unrecorded = sum(row["unrecorded"] for row in rows)
    lines += ["", "Training hours are `train_seconds` summed over a table's committed "
              "`results.json`; CPU-hours multiply each run's hours by its intra-op threads "
              "(its `machine` record)."
              + (f" {unrecorded} run(s) predate that record and count as one thread: the "
                 "recipe runs were trained so (two one-thread runs side by side); for the "
                 "others it is a lower bound." if unrecorded else "")]
    return "\n".join(lines)

