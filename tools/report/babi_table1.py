"""bAbI Table 1 (all 20 tasks, one model) from committed all-tasks runs, beside the papers
(blocks ``babi-table1-<name>``, one per :data:`TABLES`; figure ``babi-all-tasks-curve``).

A table reads ``<folder>/<model>-seed<N>/results.json`` (``<model>``: ``tpr_rnn`` or
``memn2n``), the ``results.json`` that ``python -m train.babi --task all`` writes to its
``--model_dir``, copied there when a run finishes (``runs/`` is not committed); every seed
found is a column, so a newly committed seed needs no change here. ``TABLES`` names the
tables ``results/babi.md`` shows: TPR-RNN's Table 1 is the authors' recipe trained 130 epochs
(``results/babi/recipes/all_tasks_authors_130ep``), with the earlier Appendix A recipe and
MemN2N under ``results/babi/all_tasks``. Per table: each seed's test error per task, the mean
± sample standard deviation over seeds (ddof = 1, only from 2 seeds on), the best seed's
error and the paper's numbers; then the mean over the 20 tasks and over the 19 tasks other
than task 3 (which trains on 1,000 questions here, not 10,000), the failed tasks (> 5 %) of
every seed, one line per seed (epochs, hours, failed tasks, code commit) and, where a table
has one, whether the committed seeds meet its bar.

The paper columns (:mod:`experiments.papers`): TPR-RNN, Schlag & Schmidhuber (2018),
Appendix B Table 4 per task (8 runs) and Table 1's all-tasks mean and failed tasks (10
runs); the 19-task paper cells are the means of Table 4's columns. MemN2N, Sukhbaatar et al.
(2015), Appendix A Table 3 (10k training questions, the "PE LS RN joint" column: 3 hops,
position encoding, linear start, random noise, trained jointly); Table 1 gives its 10k mean
(7.5 %, 6 failed tasks).
"""

import collections
import math
import os
import re

from experiments.kept_runs import load_seed_runs
from experiments.papers import MEMN2N_TABLE3, TPR_RNN_TABLE1, TPR_RNN_TABLE4
from tools.report.common import validation_curve
from tpr_keras.training.stop_reasons import STOP_LABELS

TASKS = tuple(range(1, 21))
TASK_3 = 3  # trains on the 1,000 official questions available here, not 10,000
FAILED_ABOVE = 5.0
RESULTS = os.path.join("results", "babi", "all_tasks")
RECIPE_130EP = os.path.join("results", "babi", "recipes", "all_tasks_authors_130ep")
MODELS = {"tpr_rnn": "TPR-RNN", "memn2n": "MemN2N"}

#: The reproduction bar for TPR-RNN on all tasks: at least ``seeds`` seeds of one command, every
#: seed's mean test error over the 19 tasks other than task 3 at most ``per_seed`` % (the
#: authors' worst published run) and the mean over seeds at most ``mean`` % (the paper's
#: per-task means over the same 19 tasks).
ISSUE_42_BAR = {"seeds": 5, "per_seed": 2.1, "mean": 1.2}

#: One Table 1: the model, the folder of its runs, its title, the ``train.babi`` flags of
#: its recipe besides ``--task all --model`` (for the command shown while no run is
#: committed), its bar (or None) and its curves' label in the figure.
Table = collections.namedtuple("Table", "model folder title flags bar label")

#: The tables results/babi.md shows (``babi-table1-<name>`` blocks).
TABLES = {
    "tpr_rnn": Table("tpr_rnn", RECIPE_130EP,
                     "TPR-RNN, the authors' recipe trained 130 epochs (all_tasks_authors_130ep)",
                     "--size all_tasks_authors --optimizer nesterov_adam --epochs 130",
                     ISSUE_42_BAR, "TPR-RNN, authors' recipe, 130 epochs"),
    "tpr_rnn-appendix": Table("tpr_rnn", RESULTS,
                              "TPR-RNN, the earlier recipe: Appendix A, 50 epochs", "", None,
                              "TPR-RNN, Appendix A"),
    "memn2n": Table("memn2n", RESULTS, "MemN2N", "", None, "MemN2N"),
}

