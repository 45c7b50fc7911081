"""TP-Transformer Figures 4/5 and Table 1: per-module accuracy of finished ``train.math`` runs.

The command line is ``python -m tools.analysis.modules``; this module computes the tables
(as dicts) and draws the figures it writes, and the command lays the tables out as Markdown.

Figures mode, one run per model, side by side (Schlag et al. 2019, Appendix B, Figures 4 and 5;
the summary rows are Table 1's "acc" and ">95%" columns)::

    python -m tools.analysis.modules --runs TP-Transformer=runs/math-all \\
        --runs Transformer=runs/math-all-transformer --out results/figures/modules

writes ``interpolate.png`` and ``extrapolate.png`` (accuracy of every module, one bar per model,
modules in alphabetical order, i.e. grouped by area: algebra, arithmetic, calculus, ...),
``modules.md`` (the command's Markdown, per regime: module, one column per model, the first model minus the second;
then the mean over modules and the number of modules above 95 %, as Table 1 counts them) and
``modules.json``. A module that a run did not evaluate shows as "–", is left out of that
model's mean and count, and is named in a warning on stderr; the mean row's difference is the
difference of the two means as shown.

Seeds mode, several seeds per model::

    python -m tools.analysis.modules \\
        --seeds tp_transformer=runs/focus/tp_transformer-seed0,...-seed1,...-seed2 \\
        --seeds transformer=runs/focus/transformer-seed0,...-seed1,...-seed2 \\
        --out results/figures/seeds

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
modes print the Markdown to stdout; ``--json FILE`` also writes the numbers to FILE. The
figures need the ``analysis`` extra (``pip install -e ".[analysis]"``); the tables do not.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from tpr_keras.analysis.module_figures import plot_regime, plot_seeds
from tpr_keras.analysis.module_tables import (  # noqa: F401  (the tables' names)
    MODELS,
    REGIMES,
    THRESHOLD,
    accuracy,
    check_model,
    check_seeds,
    compare,
    load_run,
    model_key,
    seed_table,
    spread,
    summarize,
    versus,
    warn,
    welch,
)


# ------------------------------------------------------------------- the two modes
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


def run_figures(specs: Sequence[str], out: str) -> tuple[list[str], dict, dict]:
    """Figures mode: ``(labels, {regime: compare table}, the JSON record)``; draws
    ``interpolate.png`` and ``extrapolate.png`` into ``out``."""
    paths = parse_specs(specs, "--runs")
    if any(len(p) != 1 for p in paths.values()):
        raise ValueError("--runs takes one run per label (several seeds: --seeds)")
    runs = {label: load_run(p[0]) for label, p in paths.items()}
    for label, run in runs.items():
        check_model(label, run, strict=False)
    labels = list(runs)
    tables = {regime: compare(runs, regime) for regime in REGIMES}
    os.makedirs(out, exist_ok=True)
    for number, regime in ((4, "interpolate"), (5, "extrapolate")):
        _plot(plot_regime, tables[regime], labels, os.path.join(out, f"{regime}.png"),
              f"Figure {number} layout: {regime} accuracy per module "
              f"({' vs '.join(labels)})")
    return labels, tables, {"mode": "figures", "runs": {k: v[0] for k, v in paths.items()},
                            "regimes": tables}


def run_seeds(specs: Sequence[str], out: str) -> tuple[dict, dict, dict]:
    """Seeds mode: ``({label: runs}, {regime: seed table}, the JSON record)``; draws
    ``seeds.png`` into ``out``."""
    paths = parse_specs(specs, "--seeds")
    seeds = {label: [load_run(p) for p in dirs] for label, dirs in paths.items()}
    check_seeds(seeds)
    tables = {regime: seed_table(seeds, regime) for regime in REGIMES}
    os.makedirs(out, exist_ok=True)
    _plot(plot_seeds, tables, list(seeds), os.path.join(out, "seeds.png"))
    return seeds, tables, {
        "mode": "seeds", "runs": paths,
        "seeds": {label: [r.get("config", {}).get("seed") for r in runs]
                  for label, runs in seeds.items()},
        "definition": "larger_than_spread: |mean_a - mean_b| > std_a + std_b "
                      "(sample std, ddof=1); difference: first minus second",
        "regimes": tables}
