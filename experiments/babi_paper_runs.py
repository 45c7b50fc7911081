"""Run and tabulate the single-task experiments of TPR-RNN Table 2 and Table 3.

    python -m experiments.babi_paper_runs --table 2 --seeds 0,1,2 --data_dir ../shared/data/babi \
        --dry_run
    python -m experiments.babi_paper_runs --table 2 --seeds 0 --data_dir ../shared/data/babi  # runs
    python -m experiments.babi_paper_runs --table 3 --data_dir ../shared/data/babi
    python -m experiments.babi_paper_runs --table 2 --report                 # Markdown only

Every run is one ``python -m train.babi`` process with the single-task recipe of Appendix A
and early stopping on the validation set (the reported test error is that of the
best-validation weights). ``--protocol`` picks how long a run may go on:

- ``long`` (default): at most 200 epochs (1.8 M examples); stop after 60 validations without
  improvement, or 20 once the validation error is 0 %. A validation improves on a lower
  error, or an equal one with a loss lower by more than 0.001 nats per example.
- ``patience20``: at most 100 epochs, patience 20, no early stop at 0 % either
  (``--patience_at_zero=-1``). Measured too short: task 16 sat at ~50 % validation error
  for 110 epochs before falling to 0.2 % (``results/babi.md``), and runs stopped on such
  plateaus by patience 20 (tasks 6, 16, 17, 18 in some seeds).

The paper says only that it stops early on the validation set; the authors' code trains
without stopping and keeps every validated checkpoint.

``--fallback_above PCT`` adds a second recipe, chosen on the validation set only. Appendix A
tuned its single-task optimiser (Nadam lr 0.008, β1 0.6, β2 0.4, batch 128) for convergence
speed and says that "with the exception of a few tasks that were sensible to the momentum
parameter, similar final performance can be achieved with the default hyper-parameters". When
a run with the paper's recipe ends with a best validation error above PCT %, the same task
and seed are trained again with the optimiser of Appendix A's all-tasks model (``all_tasks``:
lr 0.001, β1 0.9, β2 0.999, batch 32; model sizes unchanged) and the run with the lower best
validation error is reported (the paper's on a tie). Its epoch cap is twice the protocol's
(400 under ``long``; the patience is the same): the first such run measured, task 17 seed 1,
was still improving when it reached 200 epochs (validation error 17.7 % at epoch 147, 7.0 %
at 200). The test set plays no part in the
choice. Such runs go to ``<operations>__all_tasks`` beside the paper's; the report marks them.

Where the better of those two runs still ends above PCT % on validation, a third run trains
the paper's recipe to the protocol's epoch cap without early stopping (``no_stop``: patience
as long as the cap; it still stops 20 validations after reaching 0 %), as the authors' code
trains, and the lowest best validation error of the three is reported (earlier recipes win
ties). Measured before it was added: task 16 seed 0 stopped by patience 60 at epoch 78 with
49.3 % test error, at 55 % validation error since epoch 20; trained on without stopping, its
validation error fell from 57 % at epoch 80 to 6 % at 100 and 0.4 % at 120.

``--jobs 2`` runs two trainings at once, each with one intra-op thread
(``TF_NUM_INTRAOP_THREADS``): on the 2-core CPU the two together train about 1.6× as many
examples per second as one run with both cores (measured in ``results/babi.md``); each run's
output goes to ``train.log`` in its folder. Runs go to
``<runs>/<protocol>/table<N>/<operations>/task<T>-seed<S>``; a finished run's
``results.json`` is also copied to the same path under ``--keep`` (default
``results/babi/paper_runs``, committed), and a run whose ``results.json`` exists in either
place is skipped. An interrupted one resumes from its checkpoint when started again, so the
grid can be worked off over several sittings, also on a new machine that has only the
committed JSON (a machine here is kept for three hours; ``runs/`` does not survive it). ``--report`` prints, per task, the best and mean ±
std of the test error over the finished seeds next to the paper's columns (Table 2), or the
failed tasks (> 5 % test error) per operation set next to the paper's (Table 3). Task 3
trains on the 1,000 official questions available here (see the data README).
"""

