"""Tests for finding the Mathematics Dataset folder: tpr_keras.data.mathematics's
find_mathematics_dir.

Which of the argument, the environment variable and the Keras cache wins, the errors that
say what to pass, and the download into the Keras cache (the archive is built in the test
from the tiny folder of ``tests/data/tiny_math.py``; nothing is fetched from the network).
"""

import tarfile

import pytest

from tests.data.tiny_math import make_math_dir
from tpr_keras.data import mathematics as math_data
from tpr_keras.data import sources
from tpr_keras.data.download import ChecksumError, DownloadError
from tpr_keras.data.mathematics import find_mathematics_dir, load_mathematics


# --------------------------------------------------------------------------------------
# Discovery and download
# --------------------------------------------------------------------------------------


@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    monkeypatch.delenv(math_data.MATH_DIR_ENV, raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    return tmp_path


def test_find_precedence_and_errors(isolated_env, monkeypatch):
    explicit = make_math_dir(isolated_env / "explicit" / "mathematics_dataset-v1.0")
    env_dir = make_math_dir(isolated_env / "env")
    cached = make_math_dir(isolated_env / "keras_home" / "datasets" / "mathematics_dataset-v1.0")
    monkeypatch.setenv(math_data.MATH_DIR_ENV, str(env_dir))
    assert find_mathematics_dir(explicit.parent, download=False) == str(explicit.resolve())
    assert find_mathematics_dir(download=False) == str(env_dir.resolve())
    monkeypatch.delenv(math_data.MATH_DIR_ENV)
    assert find_mathematics_dir(download=False) == str(cached.resolve())
    empty = isolated_env / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="train-easy"):
        find_mathematics_dir(empty)
    monkeypatch.setenv(math_data.MATH_DIR_ENV, str(empty))
    with pytest.raises(FileNotFoundError, match=math_data.MATH_DIR_ENV):
        find_mathematics_dir()


def test_offline_download_error_says_what_to_pass(isolated_env, offline_fetch, monkeypatch):
    with pytest.raises(DownloadError) as info:
        find_mathematics_dir()
    assert "--data_dir=" in str(info.value) and math_data.MATH_URL in str(info.value)
    assert offline_fetch[0][1]["sha256"] == math_data.MATH_ARCHIVE_SHA256
    assert list(offline_fetch[0][0][0]) == [math_data.MATH_URL]
    with pytest.raises(FileNotFoundError, match="download=False"):
        find_mathematics_dir(download=False)

    def mismatch(*args, **kwargs):
        raise ChecksumError("x: sha256 checksum mismatch")

    monkeypatch.setattr(sources, "fetch_archive", mismatch)
    with pytest.raises(ChecksumError, match="mismatch"):
        find_mathematics_dir()


def test_download_path_extracts_into_keras_cache(isolated_env, monkeypatch):
    src = make_math_dir(isolated_env / "src" / "mathematics_dataset-v1.0")
    archive = isolated_env / "archive.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="mathematics_dataset-v1.0")
    monkeypatch.setattr(sources, "fetch_archive", lambda *a, **k: str(archive))
    found = find_mathematics_dir()
    expected = isolated_env / "keras_home" / "datasets" / "mathematics_dataset-v1.0"
    assert found == str(expected.resolve())
    monkeypatch.setattr(sources, "fetch_archive", lambda *a, **k: pytest.fail("fetched again"))
    assert len(load_mathematics(modules="arithmetic__mul").train) == 2
