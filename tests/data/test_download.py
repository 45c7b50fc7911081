"""Tests for tpr_keras.data.download: checksums, fetching and safe extraction.

verify_checksum's algorithms, fetch_archive over file:// URLs (cache, a mismatch deleting
the file, a corrupted cache replaced) and safe_extract refusing members that would land
outside the destination. Files and archives are written under ``tmp_path``.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from tpr_keras.data.download import (
    ChecksumError,
    DownloadError,
    fetch_archive,
    safe_extract,
    verify_checksum,
)

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")


def test_verify_checksum(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"tpr-keras")
    sha = hashlib.sha256(b"tpr-keras").hexdigest()
    md5 = hashlib.md5(b"tpr-keras").hexdigest()
    assert verify_checksum(path, sha) == sha
    assert verify_checksum(path, sha.upper(), "sha256") == sha
    assert verify_checksum(path, md5, "md5") == md5
    assert verify_checksum(path, ["0" * 64, sha]) == sha
    with pytest.raises(ChecksumError, match="mismatch"):
        verify_checksum(path, "0" * 64)
    with pytest.raises(ChecksumError):
        verify_checksum(path, sha, "md5")


def test_fetch_archive_file_urls(tmp_path):
    payload = tmp_path / "src.bin"
    payload.write_bytes(b"archive bytes")
    sha = hashlib.sha256(b"archive bytes").hexdigest()
    cache = tmp_path / "cache"
    missing = (tmp_path / "missing.bin").as_uri()
    path = fetch_archive([missing, payload.as_uri()], "a.bin", sha256=sha, cache_root=cache)
    assert Path(path) == cache / "datasets" / "a.bin"
    assert Path(path).read_bytes() == b"archive bytes"
    # Cached and valid: no network access needed.
    offline_url = "http://invalid.invalid/a.bin"
    assert fetch_archive(offline_url, "a.bin", sha256=sha, cache_root=cache) == path
    # Checksum mismatch deletes the bad file and raises.
    with pytest.raises(ChecksumError):
        fetch_archive(payload.as_uri(), "b.bin", sha256="0" * 64, cache_root=cache)
    assert sorted(p.name for p in (cache / "datasets").iterdir()) == ["a.bin"]
    # A corrupted cached file is replaced.
    Path(path).write_bytes(b"corrupted")
    again = fetch_archive(payload.as_uri(), "a.bin", sha256=sha, cache_root=cache)
    assert Path(again).read_bytes() == b"archive bytes"
    with pytest.raises(DownloadError):
        fetch_archive(missing, "c.bin", md5="0" * 32, cache_root=cache)
    with pytest.raises(ValueError):
        fetch_archive(payload.as_uri(), "d.bin", cache_root=cache)


def _tar_with(path: Path, members: list[tarfile.TarInfo], data: bytes = b"x") -> Path:
    with tarfile.open(path, "w") as tar:
        for m in members:
            if m.isfile():
                m.size = len(data)
                tar.addfile(m, io.BytesIO(data))
            else:
                tar.addfile(m)
    return path


@pytest.mark.parametrize(
    "name, kind, link",
    [
        ("../evil.txt", tarfile.REGTYPE, ""),
        ("ok/../../evil.txt", tarfile.REGTYPE, ""),
        ("/tmp/evil.txt", tarfile.REGTYPE, ""),
        ("ok/link", tarfile.SYMTYPE, "../../outside"),
        ("ok/link", tarfile.SYMTYPE, "/etc/passwd"),
    ],
)
def test_safe_extract_rejects_escaping_members(tmp_path, name, kind, link):
    good = tarfile.TarInfo("ok/good.txt")
    bad = tarfile.TarInfo(name)
    bad.type = kind
    bad.linkname = link
    archive = _tar_with(tmp_path / "bad.tar", [good, bad])
    dest = tmp_path / "dest"
    with pytest.raises(ValueError):
        safe_extract(archive, dest)
    assert not (tmp_path / "evil.txt").exists()
    assert not (dest / "ok" / "good.txt").exists()  # Nothing is written.


def test_safe_extract_normal_archive(tmp_path):
    members = [tarfile.TarInfo("top/a.txt"), tarfile.TarInfo("top/sub/b.txt")]
    archive = _tar_with(tmp_path / "good.tar", members, b"hi")
    names = safe_extract(archive, tmp_path / "out")
    assert set(names) == {"top/a.txt", "top/sub/b.txt"}
    assert (tmp_path / "out" / "top" / "sub" / "b.txt").read_bytes() == b"hi"
