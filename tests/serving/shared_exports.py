"""Exports made once per test run and shared by the test files that serve them
(:func:`tests.once_per_run.once_per_run`: the first test process that asks makes it, the
others wait and read it; a test that changes a base path copies it first).

Used by ``tests/serving``, ``tests/presets`` and ``tests/models`` (the shipped presets'
exports).
"""

import os
import pathlib

from tests.once_per_run import once_per_run


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
