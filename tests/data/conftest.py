"""Fixtures shared by the data loaders' tests."""

import pytest

from tpr_keras.data import sources
from tpr_keras.data.download import DownloadError


@pytest.fixture
def offline_fetch(monkeypatch):
    """``sources.fetch_archive`` failing as it does without a network; returns the list of
    its calls, ``(args, kwargs)`` each, for the test to check what was asked for."""
    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise DownloadError("could not download the archive: <urlopen error offline>")

    monkeypatch.setattr(sources, "fetch_archive", offline)
    return calls
