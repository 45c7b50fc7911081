"""The numbers of :mod:`tpr_keras.analysis.modules`: per-module accuracy of ``train.math`` runs.

Schlag et al. (2019), Appendix B and Table 1: reading runs, the figures-mode comparison
(one run per model) and the seeds-mode comparison (mean ± std over seeds, Welch's t), as
dicts; the figures are :mod:`tpr_keras.analysis.module_figures`, the Markdown tables
``tools/report/modules.py``.

Example:
>>> summarize([90.0, 97.0])["above_95"]
1
"""

from __future__ import annotations

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


def format_cell(x, digits: int = 2, sign: bool = False) -> str:
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
