"""Markdown tables from ``train.babi`` runs: ``python -m tools.babi_table RUN_DIR...``.

Each RUN_DIR is a ``--model_dir`` holding ``results.json``. Prints one row per
task (test and validation error, epochs, wall time) next to the paper's
Table 2 single-task numbers, and, with ``--curve``, the per-epoch history of
the first run. With ``--all_tasks`` the first run is one joint model: its
per-task test errors are printed next to Appendix B's Table 4 (best and mean of
the paper's 8 runs) with the mean error and failed tasks next to Table 1, and
the curve carries the wall time since the run started (restarts included).

    python -m tools.babi_table runs/babi-all --all_tasks --curve
"""

import json
import os

# Schlag & Schmidhuber (2018) Table 2, TPR-RNN single task: (best, mean ± std).
PAPER_TABLE2 = {
    1: ("0.0", "0.02 ± 0.05"), 2: ("0.0", "0.06 ± 0.09"), 3: ("1.2", "1.78 ± 0.58"),
    4: ("0.0", "0.02 ± 0.04"), 5: ("0.5", "0.61 ± 0.17"), 6: ("0.0", "0.22 ± 0.19"),
    7: ("0.5", "2.78 ± 1.81"), 8: ("0.1", "0.47 ± 0.45"), 9: ("0.0", "0.14 ± 0.13"),
    10: ("0.3", "1.24 ± 1.30"), 11: ("0.0", "0.14 ± 0.11"), 12: ("0.0", "0.04 ± 0.05"),
    13: ("0.3", "0.42 ± 0.11"), 14: ("0.0", "0.24 ± 0.29"), 15: ("0.0", "0.0 ± 0.0"),
    16: ("0.0", "0.02 ± 0.045"), 17: ("0.4", "0.9 ± 0.69"), 18: ("0.1", "0.64 ± 0.33"),
    19: ("0.0", "12.64 ± 17.39"), 20: ("0.0", "0.0 ± 0.00"),
}


# Appendix B, Table 4 (8 all-tasks runs): (best, mean ± std) per task; Table 1's summary.
PAPER_TABLE4 = {
    1: ("0.00", "0.05 ± 0.08"), 2: ("0.30", "0.64 ± 0.46"), 3: ("2.20", "4.14 ± 1.85"),
    4: ("0.00", "0.05 ± 0.08"), 5: ("0.70", "1.00 ± 0.25"), 6: ("0.00", "0.36 ± 0.39"),
    7: ("1.00", "1.88 ± 0.82"), 8: ("0.20", "0.51 ± 0.37"), 9: ("0.10", "0.40 ± 0.43"),
    10: ("0.20", "0.89 ± 0.75"), 11: ("0.50", "1.18 ± 0.48"), 12: ("0.00", "1.35 ± 1.14"),
    13: ("1.90", "2.38 ± 0.47"), 14: ("0.20", "0.85 ± 0.54"), 15: ("0.00", "0.03 ± 0.07"),
    16: ("0.00", "0.70 ± 1.35"), 17: ("0.60", "3.44 ± 3.16"), 18: ("0.00", "0.72 ± 0.60"),
    19: ("1.20", "6.96 ± 7.03"), 20: ("0.00", "0.00 ± 0.00"),
}
PAPER_TABLE1 = {"mean": "1.34 ± 0.52 (best 0.78)", "failed": "0.86 ± 1.11"}


def all_tasks_table(results):
    """Per-task test errors of one joint run next to Table 4, then the Table 1 summary."""
    test, valid = results["test_error_percent"], results["valid_error_percent"]
    print("| task | test error % (ours) | valid error % | paper best (Table 4) | paper mean |")
    print("|---:|---:|---:|---:|---:|")
    for task in sorted(test, key=int):
        best, mean = PAPER_TABLE4[int(task)]
        print(f"| {task} | {test[task]:.1f} | {valid[task]:.1f} | {best} | {mean} |")
    failed = sum(error > 5 for error in test.values())
    print(f"| **mean** | **{results['test_error_percent_mean']:.2f}** | "
          f"{sum(valid.values()) / len(valid):.2f} | 0.78 | {PAPER_TABLE1['mean']} |")
    print(f"| failed (> 5 %) | {failed} | | | {PAPER_TABLE1['failed']} |")


def curve(history):
    """Per-epoch history with cumulative training minutes (the sum of the epochs' training
    time, validation excluded) and, for epochs that recorded ``finished_at``, the wall-clock
    minutes since the first such epoch began."""
    print("\n| epoch | step | train min | wall min | train loss | train acc | valid loss "
          "| valid error % | lr | ex/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    start, train_seconds = None, 0.0
    for h in history:
        train_seconds += h["seconds"]
        if start is None and "finished_at" in h:
            start = h["finished_at"] - h["seconds"]
        wall = (h["finished_at"] - start) / 60 if "finished_at" in h else float("nan")
        print(f"| {h['epoch']} | {h['step']} | {train_seconds / 60:.1f} | {wall:.1f} | "
              f"{h['train_loss']:.4f} | {h['train_accuracy']:.4f} | "
              f"{h.get('valid_loss', float('nan')):.4f} | "
              f"{h.get('valid_error_percent', float('nan')):.2f} | "
              f"{h['learning_rate']:.4g} | {h.get('examples_per_second', float('nan')):.0f} |")


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.babi_table", __doc__.split("\n\n")[0])
    parser.positional("runs", "train.babi --model_dir folders", "+")
    parser.boolean("curve", False)
    parser.boolean("all_tasks", False,
                   "the first run is one model over all tasks (Table 1 / Table 4)")
    args = parser.parse()
    if args.all_tasks:
        with open(os.path.join(args.runs[0], "results.json")) as f:
            results = json.load(f)
        all_tasks_table(results)
        if args.curve:
            curve(results["history"])
        return
    rows = []
    for run in args.runs:
        with open(os.path.join(run, "results.json")) as f:
            results = json.load(f)
        for task, test in results["test_error_percent"].items():
            rows.append((int(task), test, results["valid_error_percent"][task],
                         results["epochs"], results.get("wall_seconds", float("nan")), run))
    print("| task | test error % (ours) | valid error % | epochs | wall s | paper best | paper mean |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for task, test, valid, epochs, wall, _ in sorted(rows):
        best, mean = PAPER_TABLE2[task]
        print(f"| {task} | {test:.1f} | {valid:.1f} | {epochs} | {wall:.0f} | {best} | {mean} |")
    if args.curve:
        with open(os.path.join(args.runs[0], "results.json")) as f:
            curve(json.load(f)["history"])


if __name__ == "__main__":
    main()