PAPER = {
    "tpr_rnn": {
        "source": "Schlag & Schmidhuber (2018): per task, Appendix B Table 4 (best of 8 runs; "
                  "mean ± std as printed); mean error and failed tasks, Table 1 (10 runs)",
        "columns": ("paper best", "paper mean ± std"),
        "task": lambda t: TPR_RNN_TABLE4[t],  # Appendix B Table 4, as printed
        "mean": (TPR_RNN_TABLE1["best"], TPR_RNN_TABLE1["mean"]),
        "failed": ("–", TPR_RNN_TABLE1["failed"]),
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

STOPS = STOP_LABELS


def paper_without_3(model):
    """The paper's cells of the 19-task row: each per-task column's mean over the tasks
    other than task 3 (the first number of each cell)."""
    paper = PAPER[model]
    columns = zip(*(paper["task"](t) for t in TASKS if t != TASK_3))
    return tuple(f"{sum(float(c.split()[0]) for c in column) / (len(TASKS) - 1):.2f}"
                 for column in columns)


def paper_failed_without_3(model):
    """The paper's cells of the row of failed tasks other than task 3: counted where the
    paper gives one run per task (MemN2N's column), else a dash."""
    if model != "memn2n":
        return ("–",) * len(PAPER[model]["columns"])
    return (str(sum(MEMN2N_TABLE3[t] > FAILED_ABOVE for t in TASKS if t != TASK_3)),)


def command(model, seed=0, folder=RESULTS, flags=""):
    """The commands that make and keep one seed's run of ``model`` for ``folder``."""
    run = f"runs/babi-all/{model}-seed{seed}"
    return (f"python -m train.babi --task all --model {model} {flags + ' ' if flags else ''}"
            f"--seed {seed} --data_dir ../shared/data/babi --model_dir {run} --verbose 2\n"
            f"mkdir -p {folder}/{model}-seed{seed} && "
            f"cp {run}/results.json {folder}/{model}-seed{seed}/")


def load_runs(root, model, folder=RESULTS):
    """``{seed: results}`` of the committed runs of ``model`` under ``root/folder``, by seed.

    The seed is the folder's ``-seed<N>``; a ``config.seed`` that disagrees is an error.
    """
    return load_seed_runs(os.path.join(root, folder, f"{model}-seed*", "results.json"))


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


def summary(errors):
    """Per seed: the mean over 20 tasks, over the 19 other than task 3, the failed tasks
    (> 5 %) and those other than task 3."""
    out = {}
    for seed, e in errors.items():
        failed = [t for t in TASKS if e[t] > FAILED_ABOVE]
        out[seed] = {"mean_20": sum(e.values()) / len(TASKS),
                     "mean_19": sum(e[t] for t in TASKS if t != TASK_3) / (len(TASKS) - 1),
                     "failed": failed, "failed_19": [t for t in failed if t != TASK_3]}
    return out


def bar_text(bar, means_19):
    """Whether the seeds' 19-task means (``{seed: %}``) meet ``bar``, in words."""
    worst = max(means_19, key=means_19.get)
    mean = sum(means_19.values()) / len(means_19)
    per_seed_ok, mean_ok = means_19[worst] <= bar["per_seed"], mean <= bar["mean"]
    enough = len(means_19) >= bar["seeds"]
    verdict = ("**met**" if per_seed_ok and mean_ok and enough else
               "**not met**" + ("" if enough else f" yet: {len(means_19)} of the "
                                f"{bar['seeds']} seeds are committed"))
    return (f"**Reproduction bar:** at least {bar['seeds']} seeds of one command; every "
            f"seed's mean test error over the 19 tasks other than task 3 at most "
            f"{bar['per_seed']} % (the authors' worst published run), and the mean over "
            f"seeds at most {bar['mean']} % (the paper's per-task means over the same 19 "
            f"tasks). The committed seeds: worst seed {worst} at {means_19[worst]:.2f} % "
            f"({'≤' if per_seed_ok else '>'} {bar['per_seed']}), mean over "
            f"{len(means_19)} seed{'s' if len(means_19) > 1 else ''} {mean:.2f} % "
            f"({'≤' if mean_ok else '>'} {bar['mean']}): {verdict}.")


def commands_text(runs):
    """The recorded command of every seed, the seed written ``N``: one line when all agree."""
    recorded = {s: re.sub(r"seed([= ]?)\d+", r"seed\1N", r["command"])
                for s, r in runs.items() if r.get("command")}
    if not recorded:
        return None
    if len(set(recorded.values())) == 1 and len(recorded) == len(runs):
        return f"Every seed ran one command (`N`: the seed): `{next(iter(recorded.values()))}`."
    return "The seeds' commands differ (`N`: the seed): " + "; ".join(
        f"seed {s}: `{c}`" for s, c in recorded.items()) + "."


def markdown(root, model, folder=RESULTS, title=None, bar=None, flags=""):
    """The Table 1 block of ``model``'s runs under ``folder`` as Markdown, headed ``title``
    (default: the model's name), with ``bar`` judged under it if given (a note and the
    command without runs)."""
    name, paper = MODELS[model], PAPER[model]
    title = title or name
    runs = load_runs(root, model, folder)
    if not runs:
        return (f"No all-tasks run of {title} is committed yet (`{folder}/{model}-seed<N>/"
                f"results.json`). One seed's run and its kept `results.json`:\n\n"
                f"```bash\n{command(model, 0, folder, flags)}\n```\n")
    errors = {seed: task_errors(result) for seed, result in runs.items()}
    seeds = list(runs)
    one = len(seeds) == 1
    lines = [f"**{title}, {len(seeds)} seed{'' if one else 's'} "
             f"({', '.join(map(str, seeds))})"
             + (": every number rests on one seed" if one else "") + ".** Test error % per "
             "task; task 3 trains on the 1,000 official questions available here (the "
             "official 10k file holds 10,000), so the 19-task rows leave it out. Mean ± "
             "sample std (ddof = 1) over seeds. Paper: "
             f"{paper['source']}; its 19-task cells are the means of its per-task columns.",
             ""]
    seed_columns = [f"seed {s}" for s in seeds]
    ours = ["best seed", "mean ± std"] if not one else []
    head = ["task", *seed_columns, *ours, *paper["columns"]]
    lines += ["| " + " | ".join(head) + " |", "|---:|" + "---:|" * (len(head) - 1)]
    for t in TASKS:
        values = [errors[s][t] for s in seeds]
        cells = [f"{v:.1f}" for v in values]
        if not one:
            cells += [f"{min(values):.1f}", mean_std(values)]
        label = f"{t} (1k train)" if t == TASK_3 else str(t)
        lines.append("| " + " | ".join([label, *cells, *paper["task"](t)]) + " |")
    stats = summary(errors)

    def row(label, key, paper_cells, count=False):
        value = (lambda s: len(stats[s][key])) if count else (lambda s: stats[s][key])
        cells = [str(value(s)) if count else f"**{value(s):.2f}**" for s in seeds]
        if not one:
            best = min(seeds, key=lambda s: (value(s), stats[s]["mean_20"]))  # ties: 20 tasks
            cells += [f"{value(best)}" if count else f"{value(best):.2f}",
                      mean_std([value(s) for s in seeds])]
            cells[-2] += f" (seed {best})"
        lines.append(f"| **{label}** | " + " | ".join([*cells, *paper_cells]) + " |")

    row("mean over 20 tasks", "mean_20", paper["mean"])
    row("mean over 19 tasks (no 3)", "mean_19", paper_without_3(model))
    row("failed tasks (> 5 %)", "failed", paper["failed"], count=True)
    row("failed, other than 3", "failed_19", paper_failed_without_3(model), count=True)
    lines.append("")
    for s in seeds:
        result = runs[s]
        stop = STOPS.get(result.get("stopped"), result.get("stopped"))
        hours = result.get("train_seconds", 0) / 3600
        failed_text = ", ".join(map(str, stats[s]["failed"])) or "none"
        source = result.get("source")
        lines.append(f"- seed {s}: {result.get('epochs')} epochs ({stop}), {hours:.1f} h of "
                     f"training; failed tasks: {failed_text}"
                     + (f"; {source_text(source)}" if source else "") + ".")
    commands = commands_text(runs)
    if commands:
        lines += ["", commands]
    if bar:
        lines += ["", bar_text(bar, {s: stats[s]["mean_19"] for s in seeds})]
    return "\n".join(lines) + "\n"


def table_markdown(root, name):
    """The ``TABLES[name]`` block as Markdown."""
    table = TABLES[name]
    return markdown(root, table.model, table.folder, table.title, table.bar, table.flags)


def source_text(source):
    """A run's ``source`` field (a commit, or a dict with one) as a short phrase: the
    commit, and whether the tree had uncommitted changes where the run says."""
    if isinstance(source, dict):
        commit = source.get("commit") or source.get("git_commit")
        dirty = source.get("dirty")
        state = {True: " (uncommitted changes)", False: " (clean)"}.get(dirty, "")
        return f"code at `{str(commit)[:7]}`{state}"
    return f"code at `{str(source)[:7]}`"


def plot_curves(root, path, tables=tuple(TABLES)):
    """Mean validation error after each epoch against training hours (validation and
    restarts excluded: the sum of the epochs' training time), one line per committed seed
    of each of ``tables``, as a PNG at ``path`` (needs the ``analysis`` extra). Returns the
    number of lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    lines = 0
    for name in tables:
        table = TABLES[name]
        for seed, result in load_runs(root, table.model, table.folder).items():
            points = validation_curve(result)
            x, y = [p[1] for p in points], [p[2] for p in points]
            if x:
                ax.plot(x, y, marker=".", markersize=3, label=f"{table.label}, seed {seed}")
                lines += 1
    if not lines:
        plt.close(fig)
        raise ValueError(f"no committed all-tasks run of {', '.join(tables)} under {root} "
                         "has a per-epoch history")
    ax.axhline(FAILED_ABOVE, color="grey", linestyle="--", linewidth=1, label="5 %")
    ax.set_xlabel("training time (hours, 1 CPU thread)")
    ax.set_ylabel("mean validation error over 20 tasks (%)")
    ax.set_ylim(bottom=0)
    ax.set_title("bAbI, all 20 tasks, one model")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return lines

