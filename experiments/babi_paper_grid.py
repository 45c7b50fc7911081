"""The grid of Tables 2 and 3's single-task runs (``experiments/babi_paper_runs.py``): where
each run lives, what a finished run holds, and which run a cell reports.

A run is ``(operations, task, seed, recipe)``; it trains in
``<runs>/<protocol>/table<N>/<operations>[__<recipe>]/task<T>-seed<S>`` and its
``results.json`` is kept (committed) at the same path under ``--keep``. ``args`` is the
command's parsed flags (``runs``, ``keep``, ``table``, ``protocol``, ``fallback_above``).
"""

import json
import os
import shutil

#: The tasks of Table 3.
TABLE3_TASKS = (3, 6, 9, 10, 12, 13, 17, 19)
#: The recipes of the fallback chain in the order they run; an earlier one is reported on a
#: tie.
ORDER = ("paper", "all_tasks", "no_stop")


def grid(table, tasks, seeds, operation_sets=None):
    """``(operations, task, seed)`` of every run of the table."""
    operation_sets = operation_sets or (
        ["all"] if table == 2 else ["write", "write+move", "write+backlink"])
    return [(ops, task, seed) for ops in operation_sets for task in tasks for seed in seeds]


def run_dir(runs, table, operations, task, seed, protocol="long", recipe="paper"):
    folder = operations.replace("+", "_") + ("" if recipe == "paper" else f"__{recipe}")
    return os.path.join(runs, protocol, f"table{table}", folder, f"task{task}-seed{seed}")


def kept_path(args, operations, task, seed, recipe="paper"):
    """Where the run's ``results.json`` is kept (committed): the run's path under ``--keep``."""
    keep = getattr(args, "keep", None)
    return keep and os.path.join(
        run_dir(keep, args.table, operations, task, seed, args.protocol, recipe), "results.json")


def load_run(args, operations, task, seed, recipe="paper"):
    """The run's ``results.json``, from its run folder or its kept copy (None while it has
    not finished)."""
    path = args.runs and os.path.join(
        run_dir(args.runs, args.table, operations, task, seed, args.protocol, recipe),
        "results.json")
    kept = kept_path(args, operations, task, seed, recipe)
    for candidate in (path, kept):
        if candidate and os.path.exists(candidate):
            with open(candidate) as f:
                return json.load(f)
    return None


def keep_result(args, operations, task, seed, recipe="paper"):
    """Copies a finished run's ``results.json`` to its kept path (to be committed)."""
    source = os.path.join(
        run_dir(args.runs, args.table, operations, task, seed, args.protocol, recipe),
        "results.json")
    kept = kept_path(args, operations, task, seed, recipe)
    if kept and os.path.exists(source):
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        shutil.copyfile(source, kept)
        return kept
    return None


def load(args, operations, task, seed, recipe="paper"):
    """The run's test error (%) on its task, or None."""
    result = load_run(args, operations, task, seed, recipe)
    return None if result is None else result["test_error_percent"][str(task)]


def needs_fallback(args, operations, task, seed):
    """Whether the paper-recipe run finished above ``--fallback_above`` % validation error."""
    result = load_run(args, operations, task, seed)
    return (args.fallback_above is not None and result is not None
            and result["valid_error_percent"][str(task)] > args.fallback_above)


def selected(args, operations, task, seed):
    """``(results, recipe)`` of the run reported for a cell, chosen on validation error only.

    The paper recipe's run, unless ``--fallback_above`` is set and that run erred above it
    on the validation set: then the finished run of :data:`ORDER` with the lowest best
    validation error (the earlier on a tie). ``(None, None)`` while nothing has finished.
    """
    paper = load_run(args, operations, task, seed)
    if paper is None or not needs_fallback(args, operations, task, seed):
        return paper, (None if paper is None else "paper")
    key = str(task)
    best, recipe = paper, "paper"
    for other_recipe in ORDER[1:]:
        other = load_run(args, operations, task, seed, other_recipe)
        if other is not None and (other["valid_error_percent"][key]
                                  < best["valid_error_percent"][key]):
            best, recipe = other, other_recipe
    return best, recipe


def needs_no_stop(args, operations, task, seed):
    """Whether the cell's ``all_tasks`` run has finished and the better of its two runs still
    erred above ``--fallback_above`` % on validation, with no ``no_stop`` run yet."""
    if (not needs_fallback(args, operations, task, seed)
            or load_run(args, operations, task, seed, "all_tasks") is None
            or load_run(args, operations, task, seed, "no_stop") is not None):
        return False
    result, _ = selected(args, operations, task, seed)
    return result["valid_error_percent"][str(task)] > args.fallback_above
