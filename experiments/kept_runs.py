"""Reading the ``results.json`` of finished runs kept (committed) one folder per seed."""

import glob
import json
import os
import re

#: A seed folder's name: ``seed<N>`` or ``<anything>-seed<N>``.
SEED_FOLDER = re.compile(r"(?:^|-)seed(\d+)$")


def load_seed_runs(pattern):
    """``{seed: results}`` of the ``results.json`` files ``pattern`` globs, by seed.

    The seed is the folder's ``seed<N>`` suffix (folders without one are skipped); a
    ``config.seed`` recorded in the file that disagrees with it is an error.

    Example:
    >>> load_seed_runs("/nonexistent/seed*/results.json")
    {}
    """
    runs = {}
    for path in glob.glob(pattern):
        match = SEED_FOLDER.search(os.path.basename(os.path.dirname(path)))
        if not match:
            continue
        seed = int(match.group(1))
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        recorded = result.get("config", {}).get("seed")
        if recorded is not None and recorded != seed:
            raise ValueError(f"{path}: config.seed is {recorded}, the folder says {seed}")
        runs[seed] = result
    return dict(sorted(runs.items()))
