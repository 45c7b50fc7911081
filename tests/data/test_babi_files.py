"""Tests for finding the bAbI folder: tpr_keras.data.babi's find_babi_dir.

The folder layouts it accepts, which of the argument, the environment variable and the
Keras cache wins, the errors that say what to pass, and the download into the Keras cache
(the archive is built in the test; nothing is fetched from the network).
"""

from __future__ import annotations

import tarfile

import pytest

from tests.data.tiny_babi import make_babi_dir
from tpr_keras.data import babi, sources
from tpr_keras.data.babi import find_babi_dir, load_babi
from tpr_keras.data.download import ChecksumError, DownloadError

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")


# --------------------------------------------------------------------------------------
# Data discovery and download
# --------------------------------------------------------------------------------------


@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    """No env var, and a fresh empty Keras cache under tmp_path."""
    monkeypatch.delenv(babi.BABI_DIR_ENV, raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    return tmp_path


@pytest.mark.parametrize("layout", ["", "en-10k", "tasks_1-20_v1-2/en-10k"])
def test_find_babi_dir_layouts(isolated_env, layout):
    root = isolated_env / "data"
    target = make_babi_dir(root / layout if layout else root, {1: [[1]]})
    assert find_babi_dir(root, download=False) == str(target.resolve())


def test_find_babi_dir_precedence(isolated_env, monkeypatch):
    explicit = make_babi_dir(isolated_env / "explicit" / "en-10k", {1: [[1]]})
    env_dir = make_babi_dir(isolated_env / "env", {1: [[1]]})
    cache = isolated_env / "keras_home" / "datasets"
    cached = make_babi_dir(cache / "tasks_1-20_v1-2" / "en-10k", {1: [[1]]})
    monkeypatch.setenv(babi.BABI_DIR_ENV, str(env_dir))
    assert find_babi_dir(explicit.parent, download=False) == str(explicit.resolve())
    assert find_babi_dir(download=False) == str(env_dir.resolve())
    monkeypatch.delenv(babi.BABI_DIR_ENV)
    assert find_babi_dir(download=False) == str(cached.resolve())


def test_find_babi_dir_errors(isolated_env, monkeypatch):
    empty = isolated_env / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"qa\*_train\.txt"):
        find_babi_dir(empty)
    monkeypatch.setenv(babi.BABI_DIR_ENV, str(empty))
    with pytest.raises(FileNotFoundError, match=babi.BABI_DIR_ENV):
        find_babi_dir()
    monkeypatch.delenv(babi.BABI_DIR_ENV)
    with pytest.raises(FileNotFoundError, match="download=False"):
        find_babi_dir(download=False)


def test_offline_download_error_says_what_to_pass(isolated_env, offline_fetch, monkeypatch):
    with pytest.raises(DownloadError) as info:
        find_babi_dir()
    message = str(info.value)
    assert "--data_dir=/path/containing/en-10k" in message
    assert f"{babi.BABI_DIR_ENV}=/path/containing/en-10k" in message
    assert babi.BABI_URLS[0] in message
    assert offline_fetch and offline_fetch[0][1]["sha256"] == babi.BABI_ARCHIVE_SHA256

    def mismatch(*args, **kwargs):
        raise ChecksumError("x: sha256 checksum mismatch")

    monkeypatch.setattr(sources, "fetch_archive", mismatch)
    with pytest.raises(ChecksumError, match="mismatch"):
        find_babi_dir()


def test_download_path_extracts_into_keras_cache(isolated_env, monkeypatch):
    src = make_babi_dir(isolated_env / "src" / "tasks_1-20_v1-2" / "en-10k", {1: [[1, 2]]})
    archive = isolated_env / "archive.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src.parent, arcname="tasks_1-20_v1-2")
    monkeypatch.setattr(sources, "fetch_archive", lambda *a, **k: str(archive))
    found = find_babi_dir()
    expected = isolated_env / "keras_home" / "datasets" / "tasks_1-20_v1-2" / "en-10k"
    assert found == str(expected.resolve())
    assert len(load_babi(tasks=1).train) >= 1
    # Second call finds the cache without fetching.
    monkeypatch.setattr(sources, "fetch_archive", lambda *a, **k: pytest.fail("fetched again"))
    assert find_babi_dir() == found
