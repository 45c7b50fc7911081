"""The per-module tables of ``train.math`` runs as Markdown (Schlag et al. 2019, Appendix B
Figures 4/5 and Table 1), and the math blocks made of them: the all-modules runs and the
focus runs over seeds. The numbers are :mod:`tpr_keras.analysis.module_tables`'; this module
only lays them out.
"""

from __future__ import annotations

import glob
import math
import os
from typing import Sequence

from tools.report.common import demote
from tpr_keras.analysis.module_tables import (REGIMES, accuracy, check_seeds, compare,
                                              format_cell, load_run, seed_table, spread,
                                              summarize)
from tpr_keras.training.stop_reasons import STOP_LABELS

FOCUS_MODELS = ("tp_transformer", "transformer")
#: What a seed table says of a module where the difference is (not) larger than the spread.
VERDICT = {True: "yes", False: "no", None: "–"}


def _count(modules: Sequence[str]) -> str:
    return f"{len(modules)} module" + ("" if len(modules) == 1 else "s")


# ------------------------------------------------------------------ figures mode
def compare_markdown(tables: dict[str, dict], labels: Sequence[str]) -> str:
    """Per regime: module, one column per model, the difference; mean and > 95 % rows."""
    pair = len(labels) == 2
    lines = []
    for regime, table in tables.items():
        lines += [f"## {regime} ({_count(table['modules'])})", "",
                  "| module | " + " | ".join(labels) + (" | difference |" if pair else " |"),
                  "|---|" + "---:|" * (len(labels) + pair)]
        for m in table["modules"]:
            cells = [format_cell(table["accuracy"][label][m]) for label in labels]
            if pair:
                cells.append(format_cell(table["difference"][m], sign=True))
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        summary = [table["summary"][label] for label in labels]
        means = [format_cell(s["mean"]) for s in summary]
        counts = [str(s["above_95"]) for s in summary]
        if pair:
            a, b = summary
            gap = None if a["mean"] is None or b["mean"] is None else a["mean"] - b["mean"]
            means.append(format_cell(gap, sign=True))
            counts.append(f"{a['above_95'] - b['above_95']:+d}")
        lines += ["| **mean** | " + " | ".join(means) + " |",
                  "| **modules > 95 %** | " + " | ".join(counts) + " |", ""]
    if pair:
        lines.append(f"difference: {labels[0]} − {labels[1]} (percentage points).")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- seeds mode
