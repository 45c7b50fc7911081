"""What the generated blocks of ``tools.report`` share: reading committed JSON, demoting
headings, a recorded command as a reader can run it, curves from a run's history and the
figures' axes."""

import json
import os
import re

#: Checks that committed JSON records as ``python -m bench.NAME`` (or ``python
#: bench/NAME.py``) and that run as ``python -m tools.NAME``.
RECORDED_UNDER_BENCH = ("babi_serving_check", "preset_serving_check")


class ReportError(ValueError):
    """A malformed block in a results file, or a block that cannot be made."""


def load_json(root, *parts):
    """The JSON file at ``root/parts...``."""
    with open(os.path.join(root, *parts), encoding="utf-8") as f:
        return json.load(f)


def demote(text, levels=1):
    """Headings one (or ``levels``) level deeper, so a block fits under its section."""
    return "\n".join("#" * levels + line if line.startswith("#") else line
                     for line in text.splitlines())


def portable_command(command):
    """A recorded command as a reader can run it from the repository root: no absolute path
    of the checkout in ``--flag=/abs/path/runs/...`` or ``--flag=/abs/path/../shared/...``,
    and a script recorded as ``python bench/NAME.py`` runs as ``python -m bench.NAME``, or
    ``python -m tools.NAME`` for :data:`RECORDED_UNDER_BENCH`."""
    command = re.sub(r"(--\w+=)/\S*?/(\.\./shared/|runs/)", r"\1\2", command)
    return re.sub(r"python (?:-m bench\.|bench/)(\w+)(?:\.py)?", lambda m: (
        f"python -m {'tools' if m[1] in RECORDED_UNDER_BENCH else 'bench'}.{m[1]}"), command)


def epoch_curve(result, value):
    """``[(step, training hours so far, value(epoch))]`` after each epoch of a
    ``results.json``'s ``history`` where ``value`` gives a number (not None); the hours sum
    the epochs' training time (validation, scoring and restarts excluded)."""
    hours, points = 0.0, []
    for epoch in result.get("history", []):
        hours += epoch["seconds"] / 3600
        number = value(epoch)
        if number is not None:
            points.append((epoch.get("step"), hours, number))
    return points


def validation_curve(result):
    """:func:`epoch_curve` of the validation error %."""
    return epoch_curve(result, lambda epoch: epoch.get("valid_error_percent"))


def hours_axes(figsize=(7, 4)):
    """A matplotlib figure and axes (the Agg backend: no display) whose x axis is training
    hours; needs the ``analysis`` extra."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    ax.set_xlabel("training time (hours, 1 CPU thread)")
    return fig, ax


def save_figure(fig, ax, path, ylabel, title, **legend):
    """Labels ``ax``, writes ``fig`` as a PNG at ``path`` and closes it."""
    import matplotlib.pyplot as plt

    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(**legend)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

