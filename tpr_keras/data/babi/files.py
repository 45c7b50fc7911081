"""Where the bAbI files are: the official archive, its checksums, the task files."""

from __future__ import annotations

import os
from pathlib import Path

from tpr_keras.data.sources import DataSource, find_data_dir

#: Environment variable naming a folder with the bAbI files (same rules as data_dir).
BABI_DIR_ENV = "TPR_KERAS_BABI_DIR"

#: The Keras examples' HTTPS mirror first, then the official archive over HTTPS and, last,
#: over plain HTTP (every copy is checked against :data:`BABI_ARCHIVE_SHA256`).
BABI_URLS = (
    "https://s3.amazonaws.com/text-datasets/babi_tasks_1-20_v1-2.tar.gz",
    "https://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz",
    "http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz",
)
BABI_ARCHIVE_NAME = "tasks_1-20_v1-2.tar.gz"
#: Names under which other tools (the Keras bAbI examples) cache the same archive.
_BABI_ALT_ARCHIVE_NAMES = ("babi-tasks-v1-2.tar.gz", "babi_tasks_1-20_v1-2.tar.gz")
_BABI_ARCHIVE_TOP = "tasks_1-20_v1-2"

#: Accepted SHA-256 digests of the archive. The two URLs serve different tarballs of
#: v1.2 (the mirror is an older, smaller packing), so each has its own digest.
#: * 0364ebde...: ``http://www.thespermwhale.com/.../tasks_1-20_v1-2.tar.gz``,
#:   15,719,851 bytes. Published by HuggingFace ``datasets`` in
#:   ``datasets/babi_qa/dataset_infos.json`` ("download_checksums" of every config).
#: * 84f5296a...: ``https://s3.amazonaws.com/text-datasets/babi_tasks_1-20_v1-2.tar.gz``.
#:   Only found in a third-party project's dataset manifest (not a dataset registry);
#:   if it is wrong the mirror download fails closed with a ChecksumError.
BABI_ARCHIVE_SHA256 = (
    "0364ebde659f14d11bc21744516c5ec49d3d06cb692733f66680771244998898",
    "84f5296ab9a1ad0dc9464e08c491d65cd08830fca3acae9ab86f75e0fb81573c",
)

#: Where bAbI may be and where to download it (see :func:`find_babi_dir`).
BABI_SOURCE = DataSource(
    name="babi",
    label="bAbI data",
    env_var=BABI_DIR_ENV,
    layouts=("", "en-10k", f"{_BABI_ARCHIVE_TOP}/en-10k"),
    markers=("qa*_train.txt",),
    looking_for="qa*_train.txt files",
    instructions=(
        "Pass --data_dir=/path/containing/en-10k (or set "
        "{env_var}=/path/containing/en-10k), or fetch {url} by hand "
        "and extract it into {cache} (giving {extracted})."
    ),
    urls=BABI_URLS,
    archive_name=BABI_ARCHIVE_NAME,
    sha256=BABI_ARCHIVE_SHA256,
    archive_top=_BABI_ARCHIVE_TOP,
    alt_archive_names=_BABI_ALT_ARCHIVE_NAMES,
)

BABI_TASK_NAMES: dict[int, str] = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    4: "two-arg-relations",
    5: "three-arg-relations",
    6: "yes-no-questions",
    7: "counting",
    8: "lists-sets",
    9: "simple-negation",
    10: "indefinite-knowledge",
    11: "basic-coreference",
    12: "conjunction",
    13: "compound-coreference",
    14: "time-reasoning",
    15: "basic-deduction",
    16: "basic-induction",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
    20: "agents-motivations",
}


def find_babi_dir(data_dir: str | os.PathLike | None = None, download: bool = True) -> str:
    """Returns the bAbI v1.2 ``en-10k`` folder (holding ``qaN_<name>_{train,test}.txt``).

    A folder is accepted if it directly holds ``qa*_train.txt`` files, or holds
    ``en-10k/`` with them, or ``tasks_1-20_v1-2/en-10k/``. Search order:

    1. ``data_dir`` if given (nothing found there is an error, no fallback);
    2. ``$TPR_KERAS_BABI_DIR`` if set (likewise an error if it holds nothing);
    3. the Keras cache ``$KERAS_HOME/datasets`` (default ``~/.keras/datasets``);
    4. if ``download``: fetch the official ``tasks_1-20_v1-2.tar.gz`` into the Keras
       cache, verify its SHA-256, extract it safely and use it.

    Args:
        data_dir: Explicit folder (any of the layouts above).
        download: Allow step 4.

    Returns:
        The absolute (resolved) path of the ``en-10k`` folder.

    Raises:
        FileNotFoundError: Nothing found (and ``download`` is False), or ``data_dir`` /
            the environment variable points at a folder without bAbI files.
        DownloadError: The download failed (message says what to pass instead).
        ChecksumError: The downloaded archive did not match the published checksum
            (the bad file is deleted).
    """
    return find_data_dir(BABI_SOURCE, data_dir, download)


def task_file(babi_dir: str | os.PathLike, task: int, kind: str) -> str:
    """The ``qa<task>_*_<kind>.txt`` file (``kind``: ``"train"`` or ``"test"``) of a folder.

    Raises:
        FileNotFoundError: The folder does not hold exactly one such file.
    """
    matches = sorted(Path(babi_dir).glob(f"qa{task}_*_{kind}.txt"))
    if len(matches) != 1:
        raise FileNotFoundError(
            f"expected one qa{task}_*_{kind}.txt in {babi_dir}, found {len(matches)}"
        )
    return str(matches[0])


def task_files(babi_dir: str | os.PathLike, task: int) -> tuple[str, str]:
    """Returns ``(train_path, test_path)`` of task ``task`` in an ``en-10k`` folder.

    Raises:
        FileNotFoundError: The folder does not hold exactly one file of each kind.
    """
    return task_file(babi_dir, task, "train"), task_file(babi_dir, task, "test")
