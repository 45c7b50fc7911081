"""The §7 systematic-generalisation tables (new names trained on only some tasks) as
Markdown; the numbers are :mod:`tpr_keras.analysis.systematic`'s.
"""

from __future__ import annotations

from tpr_keras.analysis.systematic import drops, summarize


def systematic_markdown(result: dict) -> str:
    """The per-name summary and the per-pair table as Markdown."""
    def fmt(value):
        return "–" if value is None else f"{value:.1f}"

    lines = ["| name | tasks trained on | accuracy % (all 8) | seen tasks | unseen tasks |",
             "|---|---:|---:|---:|---:|"]
    for row in summarize(result["pairs"]):
        lines.append(f"| {row['name']} | {row['tasks_seen']} | {fmt(row['all'])} | "
                     f"{fmt(row['seen'])} | {fmt(row['unseen'])} |")
    tasks = sorted({p["task"] for p in result["pairs"]})
    lines += ["", "| name | " + " | ".join(f"task {t}" for t in tasks) + " |",
              "|---|" + "---:|" * len(tasks)]
    for name in dict.fromkeys(p["name"] for p in result["pairs"]):
        cells = []
        for t in tasks:
            p = next(p for p in result["pairs"] if p["name"] == name and p["task"] == t)
            cells.append(f"{p['accuracy']:.1f}" + ("" if p["seen"] else "*"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("\n`*`: a task on whose stories the name was never trained.")
    return "\n".join(lines) + "\n"


def compare_markdown(results: dict[str, dict], full: str = "Alex") -> str:
    """One row per name: each model's accuracy over all tasks and its drop against ``full``."""
    labels = list(results)
    summaries = {label: {r["name"]: r for r in summarize(res["pairs"])}
                 for label, res in results.items()}
    first = summaries[labels[0]]
    head = "| name | tasks trained on | " + " | ".join(
        f"{label} accuracy % | {label} drop vs {full}" for label in labels) + " |"
    lines = [head, "|---|---:|" + "---:|---:|" * len(labels)]
    for name, row in first.items():
        cells = []
        for label in labels:
            mine = summaries[label][name]
            drop = summaries[label][full]["all"] - mine["all"]
            cells.append(f"{mine['all']:.1f} | {drop:+.1f}")
        lines.append(f"| {name} | {row['tasks_seen']} | " + " | ".join(cells) + " |")
    worst = {label: max(v for k, v in drops(res, full).items() if k != full)
             for label, res in results.items()}
    lines.append("")
    lines.append("Largest drop of a partly trained name against " + full + ": " + ", ".join(
        f"{label} {value:+.1f} points" for label, value in worst.items()) + ".")
    return "\n".join(lines) + "\n"