import concurrent.futures
import os
import subprocess
import sys
import time

import numpy as np

from experiments.babi_paper_grid import (  # noqa: F401 (the grid, read by the report too)
    ORDER, TABLE3_TASKS, grid, keep_result, kept_path, load, load_run, needs_fallback,
    needs_no_stop, run_dir, selected)
from experiments.papers import TPR_RNN_TABLE2, TPR_RNN_TABLE3
from tpr_keras.training.stop_reasons import STOP_LABELS  # noqa: E402

PROTOCOLS = {
    "long": ["--epochs=200", "--patience=60", "--patience_at_zero=20", "--min_delta_loss=0.001"],
    "patience20": ["--epochs=100", "--patience=20", "--patience_at_zero=-1",
                   "--min_delta_loss=0.001"],
}


# Optimiser settings a run may use. "paper": Appendix A's single-task recipe (the train.babi
# preset's own); "all_tasks": Appendix A's all-tasks optimiser, the paper's "default
# hyper-parameters", with the single-task model sizes.
RECIPES = {
    "paper": [],
    "all_tasks": ["--learning_rate=0.001", "--beta_1=0.9", "--beta_2=0.999", "--batch_size=32"],
    "no_stop": [],
    # The authors' released training step (train.babi --recipe authors_code: their Nadam
    # with its random start, a trained pad row, 51 warm-up steps, no halving, no length
    # buckets) at their code's rate and batch (lr 0.001, beta 0.9/0.999, batch 32).
    "authors_code": ["--recipe=authors_code"],
    # The same step at Appendix A's single-task rate and batch: isolates the step's form.
    "authors_step": ["--recipe=authors_code", "--learning_rate=0.008", "--beta_1=0.6",
                     "--beta_2=0.4", "--batch_size=128"],
}
#: Recipes run on their own with ``--recipe`` (not part of the fallback chain).
COMPARISONS = ("authors_step", "authors_code")
# The fallback recipe's epoch cap per protocol (after PROTOCOLS' flags, so it wins).
FALLBACK_EPOCHS = {"long": 400, "patience20": 200}


def epoch_cap(protocol):
    """The protocol's ``--epochs``."""
    return int(next(f for f in PROTOCOLS[protocol] if f.startswith("--epochs=")).split("=")[1])


def command(args, operations, task, seed, recipe="paper"):
    folder = run_dir(args.runs, args.table, operations, task, seed, args.protocol, recipe)
    # After the protocol's flags, so that absl's last value wins.
    length = {"all_tasks": [f"--epochs={FALLBACK_EPOCHS[args.protocol]}"],
              "no_stop": [f"--patience={epoch_cap(args.protocol)}"]}.get(recipe, [])
    return [sys.executable, "-m", "train.babi", f"--task={task}", f"--seed={seed}",
            f"--operations={operations}", f"--model_dir={folder}",
            *([f"--data_dir={args.data_dir}"] if args.data_dir else []),
            *PROTOCOLS[args.protocol], *RECIPES[recipe], *length, "--verbose=2"]


STOPS = STOP_LABELS


def describe(result, task, recipe="paper"):
    """``"0.1 (61 ep, patience)"``: a run's test error, epochs and why it stopped."""
    stop = STOPS.get(result.get("stopped"), result.get("stopped") or "?")
    mark = "" if recipe == "paper" else f", {recipe} recipe"
    return f"{result['test_error_percent'][str(task)]:.1f} ({result['epochs']} ep, {stop}{mark})"


def paper_means(tasks):
    """The paper's Table 2 over ``tasks``: (mean of the best runs, mean of the means)."""
    return (float(np.mean([float(TPR_RNN_TABLE2[t][0]) for t in tasks])),
            float(np.mean([float(TPR_RNN_TABLE2[t][1].split()[0]) for t in tasks])))


