"""What each bAbI table's committed runs cost to train here, in hours and CPU-hours.

    python -m tools.babi_costs          # Markdown on stdout; python -m tools.report puts it
                                        # into results/babi.md

Every committed ``results.json`` of a table (:data:`TABLES`) gives its training hours
(``train_seconds``, over every process of the run, resumes included) and, from its
``machine`` record, the intra-op threads it trained with: CPU-hours are hours × threads.
A run written before ``results.json`` recorded the machine counts as one thread
(:data:`UNRECORDED_THREADS`): the recipe runs under ``results/babi/recipes`` were trained
so (one intra-op thread, two runs side by side on the 2-core CPU); for the older runs it is
a lower bound. For a table with fewer runs than it needs, the CPU-hours still to spend are
estimated from the mean of its committed runs. For Tables 2 and 3 a needed run is a cell's
run with the paper's recipe; the other recipes' runs of ``--fallback_above`` (folders
``<operations>__all_tasks`` and ``<operations>__no_stop``) add to the cost and to the mean
cost per cell, not to the count.
"""

import glob
import json
import os

#: (table, committed results.json glob under results/babi, runs the table needs); a fourth
#: element, where present, marks the paths of runs that do not count towards that number.
TABLES = (
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
    for name, pattern, needed, *extra in TABLES:
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


def markdown(root="."):
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


def main():
    print(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