def seeds_markdown(tables: dict[str, dict], seeds: dict[str, list[dict]]) -> str:
    """Per regime: module, mean ± std per model, Δ, the verdict, Welch's t; a count line."""
    a, b = labels = list(seeds)
    runs = "; ".join(f"{label}: {len(r)} seeds "
                     f"({', '.join(str(x.get('config', {}).get('seed')) for x in r)})"
                     for label, r in seeds.items())
    lines = [f"Mean ± sample std (ddof = 1) over seeds ({runs}). Δ = {a} − {b}; "
             "**larger than the seed spread**: |Δ| > std_a + std_b.", ""]

    def cell(label, s):
        if s["mean"] is None:
            return "–"
        if s["std"] is None:
            return f"{s['mean']:.2f} (1 seed)"
        return f"{s['mean']:.2f} ± {s['std']:.2f}" + (
            "" if s["n"] == len(seeds[label]) else f" (n={s['n']})")

    def row(name, r):
        t = "–" if r["welch_t"] is None else f"{r['welch_t']:.2f}"
        if r["welch_dof"] is not None:
            p = "" if r["p_value"] is None else f", p {r['p_value']:.3f}"
            t += f" (dof {r['welch_dof']:.1f}{p})"
        return (f"| {name} | {cell(a, r[a])} | {cell(b, r[b])} | "
                f"{format_cell(r['difference'], sign=True)} | {VERDICT[r['larger_than_spread']]} | "
                f"{t} |")

    for regime, table in tables.items():
        lines += [f"## {regime} ({_count(table['modules'])})", "",
                  f"| module | {a} | {b} | Δ | larger than the seed spread | Welch's t |",
                  "|---|---:|---:|---:|:---:|---:|"]
        lines += [row(m, table["rows"][m]) for m in table["modules"]]
        lines += [row("**mean over modules**", table["summary"]["mean"]),
                  row("**modules > 95 %**", table["summary"]["above_95"]), ""]
        larger = [r for r in table["rows"].values() if r["larger_than_spread"]]
        ahead = sum(r["difference"] > 0 for r in larger)
        lines += [f"{regime}: the difference is larger than the seed spread on {len(larger)} "
                  f"of {len(table['modules'])} modules ({ahead} with {a} ahead, "
                  f"{len(larger) - ahead} with {b} ahead); on the mean over modules: "
                  f"{VERDICT[table['summary']['mean']['larger_than_spread']]}.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------- blocks
def _math_all(root):
    folder = os.path.join(root, "results", "math", "all")
    return {"TP-Transformer": load_run(os.path.join(folder, "tp_transformer")),
            "Transformer": load_run(os.path.join(folder, "transformer"))}


def math_all_summary_block(root):
    """Table 1's columns of the all-modules runs, one row per model."""
    lines = ["| model | parameters | steps of 128 (stop) | training s | interpolate mean % | "
             "> 95 % | extrapolate mean % | > 95 % |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, run in _math_all(root).items():
        s = run["summary"]
        stop = STOP_LABELS.get(run["stopped"], run["stopped"])
        lines.append(
            f"| {label} (`{run['config'].get('preset', '?')}`) | {run['parameters']:,} | "
            f"{run['steps']:,} ({stop}) | {run['train_seconds']:,.0f} | "
            f"{s['interpolate']['mean']:.2f} ({s['interpolate']['modules']}) | "
            f"{s['interpolate']['above_95']} | {s['extrapolate']['mean']:.2f} "
            f"({s['extrapolate']['modules']}) | {s['extrapolate']['above_95']} |")
    return "\n".join(lines)


def math_all_modules_block(root):
    """Figures 4/5 as numbers: every module of both all-modules runs, side by side."""
    runs = _math_all(root)
    tables = {regime: compare(runs, regime) for regime in REGIMES}
    return demote(compare_markdown(tables, list(runs)), 1)


def _focus(root, folder="focus"):
    """``{model: [run per seed]}`` of ``results/math/<folder>/<model>-seed<S>``, every
    committed seed in seed order (runs that are still to come are missing, not errors)."""
    path = os.path.join(root, "results", "math", folder)
    seeds = {}
    for m in FOCUS_MODELS:
        files = glob.glob(os.path.join(path, f"{m}-seed*", "results.json"))
        runs = [load_run(os.path.dirname(f)) for f in files]
        seeds[m] = sorted(runs, key=lambda run: run["config"]["seed"])
    return seeds


def math_focus_runs_block(root, folder="focus"):
    """Every focus run: exact match per module, training time."""
    seeds = _focus(root, folder)
    first = seeds[FOCUS_MODELS[0]][0]
    columns = [(regime, m) for regime in REGIMES
               for m in sorted(accuracy(first, regime))]
    short = [m.split("__", 1)[1] if m.startswith("numbers__") or m.startswith("arithmetic__")
             else m for _, m in columns]
    lines = ["| run | " + " | ".join(short) + " | steps | training s |",
             "|---|" + "---:|" * (len(columns) + 2)]
    for model, runs in seeds.items():
        for run in runs:
            cells = [accuracy(run, regime).get(m) for regime, m in columns]
            lines.append(f"| {model} seed {run['config']['seed']} | "
                         + " | ".join("–" if c is None else f"{c:.1f}" for c in cells)
                         + f" | {run['steps']:,} | {run['train_seconds']:,.0f} |")
    return "\n".join(lines)


def math_focus_seeds_block(root, folder="focus"):
    """Mean ± std over seeds per module, the verdict and Welch's t (needs scipy for p)."""
    seeds = _focus(root, folder)
    check_seeds(seeds)
    tables = {regime: seed_table(seeds, regime) for regime in REGIMES}
    return demote(seeds_markdown(tables, seeds), 1)


#: (label, folder under results/math) of the recipe comparison on the focus modules.
FOCUS_RECIPES = (("`--recipe size` (lr 1e-3, Keras Adam, per-example token sums)", "focus"),
                 ("`--recipe authors_code` (lr 1e-4, PyTorch Adam, token mean)",
                  "focus_authors"))


def _gap(a, b):
    """``(mean_a − mean_b, its standard error √(s_a²/n_a + s_b²/n_b))`` of two
    :func:`spread` s; the error is None without two seeds of each."""
    difference = None if a["mean"] is None or b["mean"] is None else a["mean"] - b["mean"]
    if a["std"] is None or b["std"] is None:
        return difference, None
    return difference, math.sqrt(a["std"] ** 2 / a["n"] + b["std"] ** 2 / b["n"])


def _plus_minus(value, error):
    return format_cell(value, sign=True) + ("" if error is None else f" ± {error:.2f}")


def math_focus_recipes_block(root):
    """Per model and recipe: seeds, mean ± std over seeds of the interpolate and
    extrapolate means over modules; the TP-Transformer − Transformer gap per recipe with
    its standard error, and how far the gap moves from the first recipe to the last."""
    def cell(s):
        return "–" if s["mean"] is None else (
            f"{s['mean']:.2f}" + ("" if s["std"] is None else f" ± {s['std']:.2f}"))

    lines = ["| recipe | model | seeds | " + " | ".join(f"{r} mean %" for r in REGIMES)
             + " | training s (mean) |", "|---|---|---|" + "---:|" * (len(REGIMES) + 1)]
    gaps, texts = [], []
    for label, folder in FOCUS_RECIPES:
        seeds = _focus(root, folder)
        means = {}
        for model, runs in seeds.items():
            means[model] = {r: spread([summarize(accuracy(run, r).values())["mean"]
                                       for run in runs]) for r in REGIMES}
            seconds = sum(run["train_seconds"] for run in runs) / len(runs)
            lines.append(f"| {label} | {model} | "
                         f"{', '.join(str(run['config']['seed']) for run in runs)} | "
                         + " | ".join(cell(means[model][r]) for r in REGIMES)
                         + f" | {seconds:,.0f} |")
        gaps.append({r: _gap(*(means[m][r] for m in FOCUS_MODELS)) for r in REGIMES})
        texts.append(f"{label}: " + ", ".join(f"{r} {_plus_minus(*gaps[-1][r])}"
                                              for r in REGIMES))
    out = lines + ["", "TP-Transformer − Transformer (points, ± its standard error over "
                   "seeds): " + "; ".join(texts) + "."]
    first, last = gaps[0], gaps[-1]
    moves = []
    for r in REGIMES:
        (a, ea), (b, eb) = first[r], last[r]
        if a is None or b is None or ea is None or eb is None:
            continue
        error = math.sqrt(ea ** 2 + eb ** 2)
        moves.append(f"{r} {_plus_minus(b - a, error)}"
                     + (f" ({abs(b - a) / error:.1f} standard errors)" if error else ""))
    if moves:
        out += ["", f"From the first recipe to the second the gap moves by {', '.join(moves)}."]
    return "\n".join(out)
