"""Figures of :mod:`tpr_keras.analysis.modules` (Schlag et al., 2019, Figures 4 and 5).

Bars of per-module accuracy, one per model (figures mode), or mean ± std over seeds
(seeds mode). Needs matplotlib (the ``analysis`` extra); :func:`plot_regime` and
:func:`plot_seeds` raise ImportError without it.

Example:
>>> labels = ["TP-Transformer", "Transformer"]
>>> plot_regime(tables["interpolate"], labels, "interpolate.png", "")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tpr_keras.analysis.module_tables import THRESHOLD, format_cell


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
        series.append((f"{label} (mean {format_cell(s['mean'])} %, {s['above_95']} > 95 %)",
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
