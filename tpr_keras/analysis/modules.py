"""TP-Transformer Figures 4/5 and Table 1: per-module accuracy of finished ``train.math`` runs.

Figures mode, one run per model, side by side (Schlag et al. 2019, Appendix B, Figures 4 and 5;
the summary rows are Table 1's "acc" and ">95%" columns)::

    python -m tpr_keras.analysis.modules --runs TP-Transformer=runs/math-all \\
        Transformer=runs/math-all-transformer --out results/figures/modules

writes ``interpolate.png`` and ``extrapolate.png`` (accuracy of every module, one bar per model,
modules in alphabetical order, i.e. grouped by area: algebra, arithmetic, calculus, ...),
``modules.md`` (per regime: module, one column per model, the first model minus the second;
then the mean over modules and the number of modules above 95 %, as Table 1 counts them) and
``modules.json``. A module that a run did not evaluate shows as "–", is left out of that
model's mean and count, and is named in a warning on stderr; the mean row's difference is the
difference of the two means as shown.

Seeds mode, several seeds per model::

    python -m tpr_keras.analysis.modules \\
        --seeds tp_transformer=runs/focus/tp_transformer-seed0,...-seed1,...-seed2 \\
        transformer=runs/focus/transformer-seed0,...-seed1,...-seed2 --out results/figures/seeds

Per module and regime: each model's mean ± sample standard deviation (ddof = 1) over its
seeds, the difference of the means ``Δ = mean_a − mean_b`` (first model minus second) and the
verdict. **The difference is larger than the seed spread** when ``|Δ| > std_a + std_b``
(strictly), i.e. the two mean ± std intervals do not overlap. Welch's t statistic
``t = Δ / sqrt(std_a² / n_a + std_b² / n_b)`` and its Welch–Satterthwaite degrees of freedom
are reported beside it (with scipy, also the two-sided p-value); with 3 seeds per model they
are a rough guide only. The summary rows do the same for each seed's mean over its modules
and its number of modules above 95 %. Writes ``seeds.md``, ``seeds.json`` and, with the
``analysis`` extra, ``seeds.png`` (error bars: ± one std). It refuses fewer than 2 seeds per
model, a label that is not the runs' ``config.model`` (labels are compared lower-cased with
"-" read as "_", so ``TP-Transformer`` names ``tp_transformer`` runs), and the same
``config.seed`` twice for one model. In figures mode the labels are free, but a label that
names a model (``tp_transformer``, ``transformer``) must match its run too.

A run is a ``train.math --model_dir`` (its ``results.json``) or a ``results.json`` path. Both
modes print the markdown to stdout; ``--json FILE`` also writes the numbers to FILE. The
figures need the ``analysis`` extra (``pip install -e ".[analysis]"``); the tables do not.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Sequence

import numpy as np

REGIMES = ("interpolate", "extrapolate")
#: Table 1's threshold: a module counts when its accuracy is above this (%).
THRESHOLD = 95.0
MODELS = ("tp_transformer", "transformer")


# ---------------------------------------------------------------------------- runs
def load_run(path: str) -> dict:
    """``results.json`` of a run (a ``train.math --model_dir`` or the file itself)."""
    file = os.path.join(path, "results.json") if os.path.isdir(path) else path
    with open(file, encoding="utf-8") as f:
        run = json.load(f)
    run["path"] = path
    return run


def model_key(label: str) -> str:
    """``TP-Transformer`` -> ``tp_transformer``: how a label is compared with config.model."""
    return label.strip().lower().replace("-", "_").replace(" ", "_")


def check_model(label: str, run: dict, strict: bool) -> None:
    """Raise ValueError when the run's ``config.model`` is not the model the label names.

    ``strict``: every label must name the model; otherwise only labels that are model names.
    """
    model = run.get("config", {}).get("model")
    if (strict or model_key(label) in MODELS) and model_key(label) != model:
        raise ValueError(f"{run['path']}: config.model is {model!r}, but it is labelled "
                         f"{label!r}")


def accuracy(run: dict, regime: str) -> dict[str, float]:
    """``{module: accuracy %}`` of one regime."""
    return {m: float(v) for m, v in run.get(f"{regime}_accuracy_percent", {}).items()}


def summarize(scores: Sequence[float]) -> dict:
    """Table 1's columns of one model: modules, mean accuracy, modules above 95 %."""
    scores = list(scores)
    return {"modules": len(scores), "mean": float(np.mean(scores)) if scores else None,
            "above_95": int(sum(s > THRESHOLD for s in scores))}


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _finite(x):
    """JSON has no NaN or infinity: those become None."""
    return float(x) if x is not None and math.isfinite(x) else None


