"""bAbI Table 1 (all 20 tasks, one model) from the committed all-tasks runs, beside the papers.

    python -m tools.babi_table1                      # both models, Markdown on stdout
    python -m tools.babi_table1 --model tpr_rnn      # one
    python -m tools.babi_table1 --plot results/figures/babi-all-tasks-curve.png   # + the curves

Reads ``results/babi/all_tasks/<model>-seed<N>/results.json`` (``<model>``: ``tpr_rnn`` or
``memn2n``), the ``results.json`` that ``python -m train.babi --task all`` writes to its
``--model_dir``, copied there when a run finishes (``runs/`` is not committed). Per model: a
per-task table with each seed's test error, the mean ± sample standard deviation over seeds
(ddof = 1, only from 2 seeds on), the best seed's error and the paper's numbers; then the
mean error over the 20 tasks and the failed tasks (> 5 %) of every seed. ``python -m
tools.report`` puts the result into ``results/babi.md``.

The paper numbers are citations, typed here from the papers:

- TPR-RNN: Schlag & Schmidhuber (2018), Appendix B, Table 4 ("best" and "mean" columns per
  task, 8 runs) and Table 1 (the all-tasks mean error 1.34 ± 0.52 and failed tasks
  0.86 ± 1.11, 10 runs).
- MemN2N: Sukhbaatar et al. (2015), Appendix A, Table 3 (10k training questions, the "PE LS
  RN joint" column: 3 hops, position encoding, linear start, random noise, trained jointly);
  Table 1 gives the same column for 1k questions and its 10k mean (7.5 %, 6 failed tasks).
"""

import glob
import json
import math
import os
import re

from tools.babi_table import PAPER_TABLE4  # noqa: E402

TASKS = tuple(range(1, 21))
FAILED_ABOVE = 5.0
RESULTS = os.path.join("results", "babi", "all_tasks")
MODELS = {"tpr_rnn": "TPR-RNN", "memn2n": "MemN2N"}

#: Sukhbaatar et al. (2015), Appendix A Table 3 (10k), column "PE LS RN joint".
MEMN2N_TABLE3 = {
    1: 0.0, 2: 1.0, 3: 6.8, 4: 0.0, 5: 6.1, 6: 0.1, 7: 6.6, 8: 2.7, 9: 0.0, 10: 0.5,
    11: 0.0, 12: 0.1, 13: 0.0, 14: 0.0, 15: 0.2, 16: 0.2, 17: 41.8, 18: 8.0, 19: 75.7,
    20: 0.0,
}

PAPER = {
    "tpr_rnn": {
        "source": "Schlag & Schmidhuber (2018): per task, Appendix B Table 4 (best of 8 runs; "
                  "mean ± std as printed); mean error and failed tasks, Table 1 (10 runs)",
        "columns": ("paper best", "paper mean ± std"),
        "task": lambda t: PAPER_TABLE4[t],  # Appendix B Table 4, as printed
        "mean": ("0.78", "1.34 ± 0.52"),
        "failed": ("–", "0.86 ± 1.11"),
    },
    "memn2n": {
        "source": "Sukhbaatar et al. (2015), Appendix A Table 3 (10k training questions), "
                  "column PE LS RN joint (one number per task)",
        "columns": ("paper (PE LS RN joint)",),
        "task": lambda t: (f"{MEMN2N_TABLE3[t]:.1f}",),
        "mean": ("7.5",),
        "failed": ("6",),
    },
}

STOPS = {"epochs": "epoch cap", "early_stopping": "patience", "steps": "step cap",
         "time_budget": "time budget", "target": "target error"}


def command(model, seed=0):
    """The commands that make and keep one seed's run of ``model``."""
    folder = f"runs/babi-all/{model}-seed{seed}"
    return (f"python -m train.babi --task all --model {model} --seed {seed} "
            f"--data_dir ../shared/data/babi --model_dir {folder} --verbose 2\n"
            f"mkdir -p {RESULTS}/{model}-seed{seed} && "
            f"cp {folder}/results.json {RESULTS}/{model}-seed{seed}/")


def load_runs(root, model):
    """``{seed: results}`` of the committed runs of ``model`` under ``root``, by seed.

    The seed is the folder's ``-seed<N>``; a ``config.seed`` that disagrees is an error.
    """
    runs = {}
    pattern = os.path.join(root, RESULTS, f"{model}-seed*", "results.json")
    for path in glob.glob(pattern):
        match = re.search(r"-seed(\d+)$", os.path.basename(os.path.dirname(path)))
        if not match:
            continue
        seed = int(match.group(1))
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        recorded = result.get("config", {}).get("seed")
        if recorded is not None and recorded != seed:
            raise ValueError(f"{path}: config.seed is {recorded}, the folder says {seed}")
        runs[seed] = result
    return dict(sorted(runs.items()))


