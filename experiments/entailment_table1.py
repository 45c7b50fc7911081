"""Run and tabulate Table 1 of Tang, Smolensky & de Sa (2018) on this machine.

    python -m experiments.entailment_table1 --data_dir ../shared/data/entailment --dry_run
    python -m experiments.entailment_table1 --data_dir ../shared/data/entailment --jobs 2  # runs
    python -m experiments.entailment_table1 --report                               # Markdown
    python -m experiments.entailment_table1 --report --plot results/figures/entailment/table1.png

Every row is one ``python -m train.entailment --recipe paper`` process with the §5.1 recipe
of the entailment presets (Adam lr 1e-3 divided by 10 every 30 epochs, batch 64, global-norm
clipping, symbolic variable permutation, the best-validation weights), at most 90 epochs,
width 64. The paper keeps the best model on the validation set and says nothing about
stopping early; here a run stops after ``--patience`` (20) epochs without a lower validation
error, long enough that a run still improving slowly reaches its next learning-rate decay.
The training step is compiled with XLA (``--jit_compile``), which doubled the TPRU's step
rate in ``bench/entailment_bench.py``.

Rows go to ``<runs>/<row>``; an interrupted one resumes from its last checkpoint when started
again. A finished row's ``results.json`` (a few kB: scores, history, settings) is copied to
``<keep>/<row>/results.json`` (``results/entailment/table1``), which is committed: ``<runs>``
holds checkpoints and is not, and a sitting here is a fresh machine whose untracked files are
gone. A row whose ``results.json`` is in either folder is skipped and reported, so the table
is worked off over several sittings, a few rows at a time (``--rows``). ``--jobs 2`` runs
two rows at once with one intra-op thread each (``TF_NUM_INTRAOP_THREADS``), each row's
output in ``train.log`` in its folder. ``--max_train_minutes`` gives each row a training
time budget, for rows that do not fit into a sitting (the BiDAF ones); such a row keeps its
best-validation weights and is reported with the stop reason "time budget".
``--report`` prints our rows next to the paper's (the paper's numbers are the mean of three
initialisations; ours are one seed), with parameters, epochs, the stop reason, the epoch of
the best validation (whose weights are evaluated) and the training time summed over every
process of the row.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

from experiments.papers import TPRU_TABLE1
from tpr_keras.training.stop_reasons import STOP_LABELS

SPLITS = ("validate", "test_easy", "test_hard", "test_big", "test_massive", "test_exam")

#: name -> (train.entailment flags, label)
ROWS = {
    "tpru8": (["--cell=tpru", "--roles=8"], "TPRU, 8 roles"),
    "tpru32": (["--cell=tpru", "--roles=32"], "TPRU, 32 roles"),
    "lstm": (["--cell=lstm"], "LSTM"),
    "gru": (["--cell=gru"], "GRU"),
    # The kept row predates the bidaf_tpru preset's N(0, 1) embedding: it names Keras' own.
    "bidaf-tpru32": (["--arch=bidaf", "--cell=tpru", "--roles=32", "--embedding_init=uniform"],
                     "BiDAF TPRU, 32 roles"),
    "bidaf-lstm": (["--arch=bidaf", "--cell=lstm"], "BiDAF LSTM"),
    "bidaf-tpru32-normal": (["--arch=bidaf", "--cell=tpru", "--roles=32",
                             "--embedding_init=normal"],
                            "BiDAF TPRU, 32 roles, N(0, 1) embedding"),
}

STOPS = STOP_LABELS


def command(args, name):
    flags, _ = ROWS[name]
    return [sys.executable, "-m", "train.entailment", f"--model_dir={os.path.join(args.runs, name)}",
            *([f"--data_dir={args.data_dir}"] if args.data_dir else []),
            "--recipe=paper", "--dim=64", f"--epochs={args.epochs}", f"--patience={args.patience}",
            f"--seed={args.seed}", "--verbose=2", *(["--jit_compile"] if args.jit_compile else []),
            *([f"--max_train_minutes={args.max_train_minutes:g}"]
              if args.max_train_minutes else []),
            *flags]


def results_path(args, name):
    """The row's ``results.json`` in ``--runs``, else the kept copy, else None."""
    for root in (args.runs, args.keep):
        path = os.path.join(root, name, "results.json")
        if os.path.exists(path):
            return path
    return None


def keep_row(args, name):
    """Copy a finished row's ``results.json`` from ``--runs`` to ``--keep``; the kept path."""
    source = os.path.join(args.runs, name, "results.json")
    target = os.path.join(args.keep, name, "results.json")
    if os.path.exists(source) and not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
    return target if os.path.exists(target) else None


