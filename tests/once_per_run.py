"""A folder made once per test run and shared by every test process of the run.

Under pytest-xdist each worker is a process of its own: the folder lies in the run's shared
base temp folder (the parent of the worker's) and a lock file makes the other workers wait
for the first one instead of making it again; a process that died making it leaves no
``<key>.json``, so the next one makes it afresh. Without xdist, the run's base temp folder.
The folders are read-only to the tests: a test that changes one copies it first
(``shutil.copytree``). Used for the shipped presets' exports (tests/serving/shared_exports.py)
and the tiny training runs of tests/train/conftest.py.
"""

import fcntl
import json
import os
import shutil


def run_folder(tmp_path_factory):
    """The temporary folder every process of this test run shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory, key, make):
    """``<run folder>/shared/<key>``, filled by ``make(folder)`` once per test run; returns
    its path and what ``make`` returned (JSON, kept next to the folder)."""
    root = run_folder(tmp_path_factory) / "shared"
    root.mkdir(exist_ok=True)
    folder, done = root / key, root / f"{key}.json"
    with open(root / f"{key}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a process that died making it
            folder.mkdir()
            made = make(folder)
            done.write_text(json.dumps(made), encoding="utf-8")
    return folder, json.loads(done.read_text(encoding="utf-8"))
