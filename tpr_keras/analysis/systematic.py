"""TPR-RNN §7 systematic generalisation (Figure 5): test accuracy per new name and task.

    python -m tools.analysis.systematic_data --data_dir ../shared/data/babi --out runs/sg-data
    python -m train.babi --task 1,6,7,8,9,11,12,13 --data_dir runs/sg-data --model_dir runs/sg
    python -m tools.analysis.systematic --model_dir runs/sg --data runs/sg-data \\
        --out results/figures/systematic

Evaluates a trained bAbI model on every ``systematic/<name>/qaN_*_test.txt`` test set that
:mod:`tpr_keras.data.babi.systematic` wrote, and reports the accuracy of each (name, task)
pair, marked *seen* when the name's training stories included that task (``manifest.json``).
Like Figure 5, the summary averages over tasks per name, separately over seen and unseen
pairs. The command writes ``systematic.json``, ``systematic.md`` (its Markdown:
``tools/report/systematic.py``) and, with the ``analysis`` extra (matplotlib),
``systematic.png``. Works for TPR-RNN and MemN2N runs alike.

Two or more evaluated models side by side (Figure 5 next to its baseline)::

    python -m tools.analysis.systematic --compare TPR-RNN=runs/sg-fig/systematic.json \
        --compare MemN2N=runs/sg-memn2n-fig/systematic.json --out results/figures/systematic

writes ``compare.md`` (per model and name: accuracy over the 8 tasks and its drop against
Alex, the name trained on all 8; §7's claim is that partial coverage costs nothing) and
``compare.png`` (one panel per model).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np


def evaluate_pairs(model, vocab, data_dir: str | os.PathLike, batch_size: int = 256) -> dict:
    """Accuracy (%) per (name, task) on the generated test sets, and which pairs were seen.

    Returns:
        ``{"pairs": [{"name", "task", "seen", "accuracy", "count"}...], "trained_on": ...}``.
    """
    import tensorflow as tf

    from tpr_keras.data import babi

    root = Path(data_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    trained_on = {name: set(tasks) for name, tasks in manifest["trained_on"].items()}
    # stories of each (name, task) file have their own length: one trace per shape family
    predict = tf.function(lambda features: tf.argmax(model(features, training=False), -1,
                                                     output_type=tf.int32),
                          reduce_retracing=True)
    pairs = []
    for name in trained_on:
        for path in sorted((root / "systematic" / name).glob("qa*_test.txt")):
            samples = babi.parse_babi_file(path)
            task = samples[0].task
            split = babi.encode_samples(samples, vocab, max_words=model.max_words)
            dataset = babi.make_dataset(split, batch_size, shuffle=False)
            correct = 0
            for features, labels in dataset:
                correct += int(tf.reduce_sum(tf.cast(
                    predict(features) == labels["answer"], tf.int32)))
            pairs.append({"name": name, "task": task, "seen": task in trained_on[name],
                          "accuracy": 100.0 * correct / len(samples), "count": len(samples)})
    return {"pairs": pairs, "trained_on": {k: sorted(v) for k, v in trained_on.items()}}


def summarize(pairs: Sequence[dict]) -> list[dict]:
    """Per name: mean accuracy over all, seen and unseen tasks (None where there are none)."""
    rows = []
    for name in dict.fromkeys(p["name"] for p in pairs):
        mine = [p for p in pairs if p["name"] == name]

        def mean(selected):
            return float(np.mean([p["accuracy"] for p in selected])) if selected else None

        rows.append({"name": name, "tasks_seen": sum(p["seen"] for p in mine),
                     "all": mean(mine), "seen": mean([p for p in mine if p["seen"]]),
                     "unseen": mean([p for p in mine if not p["seen"]])})
    return rows


def plot(result: dict, path: str, title: str) -> None:
    """Figure 5's layout: mean test accuracy per new name, seen and unseen tasks side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarize(result["pairs"])
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4))
    for offset, key, label in ((-0.2, "seen", "trained tasks"), (0.2, "unseen", "unseen tasks")):
        values = [r[key] if r[key] is not None else np.nan for r in rows]
        ax.bar(x + offset, values, width=0.4, label=label)
    ax.set_xticks(x, [f"{r['name']}\n({r['tasks_seen']}/8)" for r in rows])
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def drops(result: dict, full: str = "Alex") -> dict[str, float]:
    """Per name: the accuracy over all tasks of ``full`` (trained on every task) minus its own."""
    rows = {r["name"]: r for r in summarize(result["pairs"])}
    return {name: rows[full]["all"] - row["all"] for name, row in rows.items()}


def plot_compare(results: dict[str, dict], path: str) -> None:
    """Figure 5 per model, panels side by side: seen and unseen tasks per new name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), sharey=True)
    for ax, (label, result) in zip(np.atleast_1d(axes), results.items()):
        rows = summarize(result["pairs"])
        x = np.arange(len(rows))
        for offset, key, text in ((-0.2, "seen", "trained tasks"),
                                  (0.2, "unseen", "unseen tasks")):
            values = [r[key] if r[key] is not None else np.nan for r in rows]
            ax.bar(x + offset, values, width=0.4, label=text)
        ax.set_xticks(x, [f"{r['name']}\n({r['tasks_seen']}/8)" for r in rows])
        ax.set_ylim(0, 100)
        ax.set_title(label)
        ax.legend(loc="lower left")
    np.atleast_1d(axes)[0].set_ylabel("test accuracy (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
