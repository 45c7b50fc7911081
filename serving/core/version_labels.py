"""Version labels (``version_labels { key: 'stable' value: 1 }``), checked when a config
loads, as TF Serving's ``ServerCore::UpdateModelVersionLabelMap`` checks them.

A label must name a version that is available. With
``allow_version_labels_for_unavailable_models`` (TF Serving's flag), a new label, or one that
keeps its version, may name a version that is not available yet (so a config can label a
version before it is copied in); moving an existing label to an unavailable version is still
an error, so a label that serves traffic never points at nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping


def checked_labels(model: str, wanted: Mapping[str, int], current: Mapping[str, int],
                   available: Collection[int], allow_unavailable: bool = False) -> dict[str, int]:
    """The label map ``wanted`` once checked against the ``available`` versions (ValueError
    naming the model, label and version otherwise); ``current`` is the map in use."""
    for label, version in sorted(wanted.items()):
        if version in available:
            continue
        if allow_unavailable and current.get(label, version) == version:
            continue
        hint = "" if allow_unavailable else (
            "; allow_version_labels_for_unavailable_models lets a new label name a version "
            "before it is available")
        raise ValueError(f"model '{model}': version label '{label}' names version {version}, "
                         f"which is not available (available: {sorted(available)}){hint}")
    return {label: int(version) for label, version in wanted.items()}