def _count(modules: Sequence[str]) -> str:
    return f"{len(modules)} module" + ("" if len(modules) == 1 else "s")


def _cell(x, digits: int = 2, sign: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


# ------------------------------------------------------------------ figures mode
def compare(runs: dict[str, dict], regime: str) -> dict:
    """One regime of runs side by side (Figure 4 or 5, Table 1's columns).

    Returns:
        ``{"modules": sorted union, "accuracy": {label: {module: % or None}},
        "difference": {module: first − second or None} (two runs only),
        "summary": {label: summarize(...)}, "missing": {label: [modules]}}``.
    """
    labels = list(runs)
    scores = {label: accuracy(run, regime) for label, run in runs.items()}
    modules = sorted(set().union(*scores.values()))
    table = {"modules": modules,
             "accuracy": {label: {m: scores[label].get(m) for m in modules} for label in labels},
             "summary": {label: summarize(scores[label].values()) for label in labels},
             "missing": {label: [m for m in modules if m not in scores[label]]
                         for label in labels}}
    for label, missing in table["missing"].items():
        if missing:
            warn(f"{label} has no {regime} accuracy for {len(missing)} module(s) "
                 f"({', '.join(missing)}): shown as –, left out of its mean and count")
    if len(labels) == 2:
        a, b = (table["accuracy"][label] for label in labels)
        table["difference"] = {m: None if a[m] is None or b[m] is None else a[m] - b[m]
                               for m in modules}
    return table


def compare_markdown(tables: dict[str, dict], labels: Sequence[str]) -> str:
    """Per regime: module, one column per model, the difference; mean and > 95 % rows."""
    pair = len(labels) == 2
    lines = []
    for regime, table in tables.items():
        lines += [f"## {regime} ({_count(table['modules'])})", "",
                  "| module | " + " | ".join(labels) + (" | difference |" if pair else " |"),
                  "|---|" + "---:|" * (len(labels) + pair)]
        for m in table["modules"]:
            cells = [_cell(table["accuracy"][label][m]) for label in labels]
            if pair:
                cells.append(_cell(table["difference"][m], sign=True))
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        summary = [table["summary"][label] for label in labels]
        means = [_cell(s["mean"]) for s in summary]
        counts = [str(s["above_95"]) for s in summary]
        if pair:
            a, b = summary
            gap = None if a["mean"] is None or b["mean"] is None else a["mean"] - b["mean"]
            means.append(_cell(gap, sign=True))
            counts.append(f"{a['above_95'] - b['above_95']:+d}")
        lines += ["| **mean** | " + " | ".join(means) + " |",
                  "| **modules > 95 %** | " + " | ".join(counts) + " |", ""]
    if pair:
        lines.append(f"difference: {labels[0]} − {labels[1]} (percentage points).")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- seeds mode
def welch(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float,
          n_b: int) -> tuple[float, float]:
    """Welch's t statistic of ``mean_a − mean_b`` and its Welch–Satterthwaite dof.

    ``(±inf, nan)`` when both stds are 0 and the means differ, ``(nan, nan)`` when they do not.
    """
    va, vb = std_a ** 2 / n_a, std_b ** 2 / n_b
    difference = mean_a - mean_b
    if va + vb == 0:
        return (math.copysign(math.inf, difference) if difference else math.nan), math.nan
    dof = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))
    return difference / math.sqrt(va + vb), dof


def spread(values: Sequence[float]) -> dict:
    """``{"n", "mean", "std"}``: sample std (ddof = 1), None below 2 values."""
    values = np.asarray(values, np.float64)
    return {"n": len(values), "mean": float(values.mean()) if len(values) else None,
            "std": float(values.std(ddof=1)) if len(values) >= 2 else None}


def versus(a: dict, b: dict) -> dict:
    """Difference of two :func:`spread` s, the verdict ``|Δ| > std_a + std_b``, Welch's t."""
    if a["std"] is None or b["std"] is None:
        return {"difference": None if a["mean"] is None or b["mean"] is None
                else a["mean"] - b["mean"], "larger_than_spread": None, "welch_t": None,
                "welch_dof": None, "p_value": None}
    difference = a["mean"] - b["mean"]
    t, dof = welch(a["mean"], a["std"], a["n"], b["mean"], b["std"], b["n"])
    p = None
    if math.isfinite(t) and math.isfinite(dof):
        try:
            from scipy import stats

            p = float(2 * stats.t.sf(abs(t), dof))
        except ImportError:
            pass
    return {"difference": difference,
            "larger_than_spread": bool(abs(difference) > a["std"] + b["std"]),
            "welch_t": _finite(t), "welch_dof": _finite(dof), "p_value": p}


