"""The scripts of this folder's package (``tools/`` for tests/tools, ``experiments/`` for
tests/experiments): load one as a module, fresh, to test its functions."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, os.path.basename(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def load_script():
    """``load_script(name)``: ``<package>/<name>.py`` loaded as a module."""
    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(PACKAGE, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
