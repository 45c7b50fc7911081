"""Two evaluation tables compared row by row (a preset's recorded table and one computed
again), within a tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np


def table_numbers(table: dict[str, Any]) -> dict[str, float]:
    """``{row label: number}`` of a table: what :func:`compare_tables` compares."""
    out: dict[str, float] = {}
    if "test_error_percent" in table:
        out.update({f"task {t} test error %": v for t, v in table["test_error_percent"].items()})
        if "test_error_percent_mean" in table:
            out["mean test error %"] = table["test_error_percent_mean"]
        if "failed_tasks" in table:
            out["failed tasks"] = float(table["failed_tasks"])
    for split, v in table.get("accuracy_percent", {}).items():
        out[f"{split} accuracy %"] = v
    for regime in ("interpolate", "extrapolate"):
        for module, v in table.get(f"{regime}_accuracy_percent", {}).items():
            out[f"{regime} {module} %"] = v
        if regime in table.get("summary", {}):
            out[f"{regime} mean %"] = table["summary"][regime]["mean"]
    return out


def compare_tables(measured: dict[str, Any], recorded: dict[str, Any],
                   tolerance: float = 0.05) -> list[tuple[str, float | None, float | None, bool]]:
    """``[(row, measured, recorded, within tolerance)]`` over the rows of both tables; a
    row that only one table has is a difference."""
    a, b = table_numbers(measured), table_numbers(recorded)
    rows = list(b) + [k for k in a if k not in b]

    def close(x, y):  # both NaN (an empty split) agree; 1e-9 absorbs float rounding
        return (np.isnan(x) and np.isnan(y)) or abs(x - y) <= tolerance + 1e-9

    return [(k, a.get(k), b.get(k), k in a and k in b and close(a[k], b[k])) for k in rows]