def check_seeds(seeds: dict[str, list[dict]]) -> None:
    """Raise ValueError unless there are two models, each with >= 2 runs of itself and
    distinct seeds."""
    if len(seeds) != 2:
        raise ValueError(f"--seeds takes two models, got {len(seeds)}: {', '.join(seeds)}")
    for label, runs in seeds.items():
        if len(runs) < 2:
            raise ValueError(f"{label}: {len(runs)} run(s); a seed spread needs at least 2")
        for run in runs:
            check_model(label, run, strict=True)
        numbers = [run.get("config", {}).get("seed") for run in runs]
        repeated = {s for s in numbers if s is not None and numbers.count(s) > 1}
        if repeated:
            raise ValueError(f"{label}: seed {sorted(repeated)} appears more than once "
                             f"({', '.join(r['path'] for r in runs)})")


def seed_table(seeds: dict[str, list[dict]], regime: str) -> dict:
    """One regime over seeds: per module and for the summary rows, each model's
    :func:`spread` and the two models' :func:`versus` (first minus second)."""
    labels = list(seeds)
    scores = {label: [accuracy(run, regime) for run in runs] for label, runs in seeds.items()}
    modules = sorted(set().union(*(s for per in scores.values() for s in per)))
    for label, runs in seeds.items():
        for run, score in zip(runs, scores[label]):
            missing = [m for m in modules if m not in score]
            if missing:
                warn(f"{label} run {run['path']} has no {regime} accuracy for "
                     f"{', '.join(missing)}: its statistics use the other seeds")
    rows = {}
    for m in modules:
        cells = {label: spread([s[m] for s in scores[label] if m in s]) for label in labels}
        rows[m] = {**cells, **versus(*cells.values())}
    summary = {}
    for key in ("mean", "above_95"):
        cells = {label: spread([summarize(s.values())[key] for s in scores[label] if s])
                 for label in labels}
        summary[key] = {**cells, **versus(*cells.values())}
    return {"modules": modules, "rows": rows, "summary": summary}


VERDICT = {True: "yes", False: "no", None: "–"}


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
                f"{_cell(r['difference'], sign=True)} | {VERDICT[r['larger_than_spread']]} | "
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


# ------------------------------------------------------------------------ figures
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _area_lines(ax, modules: Sequence[str]) -> None:
    """Thin lines between areas (the module name's part before ``__``)."""
    for i in range(1, len(modules)):
        if modules[i].split("__")[0] != modules[i - 1].split("__")[0]:
            ax.axhline(i - 0.5, color="0.75", lw=0.6)


def _bars(ax, modules: Sequence[str], series: Sequence[tuple]) -> None:
    """Horizontal bars: per ``(legend, values, stds or None)`` one bar per module (NaN: a
    "–" instead of a bar), the first module on top, the 95 % threshold dotted."""
    y = np.arange(len(modules))
    height, right = 0.8 / len(series), 108.0
    for j, (legend, values, stds) in enumerate(series):
        values = np.asarray(values, np.float64)
        at = y + (j - (len(series) - 1) / 2) * height
        xerr = np.zeros_like(values) if stds is None else np.nan_to_num(
            np.asarray(stds, np.float64))
        ax.barh(at, np.nan_to_num(values), height=height,
                xerr=None if stds is None else xerr, capsize=2, label=legend,
                error_kw={"lw": 0.8})
        for v, e, yy in zip(values, xerr, at):
            ax.text(1 if np.isnan(v) else v + e + 0.8, yy,
                    "missing" if np.isnan(v) else f"{v:.1f}", va="center", fontsize=5)
            right = max(right, 0 if np.isnan(v) else v + e + 8)
    ax.set_yticks(y, modules, fontsize=7)
    ax.set_ylim(len(modules) - 0.5, -0.5)
    ax.set_xlim(0, right)
    ax.axvline(THRESHOLD, color="0.4", ls=":", lw=0.8)
    ax.set_xlabel("accuracy (%)")
    _area_lines(ax, modules)


def _figure(plt, panels: int, rows: int, bars: int):
    height = 0.13 * rows * max(2, bars) + 2.2
    fig, axes = plt.subplots(1, panels, figsize=(8.0 if panels == 1 else 6.0 * panels, height),
                             squeeze=False)
    return fig, axes[0], height


def _finish(plt, fig, height: float, bars: int, path: str) -> None:
    handles, names = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=bars, fontsize=7)
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _nan(x):
    return np.nan if x is None else x


