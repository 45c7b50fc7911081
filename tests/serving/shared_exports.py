"""Exports made once per test run and shared by the test files that serve them.

A folder is made by the first test process that asks for it and read by the others: under
pytest-xdist each worker is a process of its own, so the folder lies in the run's shared
base temp folder (the parent of the worker's) and a lock file makes the other workers wait
for the first one instead of exporting it again. The folders are read-only to the tests:
a test that changes a base path copies it first (``shutil.copytree``).

Used by ``tests/serving`` and ``tests/presets`` (the shipped presets' exports).
"""

import fcntl
import json
import os
import pathlib
import shutil


def run_folder(tmp_path_factory):
    """The temporary folder every process of this test run shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory, key, make):
    """``<run folder>/shared-exports/<key>``, filled by ``make(folder)`` once per test run;
    returns its path and what ``make`` returned (JSON, kept next to the folder)."""
    root = run_folder(tmp_path_factory) / "shared-exports"
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


def preset_export(tmp_path_factory, name):
    """The shipped preset ``name`` exported as ``python -m train.export --preset`` does
    (``TaskModel.from_preset(name).export``): ``(version folder, served model name)``."""

    def make(folder):
        from tpr_keras.models import TaskModel

        task_model = TaskModel.from_preset(name)
        path = task_model.export(folder)
        return {"served_name": task_model.served_name,
                "path": os.path.relpath(path, folder)}

    folder, made = once_per_run(tmp_path_factory, f"preset-{name}", make)
    return pathlib.Path(folder, made["path"]), made["served_name"]