def report_lines(args, tasks, seeds):
    """Table 2 or 3 as Markdown lines, from the runs ``selected`` finds."""
    if args.table == 2:
        lines = ["| task | per seed: test error % (epochs, stop) | best % | mean ± std % | "
                 "paper best | paper mean ± std |",
                 "|---:|---|---:|---:|---:|---:|"]
        bests, means, failed_best, failed_mean, counted = [], [], [], [], []
        for task in tasks:
            chosen = {s: selected(args, "all", task, s) for s in seeds}
            runs = {s: r for s, (r, _) in chosen.items() if r is not None}
            best, mean = TPR_RNN_TABLE2[task]
            if not runs:
                lines.append(f"| {task} | – | – | – | {best} | {mean} |")
                continue
            errors = [r["test_error_percent"][str(task)] for r in runs.values()]
            counted.append(task)
            bests.append(min(errors))
            means.append(float(np.mean(errors)))
            if min(errors) > 5:
                failed_best.append(task)
            if np.mean(errors) > 5:
                failed_mean.append(task)
            note = " (1k train)" if task == 3 else ""
            per_seed = "; ".join(f"s{s}: {describe(r, task, chosen[s][1])}"
                                 for s, r in runs.items())
            lines.append(f"| {task}{note} | {per_seed} | {min(errors):.1f} | "
                         f"{np.mean(errors):.2f} ± {np.std(errors):.2f} | {best} | {mean} |")
        if bests:
            paper_best, paper_mean = paper_means(counted)
            lines += ["", f"Over {len(bests)} tasks: mean of the best runs "
                      f"{np.mean(bests):.2f} % (paper {paper_best:.2f} over the same tasks), "
                      f"mean of the seed means {np.mean(means):.2f} % (paper {paper_mean:.2f}). "
                      f"Failed (> 5 %) by the best seed: {len(failed_best)} "
                      f"({', '.join(map(str, failed_best)) or 'none'}; paper 0); by the seed "
                      f"mean: {len(failed_mean)} ({', '.join(map(str, failed_mean)) or 'none'})."]
            if 3 in counted and len(counted) > 1:
                keep = [i for i, t in enumerate(counted) if t != 3]
                paper_best, paper_mean = paper_means([counted[i] for i in keep])
                lines.append(f"Without task 3 (900 training questions here): mean of the best "
                             f"runs {np.mean([bests[i] for i in keep]):.2f} % (paper "
                             f"{paper_best:.2f}), mean of the seed means "
                             f"{np.mean([means[i] for i in keep]):.2f} % (paper "
                             f"{paper_mean:.2f}) over {len(keep)} tasks.")
        return lines
    lines = ["| operations | " + " | ".join(f"task {t}" for t in tasks) +
             " | failed (> 5 %, seed mean) | paper's failed tasks |",
             "|---|" + "---:|" * len(tasks) + "---|---|"]
    for operations in ("write", "write+move", "write+backlink"):
        cells, failed = [], []
        for task in tasks:
            errors = [r["test_error_percent"][str(task)] for s in seeds
                      if (r := selected(args, operations, task, s)[0]) is not None]
            if not errors:
                cells.append("–")
                continue
            cells.append(f"{np.mean(errors):.1f}")
            if np.mean(errors) > 5:
                failed.append(task)
        paper = ", ".join(map(str, TPR_RNN_TABLE3[operations])) or "none"
        lines.append(f"| {operations} | " + " | ".join(cells) +
                     f" | {', '.join(map(str, failed)) or 'none'} | {paper} |")
    return lines


