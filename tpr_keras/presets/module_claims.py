"""Which Mathematics modules a math preset claims: those it scores at least a threshold on,
measured on a fresh sample of DeepMind's generator that chose nothing.

A preset's ``metadata.json`` holds the claim in its ``claims`` section::

    "claims": {"threshold_percent": 90.0,
               "modules": {"arithmetic__add_or_sub": 96.2, ...},     # scored >= threshold
               "not_claimed": {"comparison__pair": 88.25},           # trained, scored less
               "sample": {"source": "results/math/heldout/....json",
                          "questions_per_module": 2000, "questions_path": "..."}}

``python -m train.claim_modules`` writes it from the JSON of
``python -m tools.math_savedmodel_accuracy`` (exact match % per module of the exported
model); :class:`~tpr_keras.models.MathAnswerer` reads it (:func:`claimed_scores`), says per
question whether its module is claimed (``claimed``) and its export serves the claimed
modules' scores (signature ``coverage``). A preset without the section claims nothing and
its answers carry no ``claimed``.

Importing this module does not import TensorFlow or Keras.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The exact match % a module needs on the fresh sample to be claimed.
DEFAULT_THRESHOLD = 90.0


def module_claims(heldout: Mapping[str, Any], threshold: float = DEFAULT_THRESHOLD,
                  source: str | None = None,
                  trained: list[str] | None = None) -> dict[str, Any]:
    """The ``claims`` section of a preset from a held-out measurement.

    Args:
        heldout: ``tools.math_savedmodel_accuracy``'s JSON of a folder: ``modules``, each
            with ``accuracy_percent`` and ``questions``; and ``questions_path``.
        threshold: Exact match % (0-100) a module needs to be claimed.
        source: Where the measurement is committed (recorded, not read).
        trained: The modules the preset was trained on (its templates'); a measured
            module outside them is an error: the model cannot tell its questions apart.

    Raises:
        ValueError: no module measured, a threshold outside 0-100, a module without
            ``accuracy_percent``, or one the preset was not trained on.

    Example:
    >>> module_claims({"modules": {"a": {"accuracy_percent": 95.0, "questions": 10},
    ...                            "b": {"accuracy_percent": 80.0, "questions": 10}}},
    ...               90)["modules"]
    {'a': 95.0}
    """
    if not 0 <= threshold <= 100:
        raise ValueError(f"threshold must be a percentage (0-100), got {threshold}")
    measured = heldout.get("modules") or {}
    if not measured:
        raise ValueError("the measurement has no modules ('modules' is empty or missing)")
    scores = {}
    for module, row in sorted(measured.items()):
        if "accuracy_percent" not in row:
            raise ValueError(f"module {module!r} of the measurement has no accuracy_percent")
        if trained is not None and module not in trained:
            raise ValueError(f"module {module!r} was measured but the preset was not trained "
                             f"on it (its modules: {', '.join(sorted(trained))})")
        scores[module] = round(float(row["accuracy_percent"]), 2)
    counts = {int(row.get("questions", 0)) for row in measured.values()}
    sample = {"source": source, "questions_path": heldout.get("questions_path"),
              "questions_per_module": counts.pop() if len(counts) == 1 else None}
    return {"threshold_percent": float(threshold),
            "modules": {m: s for m, s in scores.items() if s >= threshold},
            "not_claimed": {m: s for m, s in scores.items() if s < threshold},
            "sample": sample}


def claimed_scores(metadata: Mapping[str, Any]) -> dict[str, float] | None:
    """``{module: exact match %}`` a preset's ``metadata.json`` claims, or None when it has
    no ``claims`` section (it claims nothing)."""
    claims = metadata.get("claims")
    if claims is None:
        return None
    return {str(m): float(s) for m, s in claims.get("modules", {}).items()}


def describe_claims(metadata: Mapping[str, Any]) -> str | None:
    """One line of what a preset claims (for its listing), or None without a claim."""
    claims = metadata.get("claims")
    if claims is None:
        return None
    sample = claims.get("sample") or {}
    per_module = sample.get("questions_per_module")
    claimed = ", ".join(f"{m} {s:g} %" for m, s in claims.get("modules", {}).items())
    below = ", ".join(f"{m} {s:g} %" for m, s in claims.get("not_claimed", {}).items())
    line = (f"claims (exact match >= {claims['threshold_percent']:g} % on a fresh generator "
            f"sample{f' of {per_module} questions per module' if per_module else ''}): "
            f"{claimed or 'none'}")
    return line + (f"; trained on but not claimed: {below}" if below else "")
