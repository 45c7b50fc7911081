"""tpr_keras.data.sources: one dataset description, one search order, one download-and-extract.

Archives are built in the test and served from file:// URLs (urllib reads them like any
URL), so the real fetch, checksum and extraction code runs without a network.
"""

import hashlib
import os
import tarfile

import pytest

from tests.file_trees import write_files
from tpr_keras.data import babi, entailment, mathematics
from tpr_keras.data.download import ChecksumError, DownloadError
from tpr_keras.data.sources import DataSource, download_and_extract, find_data_dir

TOP = "toy-v1"


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    home = tmp_path / "keras_home"
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.delenv("TOY_DIR", raising=False)
    return home


def make_archive(path, files):
    """A .tar.gz at ``path`` holding ``files`` ({member name: text}); returns its sha256."""
    staging = path.parent / (path.name + ".staging")
    write_files(staging, files)
    with tarfile.open(path, "w:gz") as tar:
        for top in sorted({name.split("/")[0] for name in files}):
            tar.add(staging / top, arcname=top)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def toy_source(archive=None, sha256=None, **overrides):
    fields = dict(
        name="toy",
        label="toy data",
        env_var="TOY_DIR",
        layouts=("", "data", f"{TOP}/data"),
        markers=("*_train.txt",),
        looking_for="*_train.txt files",
        instructions="Pass --data_dir or set {env_var}; or fetch {url} into {cache} "
                     "(giving {extracted}).",
    )
    if archive is not None:
        fields.update(urls=(archive.as_uri(),), archive_name="toy.tar.gz", sha256=sha256,
                      archive_top=TOP)
    fields.update(overrides)
    return DataSource(**fields)


def test_download_and_extract_verifies_and_extracts(tmp_path, keras_home):
    archive = tmp_path / "served" / "toy.tar.gz"
    archive.parent.mkdir()
    sha = make_archive(archive, {f"{TOP}/data/a_train.txt": "x\n", f"{TOP}/README": "r\n"})
    source = toy_source(archive, sha)

    found = download_and_extract(source)

    cache = keras_home / "datasets"
    assert found == cache / TOP / "data"
    assert (found / "a_train.txt").read_text() == "x\n"
    assert (cache / "toy.tar.gz").read_bytes() == archive.read_bytes()  # kept, verified
    assert sorted(os.listdir(cache)) == sorted(["toy.tar.gz", TOP])  # no temporary folder left


def test_checksum_mismatch_extracts_nothing_and_says_what_to_do(tmp_path, keras_home):
    archive = tmp_path / "toy.tar.gz"
    make_archive(archive, {f"{TOP}/data/a_train.txt": "x\n"})
    source = toy_source(archive, "0" * 64)

    with pytest.raises(ChecksumError) as info:
        download_and_extract(source)

    message = str(info.value)
    assert "mismatch" in message and "TOY_DIR" in message and archive.as_uri() in message
    cache = keras_home / "datasets"
    assert not cache.exists() or os.listdir(cache) == []  # the bad download is deleted


def test_unreachable_url_is_a_download_error_naming_the_alternatives(tmp_path, keras_home):
    source = toy_source(tmp_path / "missing.tar.gz", "0" * 64)
    with pytest.raises(DownloadError, match=r"toy data not found and the download failed"):
        download_and_extract(source)


def test_archive_without_the_expected_layout_is_refused(tmp_path, keras_home):
    archive = tmp_path / "toy.tar.gz"
    sha = make_archive(archive, {"other-top/data/a_train.txt": "x\n"})
    with pytest.raises(FileNotFoundError, match=r"holds no \*_train\.txt files under toy-v1/"):
        download_and_extract(toy_source(archive, sha))
    cache = keras_home / "datasets"
    assert not (cache / TOP).exists()
    assert [n for n in os.listdir(cache) if n.startswith(".toy-extract-")] == []


def test_an_unusable_earlier_extraction_is_replaced(tmp_path, keras_home):
    archive = tmp_path / "toy.tar.gz"
    sha = make_archive(archive, {f"{TOP}/data/a_train.txt": "x\n"})
    stale = keras_home / "datasets" / TOP / "data"
    stale.mkdir(parents=True)
    (stale / "partial.tmp").write_text("")

    found = download_and_extract(toy_source(archive, sha))

    assert sorted(os.listdir(found)) == ["a_train.txt"]


