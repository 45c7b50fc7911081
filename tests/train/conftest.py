"""Fixtures shared by the entry-point tests."""

import pytest


@pytest.fixture(scope="module")
def tiny_babi(tmp_path_factory, babi_task1_writer):
    """A bAbI folder with a 100-story task-1 training file and a 20-story test file."""
    root = tmp_path_factory.mktemp("babi") / "en-10k"
    root.mkdir()
    babi_task1_writer(root / "qa1_single-supporting-fact_train.txt", 100, 0)
    babi_task1_writer(root / "qa1_single-supporting-fact_test.txt", 20, 1)
    return root.parent