def plot_regime(table: dict, labels: Sequence[str], path: str, title: str) -> None:
    """Figure 4 (interpolate) / Figure 5 (extrapolate): accuracy per module, models side by
    side; the legend gives each model's mean and number of modules > 95 % (Table 1)."""
    plt = _pyplot()
    modules = table["modules"]
    fig, (ax,), height = _figure(plt, 1, len(modules), len(labels))
    series = []
    for label in labels:
        s = table["summary"][label]
        series.append((f"{label} (mean {_cell(s['mean'])} %, {s['above_95']} > 95 %)",
                       [_nan(table["accuracy"][label][m]) for m in modules], None))
    _bars(ax, modules, series)
    ax.set_title(title, fontsize=9)
    _finish(plt, fig, height, len(labels), path)


def plot_seeds(tables: dict[str, dict], labels: Sequence[str], path: str) -> None:
    """Mean accuracy per module over seeds, ± one std as error bars; a panel per regime."""
    plt = _pyplot()
    rows = max(len(t["modules"]) for t in tables.values())
    fig, axes, height = _figure(plt, len(tables), rows, len(labels))
    for ax, (regime, table) in zip(axes, tables.items()):
        cells = [[table["rows"][m][label] for m in table["modules"]] for label in labels]
        _bars(ax, table["modules"],
              [(label, [_nan(c["mean"]) for c in column], [_nan(c["std"]) for c in column])
               for label, column in zip(labels, cells)])
        ax.set_title(f"{regime}: mean ± std over seeds", fontsize=9)
    _finish(plt, fig, height, len(labels), path)


# --------------------------------------------------------------------------- main
def parse_specs(specs: Sequence[str], flag: str) -> dict[str, list[str]]:
    """``["A=d1,d2", "B=d3"]`` -> ``{"A": ["d1", "d2"], "B": ["d3"]}``."""
    out = {}
    for spec in specs:
        label, _, paths = spec.partition("=")
        if not label or not paths:
            raise ValueError(f"{flag} takes LABEL=DIR[,DIR...], got {spec!r}")
        if label in out:
            raise ValueError(f"{flag}: the label {label!r} is given twice")
        out[label] = [p for p in paths.split(",") if p]
    return out


def _plot(plot, *args) -> None:
    try:
        plot(*args)
    except ImportError:
        print("(no matplotlib: pip install -e '.[analysis]' for the figures)", file=sys.stderr)


def run_figures(specs: Sequence[str], out: str) -> tuple[str, dict]:
    paths = parse_specs(specs, "--runs")
    if any(len(p) != 1 for p in paths.values()):
        raise ValueError("--runs takes one run per label (several seeds: --seeds)")
    runs = {label: load_run(p[0]) for label, p in paths.items()}
    for label, run in runs.items():
        check_model(label, run, strict=False)
    labels = list(runs)
    tables = {regime: compare(runs, regime) for regime in REGIMES}
    table = compare_markdown(tables, labels)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "modules.md"), "w", encoding="utf-8") as f:
        f.write(table)
    for number, regime in ((4, "interpolate"), (5, "extrapolate")):
        _plot(plot_regime, tables[regime], labels, os.path.join(out, f"{regime}.png"),
              f"Figure {number} layout: {regime} accuracy per module "
              f"({' vs '.join(labels)})")
    return table, {"mode": "figures", "runs": {k: v[0] for k, v in paths.items()},
                   "regimes": tables}


def run_seeds(specs: Sequence[str], out: str) -> tuple[str, dict]:
    paths = parse_specs(specs, "--seeds")
    seeds = {label: [load_run(p) for p in dirs] for label, dirs in paths.items()}
    check_seeds(seeds)
    tables = {regime: seed_table(seeds, regime) for regime in REGIMES}
    table = seeds_markdown(tables, seeds)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "seeds.md"), "w", encoding="utf-8") as f:
        f.write(table)
    _plot(plot_seeds, tables, list(seeds), os.path.join(out, "seeds.png"))
    return table, {"mode": "seeds", "runs": paths,
                   "seeds": {label: [r.get("config", {}).get("seed") for r in runs]
                             for label, runs in seeds.items()},
                   "definition": "larger_than_spread: |mean_a - mean_b| > std_a + std_b "
                                 "(sample std, ddof=1); difference: first minus second",
                   "regimes": tables}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--runs", nargs="+", metavar="LABEL=DIR",
                      help="one train.math run per model, side by side (Figures 4/5)")
    mode.add_argument("--seeds", nargs="+", metavar="MODEL=DIR,DIR,...",
                      help="two models, >= 2 seeds each: mean ± std and the verdict")
    parser.add_argument("--out", required=True, help="folder for the tables and PNGs")
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    try:
        if args.runs:
            table, result = run_figures(args.runs, args.out)
        else:
            table, result = run_seeds(args.seeds, args.out)
    except (ValueError, OSError) as error:
        parser.error(str(error))
    name = "modules.json" if args.runs else "seeds.json"
    for path in filter(None, (os.path.join(args.out, name), args.json)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