def run_row(args, name):
    folder = os.path.join(args.runs, name)
    if results_path(args, name):
        keep_row(args, name)
        return f"skip {name} (finished)"
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ)
    if args.jobs > 1:
        env.update(TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1")
    started = time.time()
    with open(os.path.join(folder, "train.log"), "a") as log:
        code = subprocess.call(command(args, name), stdout=log, stderr=subprocess.STDOUT,
                               env=env)
    kept = keep_row(args, name)
    return (f"finished {name}: exit {code}, {time.time() - started:.0f} s"
            + (f", kept in {kept}" if kept else ""))


def load(args, name):
    path = results_path(args, name)
    if path is None:
        return None
    with open(path) as f:
        return json.load(f)


def best_epoch(history):
    """The epoch whose validation the reported weights come from (the first lowest error)."""
    errors = [(h["valid_error_percent"], h["epoch"]) for h in history
              if h.get("valid_error_percent") is not None]
    return min(errors, key=lambda e: e[0])[1] if errors else None


def report_markdown(args):
    """Our finished rows of ``args.rows`` beside the paper's, as a Markdown table."""
    head = ("| model | " + " | ".join(s.replace("test_", "") for s in SPLITS)
            + " | parameters | epochs (stop; best) | training h |")
    lines = [head, "|---|" + "---:|" * len(SPLITS) + "---:|---|---:|"]
    for name in args.rows:
        _, label = ROWS[name]
        result = load(args, name)
        if result is None:
            lines.append(f"| {label} | " + " | ".join("–" for _ in SPLITS) + " | – | not finished | – |")
        else:
            accuracy = result["accuracy_percent"]
            lines.append(
                f"| {label} | " + " | ".join(f"{accuracy[s]:.1f}" for s in SPLITS)
                + f" | {result['parameters']:,} | {result['epochs']} "
                f"({STOPS.get(result['stopped'], result['stopped'])}; "
                f"{best_epoch(result['history'])}) | "
                f"{result['train_seconds'] / 3600:.1f} |")
        paper, params = TPRU_TABLE1[name]
        lines.append(f"| *paper, {label}* | " + " | ".join(f"*{v}*" for v in paper)
                     + f" | *{params}* | *90* | |")
    return "\n".join(lines)


def report(args):
    """Print :func:`report_markdown`."""
    print(report_markdown(args))


def plot(args, path):
    """Validation accuracy per epoch of the finished rows, each with the paper's final
    validation accuracy as a dashed line of its colour (a PNG; needs the analysis extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for name in args.rows:
        result = load(args, name)
        if result is None:
            continue
        _, label = ROWS[name]
        epochs = [h for h in result["history"] if h.get("valid_error_percent") is not None]
        line, = ax.plot([h["epoch"] for h in epochs],
                        [100 - h["valid_error_percent"] for h in epochs], label=label)
        ax.axhline(TPRU_TABLE1[name][0][0], color=line.get_color(), linestyle="--", linewidth=0.8)
    for decay in range(30, args.epochs, 30):
        ax.axvline(decay, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("epoch (dotted: learning rate divided by 10)")
    ax.set_ylabel("validation accuracy (%)")
    ax.set_title("Table 1 rows on this CPU (solid); the paper's final validation (dashed)")
    ax.legend(loc="lower right", ncol=2, fontsize="small")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")


def main():
    from serving.command_flags import Command

    parser = Command("python -m experiments.entailment_table1", __doc__.split("\n\n")[0])
    parser.string("rows", ",".join(ROWS), f"comma-separated, from {', '.join(ROWS)}")
    parser.string("runs", "runs/entailment/table1",
                  "checkpoints and logs of the rows (not committed)")
    parser.string("keep", "results/entailment/table1",
                  "where finished rows' results.json are copied (committed)")
    parser.string("data_dir", None)
    parser.integer("epochs", 90)
    parser.integer("patience", 20)
    parser.integer("seed", 0)
    parser.boolean("jit_compile", True)
    parser.integer("jobs", 1)
    parser.float("max_train_minutes", None,
                 "stop each row's training after this many minutes (the row is "
                 "then reported with the stop reason 'time budget'); for rows "
                 "longer than a sitting")
    parser.boolean("dry_run", False, "print the commands only")
    parser.boolean("report", False, "print the Markdown table only")
    parser.string("plot", None, "with --report: also draw the validation curves to this PNG")
    args = parser.parse()
    args.rows = args.rows.split(",")
    unknown = [r for r in args.rows if r not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {list(ROWS)}")
    if args.report:
        report(args)
        if args.plot:
            plot(args, args.plot)
        return
    if args.dry_run:
        for name in args.rows:
            print(" ".join(command(args, name)))
        return
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(lambda name: run_row(args, name), args.rows):
            print(line, flush=True)
    report(args)


if __name__ == "__main__":
    main()
