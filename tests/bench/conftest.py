"""The bench scripts are files, not a package: load one as a module to test its functions."""

import importlib.util
import os

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "bench")


@pytest.fixture(scope="module")
def bench_script():
    """``bench_script(name)``: ``bench/<name>.py`` loaded as a module."""
    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
