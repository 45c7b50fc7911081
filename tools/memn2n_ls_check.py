"""MemN2N's linear start beside the authors' MATLAB code, on the same data.

    python -m tools.memn2n_ls_check      # Markdown on stdout; python -m tools.report puts it
                                         # into results/babi.md (block babi-memn2n-ls-check)

Reads ``results/babi/memn2n_ls_check/<run>/results.json``: ours are the ``results.json``
that ``python -m train.babi --task all --model memn2n --size joint_paper --setting 1k
--epochs 90 --decay_every_epochs 15`` writes (their code's own 1k joint schedule: 30
epochs of linear start, then 60 halved every 15); the MATLAB code's (``matlab-seed<S>``)
holds the per-epoch lines its ``train.m`` prints (training and validation error) and the
mean training cost, written in the same keys (``history``: ``epoch``, ``train_loss``,
``train_error_percent``, ``valid_error_percent``; ``test_error_percent`` when its test ran).
One row per run: the training error and the mean training loss per example at a few
epochs (1-30 are the linear start), then the test error of the final weights.
"""

import glob
import json
import os

FOLDER = os.path.join("results", "babi", "memn2n_ls_check")
EPOCHS = (2, 10, 30, 45, 60, 90)  # 1-30: the linear start; 31-90: the softmax is back
TASKS = ("15", "16")  # the tasks a linear start is known to decide (§4.2, Table 1)


def train_error(record):
    """A history record's training error in %, from either code's keys."""
    if "train_error_percent" in record:
        return float(record["train_error_percent"])
    return 100.0 * (1.0 - float(record["train_accuracy"]))


def load(root):
    """``{run name: results}`` of every committed comparison run, by name."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(root, FOLDER, "*", "results.json"))):
        with open(path, encoding="utf-8") as f:
            runs[os.path.basename(os.path.dirname(path))] = json.load(f)
    return runs


def row(name, result):
    """One Markdown row of ``result``."""
    by_epoch = {int(h["epoch"]): h for h in result.get("history", [])}
    cells = []
    for epoch in EPOCHS:
        h = by_epoch.get(epoch)
        loss = None if h is None else h.get("train_loss")
        cells.append("–" if h is None else f"{train_error(h):.1f} / "
                     + ("∞" if loss is None else f"{float(loss):.2f}"))
    test = result.get("test_error_percent") or {}
    if len(test) == 20:
        values = [float(v) for v in test.values()]
        cells.append(f"{sum(values) / 20:.1f}")
        cells += [f"{float(test[t]):.1f}" for t in TASKS]
        cells.append(str(sum(v > 5.0 for v in values)))
    else:
        cells += ["–"] * (2 + len(TASKS))
    return f"| {name} | {result.get('code', 'ours')} | " + " | ".join(cells) + " |"


def markdown(root):
    """The comparison table and each run's command."""
    runs = load(root)
    if not runs:
        return f"No comparison run is committed (`{FOLDER}/<run>/results.json`)."
    epochs = " | ".join(f"epoch {e}{' (LS)' if e <= 30 else ''}: train error % / loss"
                        for e in EPOCHS)
    head = ("| run | code | " + epochs
            + " | test error %, 20 tasks | " + " | ".join(f"task {t}" for t in TASKS)
            + " | failed (> 5 %) |")
    lines = [head, "|---|---|" + "---:|" * (len(EPOCHS) + 2 + len(TASKS)), *(
        row(name, result) for name, result in runs.items())]
    lines.append("")
    for name, result in runs.items():
        source = result.get("source", {})
        where = (f" (code at `{source['commit'][:7]}`"
                 f"{', uncommitted changes' if source.get('dirty') else ''})"
                 if source.get("commit") else "")
        lines.append(f"- {name}: `{result.get('command', '?')}`{where}.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown("."))
