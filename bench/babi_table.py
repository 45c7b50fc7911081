"""Markdown tables from ``train.babi`` runs: ``python bench/babi_table.py RUN_DIR...``.

Each RUN_DIR is a ``--model_dir`` holding ``results.json``. Prints one row per
task (test and validation error, epochs, wall time) next to the paper's
Table 2 single-task numbers, and, with ``--curve``, the per-epoch history of
the first run.
"""

import argparse
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--curve", action="store_true")
    args = parser.parse_args()
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
            history = json.load(f)["history"]
        print("\n| epoch | train loss | train acc | valid loss | valid error % | lr | s |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for h in history:
            print(f"| {h['epoch']} | {h['train_loss']:.4f} | {h['train_accuracy']:.4f} | "
                  f"{h.get('valid_loss', float('nan')):.4f} | "
                  f"{h.get('valid_error_percent', float('nan')):.2f} | "
                  f"{h['learning_rate']:.4g} | {h['seconds']:.1f} |")


if __name__ == "__main__":
    main()