def sample_std(values):
    """Sample standard deviation (ddof = 1); None below 2 values."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def mean_std(values, digits=2):
    """``"m ± s"`` over seeds, ``"m (1 seed)"`` for one value."""
    mean = sum(values) / len(values)
    std = sample_std(values)
    return f"{mean:.{digits}f} (1 seed)" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def task_errors(result):
    """``{task: test error %}`` of one run; a missing task is an error."""
    errors = result["test_error_percent"]
    missing = [t for t in TASKS if str(t) not in errors]
    if missing:
        raise ValueError(f"results.json has no test error for task(s) {missing}")
    return {t: float(errors[str(t)]) for t in TASKS}


def markdown(root, model):
    """The Table 1 block of ``model`` as Markdown (a note and the command without runs)."""
    name, paper = MODELS[model], PAPER[model]
    runs = load_runs(root, model)
    if not runs:
        return (f"No all-tasks {name} run is committed yet (`{RESULTS}/{model}-seed<N>/"
                f"results.json`). One seed's run and its kept `results.json`:\n\n"
                f"```bash\n{command(model)}\n```\n")
    errors = {seed: task_errors(result) for seed, result in runs.items()}
    seeds = list(runs)
    one = len(seeds) == 1
    lines = [f"**{name}, {len(seeds)} seed{'' if one else 's'} "
             f"({', '.join(map(str, seeds))})"
             + (": every number rests on one seed" if one else "") + ".** Test error % per "
             "task; task 3 trains on the 1,000 official questions available here (the "
             "official 10k file holds 10,000). Mean ± sample std (ddof = 1) over seeds. "
             f"Paper: {paper['source']}.", ""]
    seed_columns = [f"seed {s}" for s in seeds]
    ours = ["best seed", "mean ± std"] if not one else []
    head = ["task", *seed_columns, *ours, *paper["columns"]]
    lines += ["| " + " | ".join(head) + " |", "|---:|" + "---:|" * (len(head) - 1)]
    for t in TASKS:
        values = [errors[s][t] for s in seeds]
        cells = [f"{v:.1f}" for v in values]
        if not one:
            cells += [f"{min(values):.1f}", mean_std(values)]
        label = f"{t} (1k train)" if t == 3 else str(t)
        lines.append("| " + " | ".join([label, *cells, *paper["task"](t)]) + " |")
    means = {s: sum(errors[s].values()) / len(TASKS) for s in seeds}
    failed = {s: [t for t in TASKS if errors[s][t] > FAILED_ABOVE] for s in seeds}
    best = min(seeds, key=lambda s: means[s])
    mean_cells = [f"**{means[s]:.2f}**" for s in seeds]
    failed_cells = [str(len(failed[s])) for s in seeds]
    if not one:
        mean_cells += [f"{means[best]:.2f} (seed {best})", mean_std(list(means.values()))]
        failed_cells += [f"{len(failed[best])} (seed {best})",
                         mean_std([len(f) for f in failed.values()])]
    lines.append("| **mean over tasks** | " + " | ".join([*mean_cells, *paper["mean"]]) + " |")
    lines.append("| **failed tasks (> 5 %)** | "
                 + " | ".join([*failed_cells, *paper["failed"]]) + " |")
    lines.append("")
    for s in seeds:
        result = runs[s]
        stop = STOPS.get(result.get("stopped"), result.get("stopped"))
        hours = result.get("train_seconds", 0) / 3600
        failed_text = ", ".join(map(str, failed[s])) or "none"
        source = result.get("source")
        lines.append(f"- seed {s}: {result.get('epochs')} epochs ({stop}), {hours:.1f} h of "
                     f"training; failed tasks: {failed_text}"
                     + (f"; {source_text(source)}" if source else "") + ".")
    return "\n".join(lines) + "\n"


def source_text(source):
    """A run's ``source`` field (a commit, or a dict with one) as a short phrase."""
    if isinstance(source, dict):
        commit = source.get("commit") or source.get("git_commit")
        dirty = source.get("dirty")
        return f"code at `{str(commit)[:7]}`" + (" (uncommitted changes)" if dirty else "")
    return f"code at `{str(source)[:7]}`"


def plot_curves(root, path, models=tuple(MODELS)):
    """Mean validation error after each epoch against training hours (validation and
    restarts excluded: the sum of the epochs' training time), one line per committed seed,
    as a PNG at ``path`` (needs the ``analysis`` extra). Returns the number of lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    lines = 0
    for model in models:
        for seed, result in load_runs(root, model).items():
            hours, x, y = 0.0, [], []
            for epoch in result.get("history", []):
                hours += epoch["seconds"] / 3600
                if "valid_error_percent" in epoch:
                    x.append(hours)
                    y.append(epoch["valid_error_percent"])
            if x:
                ax.plot(x, y, marker=".", markersize=3, label=f"{MODELS[model]} seed {seed}")
                lines += 1
    if not lines:
        plt.close(fig)
        raise ValueError(f"no committed all-tasks run under {os.path.join(root, RESULTS)} "
                         "has a per-epoch history")
    ax.axhline(FAILED_ABOVE, color="grey", linestyle="--", linewidth=1, label="5 %")
    ax.set_xlabel("training time (hours, 1 CPU thread)")
    ax.set_ylabel("mean validation error over 20 tasks (%)")
    ax.set_ylim(bottom=0)
    ax.set_title("bAbI, all 20 tasks, one model")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return lines


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.babi_table1", __doc__.split("\n\n")[0])
    parser.multi("model", "tpr_rnn or memn2n (default both)", choices=list(MODELS))
    parser.string("root", ".", "the repository root")
    parser.string("plot", None, "also draw every committed seed's validation curve to this PNG")
    args = parser.parse()
    if args.plot:
        plot_curves(args.root, args.plot, args.model or tuple(MODELS))
    for model in args.model or MODELS:
        print(f"## {MODELS[model]}\n\n{markdown(args.root, model)}")


if __name__ == "__main__":
    main()