def markdown(root, table, seeds=(0, 1, 2), protocol="long", fallback_above=1.0):
    """Table 2 or 3 from the committed ``results.json`` alone (``results/babi/paper_runs``
    under ``root``), as ``--report`` prints it for ``--fallback_above 1`` runs, with how many
    of the grid's cells have a run; ``python -m tools.report`` puts it into results/babi.md."""
    import argparse

    args = argparse.Namespace(table=table, runs=None, protocol=protocol,
                              keep=os.path.join(root, "results", "babi", "paper_runs"),
                              fallback_above=fallback_above)
    tasks = list(range(1, 21)) if table == 2 else list(TABLE3_TASKS)
    cells = grid(table, tasks, seeds)
    done = sum(selected(args, *cell)[0] is not None for cell in cells)
    return (f"{done} of {len(cells)} runs committed (seeds "
            f"{', '.join(map(str, seeds))}, protocol `{protocol}`, fallback above "
            f"{fallback_above:g} % validation error).\n\n"
            + "\n".join(report_lines(args, tasks, seeds)))


def comparison_lines(args, tasks, seeds, operation_sets, recipes):
    """Per operation set and task: the test error of each seed under the reported runs
    (``selected``: the paper's recipe with its fallbacks, each seed's recipe named), under
    the paper's recipe alone (``paper``, no fallback, as one recipe is compared with
    another) and under each recipe of ``recipes``, with the seed mean and how many seeds
    failed (> 5 %)."""
    lines = ["| operations | task | recipe | per seed: test error % (epochs, stop) | mean % | "
             "failed seeds | paper |", "|---|---:|---|---|---:|---:|---|"]
    for operations in operation_sets:
        for task in tasks:
            paper = "failed" if task in TPR_RNN_TABLE3.get(operations, ()) else "solved"
            for recipe in ("reported", "paper", *recipes):
                runs = {s: (selected(args, operations, task, s) if recipe == "reported"
                            else (load_run(args, operations, task, s, recipe), recipe))
                        for s in seeds}
                runs = {s: r for s, r in runs.items() if r[0] is not None}
                if not runs:
                    continue
                errors = [r["test_error_percent"][str(task)] for r, _ in runs.values()]
                per_seed = "; ".join(
                    f"s{s}: {describe(r, task, name if recipe == 'reported' else 'paper')}"
                    for s, (r, name) in runs.items())
                lines.append(f"| {operations} | {task} | {recipe} | {per_seed} | "
                             f"{np.mean(errors):.1f} | {sum(e > 5 for e in errors)} of "
                             f"{len(errors)} | {paper} |")
    return lines


def comparison_markdown(root, tasks=(9, 10, 13), operation_sets=("write", "write+move"),
                        recipes=COMPARISONS, seeds=(0, 1, 2), protocol="long"):
    """:func:`comparison_lines` from the committed ``results.json`` alone, for
    ``python -m tools.report``."""
    import argparse

    args = argparse.Namespace(table=3, runs=None, protocol=protocol, fallback_above=1.0,
                              keep=os.path.join(root, "results", "babi", "paper_runs"))
    return "\n".join(comparison_lines(args, list(tasks), list(seeds), list(operation_sets),
                                      list(recipes)))