def test_a_verified_copy_under_another_name_is_used_without_downloading(tmp_path, keras_home):
    cache = keras_home / "datasets"
    cache.mkdir(parents=True)
    sha = make_archive(cache / "other-name.tar.gz", {f"{TOP}/data/a_train.txt": "x\n"})
    source = toy_source(tmp_path / "nowhere.tar.gz", sha, alt_archive_names=("other-name.tar.gz",))

    assert download_and_extract(source) == cache / TOP / "data"
    assert not (cache / "toy.tar.gz").exists()


def test_find_data_dir_precedence(tmp_path, keras_home, monkeypatch):
    archive = tmp_path / "toy.tar.gz"
    sha = make_archive(archive, {f"{TOP}/data/a_train.txt": "x\n"})
    source = toy_source(archive, sha)
    explicit, env = tmp_path / "explicit" / "data", tmp_path / "env"
    for folder in (explicit, env):
        folder.mkdir(parents=True)
        (folder / "b_train.txt").write_text("y\n")
    monkeypatch.setenv("TOY_DIR", str(env))

    assert find_data_dir(source, explicit.parent) == str(explicit.resolve())  # layout "data"
    assert find_data_dir(source) == str(env.resolve())
    monkeypatch.delenv("TOY_DIR")
    with pytest.raises(FileNotFoundError, match=r"toy data not found .* and download=False\. "
                                                r"Pass --data_dir or set TOY_DIR"):
        find_data_dir(source, download=False)
    downloaded = find_data_dir(source)  # step 4
    assert downloaded == str((keras_home / "datasets" / TOP / "data").resolve())
    archive.unlink()  # step 3 from now on: the cache is used, nothing is fetched
    assert find_data_dir(source) == downloaded


def test_a_given_folder_without_the_data_is_an_error_not_a_fallback(tmp_path, keras_home,
                                                                    monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    source = toy_source()
    with pytest.raises(FileNotFoundError) as info:
        find_data_dir(source, empty)
    assert str(info.value) == (f"no toy data in data_dir={empty}: looked for *_train.txt files "
                               f"in {empty}, {empty / 'data'} or {empty / TOP / 'data'}")
    monkeypatch.setenv("TOY_DIR", str(empty))
    with pytest.raises(FileNotFoundError, match=r"no toy data in TOY_DIR="):
        find_data_dir(source)


def test_a_source_without_urls_is_never_downloaded(tmp_path, keras_home):
    source = DataSource(name="plain", label="Plain data", env_var="TOY_DIR",
                        instructions="Put the files in {cache}.", cache_subdir="datasets/plain")
    with pytest.raises(FileNotFoundError) as info:
        find_data_dir(source, download=True)
    cache = keras_home / "datasets" / "plain"
    assert str(info.value) == f"Plain data not found. Put the files in {cache}."
    with pytest.raises(FileNotFoundError, match=r"^data_dir='/no/such' is not a directory$"):
        find_data_dir(source, "/no/such")
    cache.mkdir(parents=True)  # no markers: any folder
    assert find_data_dir(source) == str(cache.resolve())
    with pytest.raises(ValueError, match="no URL"):
        download_and_extract(source)


def test_unverified_or_incomplete_downloadable_sources_are_refused():
    with pytest.raises(ValueError, match="unverified downloads are refused"):
        DataSource(name="x", label="x", env_var="X", urls=("https://example.org/x.tgz",),
                   archive_name="x.tgz", archive_top="x")
    with pytest.raises(ValueError, match="layouts"):
        DataSource(name="x", label="x", env_var="X", layouts=())


def test_the_datasets_are_described_once():
    assert babi.BABI_SOURCE.env_var == babi.BABI_DIR_ENV
    assert babi.BABI_SOURCE.urls == babi.BABI_URLS
    assert babi.BABI_SOURCE.sha256 == babi.BABI_ARCHIVE_SHA256
    assert mathematics.MATH_SOURCE.env_var == mathematics.MATH_DIR_ENV
    assert mathematics.MATH_SOURCE.urls == (mathematics.MATH_URL,)
    assert mathematics.MATH_SOURCE.sha256 == mathematics.MATH_ARCHIVE_SHA256
    assert entailment.ENTAILMENT_SOURCE.env_var == entailment.ENV_VAR
    assert not entailment.ENTAILMENT_SOURCE.downloadable
