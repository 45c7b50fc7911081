"""Find-or-download helper for dataset archives, with checksum verification.

Standard library only (``urllib``, ``hashlib``, ``tarfile``), so that it works and
can be tested without network access or TensorFlow.

Typical use::

    path = fetch_archive(
        ["https://primary/x.tar.gz", "https://mirror/x.tar.gz"],
        "x.tar.gz",
        sha256="<published digest>",
        cache_subdir="datasets",
    )
    safe_extract(path, cache_dir())

Files are written to ``<name>.part`` first and only renamed to their final name
after the checksum has been verified, so an interrupted or corrupted download never
leaves a file that looks valid.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "ChecksumError",
    "DownloadError",
    "cache_dir",
    "fetch_archive",
    "file_digest",
    "safe_extract",
    "verify_checksum",
]

_CHUNK = 1 << 20
_USER_AGENT = "tpr-keras-data-fetcher/1.0 (python-urllib)"


class DownloadError(OSError):
    """Raised when no URL could deliver a file (network error, HTTP error, ...)."""


class ChecksumError(ValueError):
    """Raised when a file's digest does not match any expected digest."""


def cache_dir(cache_subdir: str = "datasets") -> Path:
    """Returns the Keras cache folder for downloaded data (not created here).

    Mirrors ``keras.utils.get_file``: ``$KERAS_HOME`` if set, else ``~/.keras``;
    if that folder exists but is not writable, ``/tmp/.keras`` is used instead.

    Args:
        cache_subdir: Sub-folder of the cache root (``"datasets"`` in Keras).

    Returns:
        The path ``<cache root>/<cache_subdir>``.
    """
    base = Path(os.path.expanduser(os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")))
    if base.exists() and not os.access(base, os.W_OK):
        base = Path(tempfile.gettempdir()) / ".keras"
    return base / cache_subdir


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Computes the hex digest of a file, reading it in chunks.

    Args:
        path: File to hash.
        algorithm: Any name accepted by :func:`hashlib.new` (``"sha256"``, ``"md5"``).

    Returns:
        The lower-case hexadecimal digest.
    """
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _as_digest_set(expected: str | Iterable[str]) -> set[str]:
    values = [expected] if isinstance(expected, str) else list(expected)
    digests = {v.strip().lower() for v in values if v and v.strip()}
    if not digests:
        raise ValueError("no expected checksum given")
    return digests


def verify_checksum(
    path: str | os.PathLike, expected: str | Iterable[str], algorithm: str = "sha256"
) -> str:
    """Checks that a file's digest is one of the expected digests.

    Args:
        path: File to check.
        expected: Expected hex digest, or several accepted digests (e.g. the same
            archive as served by different mirrors). Case-insensitive.
        algorithm: Hash algorithm name (``"sha256"`` or ``"md5"``, ...).

    Returns:
        The file's digest (which matched).

    Raises:
        ChecksumError: The digest matches none of ``expected``.
        FileNotFoundError: ``path`` does not exist.
    """
    accepted = _as_digest_set(expected)
    actual = file_digest(path, algorithm)
    if actual not in accepted:
        raise ChecksumError(
            f"{path}: {algorithm} checksum mismatch: got {actual}, "
            f"expected {' or '.join(sorted(accepted))}"
        )
    return actual


def _download(url: str, dest: Path, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out, _CHUNK)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def fetch_archive(
    url_or_urls: str | Sequence[str],
    fname: str,
    *,
    sha256: str | Iterable[str] | None = None,
    md5: str | Iterable[str] | None = None,
    cache_subdir: str = "datasets",
    cache_root: str | os.PathLike | None = None,
    timeout: float = 60.0,
) -> str:
    """Returns the path of a verified archive, downloading it if needed.

    If ``<cache>/<fname>`` exists and its checksum matches, it is returned without
    any network access. An existing file with a wrong checksum is deleted and
    downloaded again. The URLs are tried in order, HTTPS ones first (the
    checksum is verified either way); each download goes to
    ``<fname>.part`` and is renamed only after verification. A download whose
    checksum does not match is deleted and the next URL is tried.

    Args:
        url_or_urls: One URL or several (primary first, then mirrors).
        fname: File name inside the cache folder.
        sha256: Expected SHA-256 hex digest(s). Preferred.
        md5: Expected MD5 hex digest(s); used only if ``sha256`` is None.
        cache_subdir: Sub-folder of the cache root (see :func:`cache_dir`).
        cache_root: Use ``<cache_root>/<cache_subdir>`` instead of the Keras cache.
        timeout: Socket timeout per connection attempt, in seconds.

    Returns:
        The path of the verified file, as a string.

    Raises:
        ValueError: Neither ``sha256`` nor ``md5`` is given (unverified downloads
            are refused), or no URL is given.
        ChecksumError: At least one URL delivered a file, but none matched.
        DownloadError: No URL could be fetched (e.g. offline).
    """
    expected, algorithm = _expected_digest(sha256, md5)
    urls = [url_or_urls] if isinstance(url_or_urls, str) else list(url_or_urls)
    if not urls:
        raise ValueError("fetch_archive needs at least one URL")
    urls.sort(key=lambda url: not url.lower().startswith("https://"))  # stable: HTTPS first

    folder = Path(cache_root) / cache_subdir if cache_root is not None else cache_dir(cache_subdir)
    target = folder / fname
    if target.exists():
        try:
            verify_checksum(target, expected, algorithm)
            return str(target)
        except ChecksumError:
            _remove(target)  # Corrupted or foreign file: fetch it again.

    folder.mkdir(parents=True, exist_ok=True)
    return _download_verified(urls, folder / (fname + ".part"), target, expected,
                              algorithm, timeout)


def _expected_digest(sha256, md5):
    """``(digests, algorithm)``: ``sha256`` when given, else ``md5``; ValueError when
    neither names a digest (unverified downloads are refused)."""
    if sha256 is not None:
        expected, algorithm = sha256, "sha256"
    elif md5 is not None:
        expected, algorithm = md5, "md5"
    else:
        raise ValueError("fetch_archive needs an expected sha256 or md5 checksum")
    _as_digest_set(expected)  # Validates that at least one digest is given.
    return expected, algorithm


def _download_verified(urls, partial, target, expected, algorithm, timeout):
    """Downloads the first of ``urls`` whose file matches ``expected`` to ``partial``,
    renames it to ``target`` and returns that path (:func:`fetch_archive`)."""
    fname = target.name
    failures: list[str] = []
    mismatch = False
    for url in urls:
        try:
            _download(url, partial, timeout)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            _remove(partial)
            failures.append(f"{url}: {exc}")
            continue
        try:
            verify_checksum(partial, expected, algorithm)
        except ChecksumError as exc:
            _remove(partial)
            mismatch = True
            failures.append(f"{url}: {exc}")
            continue
        os.replace(partial, target)
        return str(target)

    detail = "; ".join(failures)
    if mismatch:
        raise ChecksumError(f"could not obtain a verified copy of {fname}: {detail}")
    raise DownloadError(f"could not download {fname}: {detail}")


def _is_within(base: Path, candidate: Path) -> bool:
    try:
        candidate.relative_to(base)
        return True
    except ValueError:
        return False


def safe_extract(tar_path: str | os.PathLike, dest: str | os.PathLike) -> list[str]:
    """Extracts a tar archive, refusing members that would escape ``dest``.

    All members are checked before anything is written. Rejected: absolute paths,
    paths with ``..`` components or resolving outside ``dest``, links whose target
    resolves outside ``dest``, and device files / FIFOs.

    Args:
        tar_path: The archive (any compression ``tarfile`` can read).
        dest: Destination folder (created if missing).

    Returns:
        The member names that were extracted.

    Raises:
        ValueError: The archive holds an unsafe member (nothing is extracted).
        tarfile.TarError: The archive is unreadable.
    """
    dest_path = Path(dest)
    dest_path.mkdir(parents=True, exist_ok=True)
    base = dest_path.resolve()
    with tarfile.open(tar_path) as tar:
        members = tar.getmembers()
        for m in members:
            name = m.name
            if name.startswith(("/", "\\")) or os.path.isabs(name) or ".." in Path(name).parts:
                raise ValueError(f"{tar_path}: unsafe member path {name!r}")
            target = (base / name).resolve()
            if not _is_within(base, target):
                raise ValueError(f"{tar_path}: member {name!r} would be written outside {dest}")
            if m.issym() or m.islnk():
                link = m.linkname
                if os.path.isabs(link):
                    raise ValueError(f"{tar_path}: member {name!r} links to absolute path {link!r}")
                link_base = target.parent if m.issym() else base
                if not _is_within(base, (link_base / link).resolve()):
                    raise ValueError(f"{tar_path}: member {name!r} links outside {dest}: {link!r}")
            elif not (m.isfile() or m.isdir()):
                raise ValueError(f"{tar_path}: member {name!r} is not a regular file or folder")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: defence in depth.
            tar.extractall(base, members=members, filter="data")
        else:  # pragma: no cover - older Pythons.
            tar.extractall(base, members=members)
    return [m.name for m in members]