def execute(args, runs):
    """Trains every run, ``args.jobs`` at a time; returns the runs whose process failed."""
    env = dict(os.environ)
    if args.jobs > 1:
        threads = str(max(1, (os.cpu_count() or args.jobs) // args.jobs))
        env.update(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)

    def one(run):
        cmd = command(args, *run)
        folder = run_dir(args.runs, args.table, *run[:3], args.protocol, *run[3:])
        os.makedirs(folder, exist_ok=True)
        print("running: python " + " ".join(cmd[1:]), flush=True)
        start = time.time()
        with open(os.path.join(folder, "train.log"), "a") as log:
            code = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        kept = keep_result(args, *run)
        error = load(args, *run)
        recipe = f" ({run[3]} recipe)" if run[3:] else ""
        print(f"finished: {run[0]} task {run[1]} seed {run[2]}{recipe}: exit {code}, test error "
              f"{'–' if error is None else f'{error:.2f} %'}, {time.time() - start:.0f} s"
              + (f"; commit {kept}" if kept else ""), flush=True)
        return run if code else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        return [run for run in pool.map(one, runs) if run is not None]


def main():
    from serving.command_flags import Command

    parser = Command("python -m experiments.babi_paper_runs", __doc__.split("\n\n")[0])
    parser.enum("table", None, ["2", "3"], "the paper's Table 2 (per-task runs) or 3 "
                "(the operations' ablation)", required=True)
    parser.string("tasks", None, "comma list (default: 1..20 for Table 2, the 8 of Table 3)")
    parser.string("seeds", "0,1,2")
    parser.string("data_dir", None)
    parser.string("runs", "runs/paper")
    parser.string("keep", "results/babi/paper_runs",
                  "where finished runs' results.json are copied, to be committed "
                  "('' to keep none); runs found there are skipped")
    parser.enum("protocol", "long", sorted(PROTOCOLS),
                "how long a run may train (see the module doc)")
    parser.integer("jobs", 1, "trainings at once (each gets cores/jobs intra-op threads)")
    parser.float("fallback_above", None,
                 "retrain with the all-tasks optimiser where the paper recipe's "
                 "best validation error exceeds this %, and without early stopping where "
                 "both still exceed it (see the module doc)")
    parser.enum("recipe", "paper", ["paper", *COMPARISONS],
                "paper: the paper's recipe with the --fallback_above chain; otherwise "
                "run that recipe alone and compare it with the reported runs (see RECIPES)")
    parser.string("operations", None, "comma list of operation sets (default: the table's)")
    parser.boolean("dry_run", False, "print the commands only")
    parser.boolean("report", False, "tabulate finished runs only")
    args = parser.parse()
    args.table = int(args.table)
    default_tasks = range(1, 21) if args.table == 2 else TABLE3_TASKS
    tasks = [int(t) for t in args.tasks.split(",")] if args.tasks else list(default_tasks)
    seeds = [int(s) for s in args.seeds.split(",")]
    operation_sets = args.operations.split(",") if args.operations else None
    failures = []
    if args.recipe != "paper":
        todo = [(*run, args.recipe) for run in grid(args.table, tasks, seeds, operation_sets)
                if args.report is False and load(args, *run, args.recipe) is None]
        for run in todo if args.dry_run else ():
            print("python " + " ".join(command(args, *run)[1:]))
        failures = [] if args.dry_run else execute(args, todo)
        if not args.dry_run:
            print("\n".join(comparison_lines(
                args, tasks, seeds, operation_sets or ["write", "write+move", "write+backlink"],
                [args.recipe])))
        return 1 if failures else 0
    if not args.report:
        todo = [run for run in grid(args.table, tasks, seeds, operation_sets)
                if load(args, *run) is None]
        if args.dry_run:
            for run in todo:
                print("python " + " ".join(command(args, *run)[1:]))
        else:
            failures = execute(args, todo)
        # Second recipe where the first ended above the threshold on validation.
        fallback = [(*run, "all_tasks") for run in grid(args.table, tasks, seeds)
                    if needs_fallback(args, *run) and load(args, *run, "all_tasks") is None]
        if args.dry_run:
            for run in fallback:
                print("python " + " ".join(command(args, *run)[1:]))
        elif fallback:
            failures += execute(args, fallback)
        # Third recipe where the better of the two still ended above it.
        third = [(*run, "no_stop") for run in grid(args.table, tasks, seeds)
                 if needs_no_stop(args, *run)]
        if args.dry_run:
            for run in third:
                print("python " + " ".join(command(args, *run)[1:]))
        elif third:
            failures += execute(args, third)
    if not args.dry_run:
        print("\n".join(report_lines(args, tasks, seeds)))
    if failures:
        print(f"{len(failures)} run(s) failed (see their train.log): {failures}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
