"""Where the Mathematics Dataset files are: the official archive, its checksum, the
regime folders and the module files in them, and which modules a filter selects.

DeepMind Mathematics Dataset v1.0 (the data of the TP-Transformer, Schlag et al. 2019):
``train-easy/``, ``train-medium/``, ``train-hard/``, ``interpolate/`` and
``extrapolate/`` folders of ``<module>.txt`` files (:data:`REGIMES`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from tpr_keras.data.sources import DataSource, find_data_dir

#: Environment variable naming a folder with the dataset (same rules as data_dir).
MATH_DIR_ENV = "TPR_KERAS_MATH_DIR"
MATH_URL = "https://storage.googleapis.com/mathematics-dataset/mathematics_dataset-v1.0.tar.gz"
MATH_ARCHIVE_NAME = "mathematics_dataset-v1.0.tar.gz"
#: SHA-256 of the official archive (2,333,082,954 bytes), as published by TensorFlow
#: Datasets (``tensorflow_datasets/url_checksums/math_dataset.txt``) and HuggingFace
#: ``datasets`` (``datasets/math_dataset/urls_checksums/checksums.txt``).
MATH_ARCHIVE_SHA256 = "def638343403cb9ed60437d6b684c859dd23b72779f5cc5661b0a31e67c58576"
_ARCHIVE_TOP = "mathematics_dataset-v1.0"

TRAIN_DIFFICULTIES = ("train-easy", "train-medium", "train-hard")
REGIMES = TRAIN_DIFFICULTIES + ("interpolate", "extrapolate")
#: Suffixes that name an extrapolation module after its training module.
EXTRAPOLATE_SUFFIXES = ("big", "more", "longer", "more_samples")


#: Where the dataset may be and where to download it (see :func:`find_mathematics_dir`).
MATH_SOURCE = DataSource(
    name="math",
    label="Mathematics Dataset",
    env_var=MATH_DIR_ENV,
    layouts=("", _ARCHIVE_TOP),
    markers=tuple(f"{regime}/*.txt" for regime in REGIMES),
    looking_for="train-easy/ ... extrapolate/ folders of *.txt",
    instructions=(
        f"Pass --data_dir=/path/to/{_ARCHIVE_TOP} (or set {{env_var}}=...), or fetch "
        "{url} by hand and extract it into {cache} (giving {extracted})."
    ),
    urls=(MATH_URL,),
    archive_name=MATH_ARCHIVE_NAME,
    sha256=MATH_ARCHIVE_SHA256,
    archive_top=_ARCHIVE_TOP,
    timeout=120.0,
)


def list_modules(math_dir: str | os.PathLike) -> dict[str, list[str]]:
    """Module names per regime folder (``train-easy`` ... ``extrapolate``), sorted;
    missing folders give empty lists."""
    out = {}
    for regime in REGIMES:
        folder = Path(math_dir) / regime
        out[regime] = sorted(p.stem for p in folder.glob("*.txt")) if folder.is_dir() else []
    return out


def _extrapolates(train_module: str, candidates: Iterable[str]) -> list[str]:
    names = {train_module} | {f"{train_module}_{s}" for s in EXTRAPOLATE_SUFFIXES}
    return [c for c in candidates if c in names]


def select_modules(
    patterns: str | Iterable[str], available: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Resolves module filters against :func:`list_modules` output.

    Args:
        patterns: Names or shell globs (one string may hold several, comma-separated);
            ``"all"`` / ``"*"`` selects everything.
        available: regime -> module names.

    Returns:
        ``{"train": [...], "interpolate": [...], "extrapolate": [...]}``: training
        modules present in any train difficulty; interpolate and extrapolate modules
        that match a pattern or belong to a selected training module.

    Raises:
        ValueError: A pattern matches no module (the message lists the modules).
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    patterns = [p.strip() for p in patterns if p.strip()]
    patterns = ["*" if p == "all" else p for p in patterns]
    if not patterns:
        raise ValueError("no module selected")
    train_all = sorted({m for r in TRAIN_DIFFICULTIES for m in available.get(r, [])})
    pools = {
        "train": train_all,
        "interpolate": list(available.get("interpolate", [])),
        "extrapolate": list(available.get("extrapolate", [])),
    }
    everything = sorted(set().union(*pools.values()))
    for p in patterns:
        if not fnmatch.filter(everything, p):
            raise ValueError(
                f"module filter {p!r} matches no module; available: {', '.join(everything)}"
            )

    def matching(names):
        return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]

    train = matching(pools["train"])
    interpolate = set(matching(pools["interpolate"])) | (set(train) & set(pools["interpolate"]))
    interpolate = sorted(interpolate)
    extrapolate = set(matching(pools["extrapolate"]))
    for m in train:
        extrapolate.update(_extrapolates(m, pools["extrapolate"]))
    return {"train": train, "interpolate": interpolate, "extrapolate": sorted(extrapolate)}


def find_mathematics_dir(data_dir: str | os.PathLike | None = None, download: bool = True) -> str:
    """Returns the dataset folder (holding ``train-easy/`` ... ``extrapolate/``).

    A folder is accepted if it holds at least one regime folder with ``*.txt`` files,
    directly or under ``mathematics_dataset-v1.0/``. Search order:

    1. ``data_dir`` if given (nothing found there is an error, no fallback);
    2. ``$TPR_KERAS_MATH_DIR`` if set (likewise);
    3. the Keras cache ``$KERAS_HOME/datasets`` (default ``~/.keras/datasets``);
    4. if ``download``: fetch the official ``mathematics_dataset-v1.0.tar.gz``
       (2.3 GB) into the Keras cache, verify its SHA-256, extract it safely.

    Raises:
        FileNotFoundError: Nothing found (and ``download`` is False), or ``data_dir``
            / the environment variable points at a folder without the dataset.
        DownloadError: The download failed (the message says what to pass instead).
        ChecksumError: The archive did not match the published checksum.
    """
    return find_data_dir(MATH_SOURCE, data_dir, download)
