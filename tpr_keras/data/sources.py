"""Where each dataset comes from and where it may already be: one description per dataset.

A :class:`DataSource` names a dataset's environment variable, the layouts its folder may
have, and (if it can be downloaded) its archive: URLs, checksum and the folder at the
archive's top. :func:`find_data_dir` is the search order every loader shares;
:func:`download_and_extract` fetches a verified archive into the Keras cache and
extracts it safely. bAbI (``tpr_keras.data.babi.BABI_SOURCE``), the Mathematics Dataset
(``tpr_keras.data.mathematics.MATH_SOURCE``) and the logical entailment dataset
(``tpr_keras.data.entailment.ENTAILMENT_SOURCE``, no archive) are described here.

Standard library only, like :mod:`tpr_keras.data.download`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from pathlib import Path

from tpr_keras.data.download import (
    ChecksumError,
    DownloadError,
    cache_dir,
    fetch_archive,
    safe_extract,
    verify_checksum,
)

__all__ = ["DataSource", "download_and_extract", "find_data_dir"]


@dataclasses.dataclass(frozen=True)
class DataSource:
    """One dataset: where to look for it, how to recognise it, where to download it.

    Args:
        name: Short name (``"babi"``), used for temporary extraction folders.
        label: What the data is called in messages (``"bAbI data"``).
        env_var: Environment variable naming a folder with the data.
        layouts: Folders, relative to a given folder, that may hold the data, in the
            order they are tried (``""`` is the folder itself).
        markers: Glob patterns; a folder holds the data if one of them matches. Empty:
            any existing folder is taken (the files are checked when read).
        looking_for: What the markers look for, for messages (``"qa*_train.txt files"``).
        instructions: How to provide the data by hand; ``{cache}`` (the cache folder),
            ``{extracted}`` (where the archive's data lands in it), ``{env_var}`` and
            ``{url}`` (the first URL) are filled in.
        cache_subdir: The cache folder, relative to the Keras cache root.
        urls: Archive URLs, primary first; empty if the data cannot be downloaded.
        archive_name: File name of the archive in the cache.
        sha256: Accepted SHA-256 digest(s) of the archive.
        archive_top: The folder at the top of the archive; it is extracted to
            ``<cache>/<archive_top>``, and one of ``layouts`` must find the data there.
        alt_archive_names: Names under which other tools cache the same archive; a copy
            under one of them that matches ``sha256`` is used instead of downloading.
        timeout: Socket timeout per download attempt, in seconds.
    """

    name: str
    label: str
    env_var: str
    layouts: tuple[str, ...] = ("",)
    markers: tuple[str, ...] = ()
    looking_for: str = ""
    instructions: str = ""
    cache_subdir: str = "datasets"
    urls: tuple[str, ...] = ()
    archive_name: str = ""
    sha256: str | tuple[str, ...] = ()
    archive_top: str = ""
    alt_archive_names: tuple[str, ...] = ()
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.urls and not (self.archive_name and self.sha256 and self.archive_top):
            raise ValueError(f"{self.name}: a downloadable source needs archive_name, sha256 "
                             "(unverified downloads are refused) and archive_top")
        if not self.layouts:
            raise ValueError(f"{self.name}: layouts must name at least one folder")

    @property
    def downloadable(self) -> bool:
        return bool(self.urls)

    def locate(self, folder: str | os.PathLike) -> Path | None:
        """The data's folder in or under ``folder`` (the first layout that holds it), or None."""
        base = Path(folder).expanduser()
        for layout in self.layouts:
            candidate = base / layout if layout else base
            if not self.markers:
                if candidate.is_dir():
                    return candidate
            elif any(any(candidate.glob(pattern)) for pattern in self.markers):
                return candidate
        return None

    def looked_for(self, folder: str | os.PathLike) -> str:
        """What :meth:`locate` looked for under ``folder``, for messages."""
        base = Path(folder).expanduser()
        places = [str(base / layout if layout else base) for layout in self.layouts]
        where = places[0] if len(places) == 1 else ", ".join(places[:-1]) + " or " + places[-1]
        return f"{self.looking_for} in {where}"

    def cache(self) -> Path:
        """The cache folder: ``$KERAS_HOME/<cache_subdir>`` (default ``~/.keras``)."""
        return cache_dir(self.cache_subdir)

    def manual_instructions(self, cache: Path) -> str:
        """How to provide the data by hand (``instructions`` filled in)."""
        extracted = cache / self.layouts[-1] if self.layouts[-1] else cache
        return self.instructions.format(cache=cache, extracted=extracted,
                                        env_var=self.env_var,
                                        url=self.urls[0] if self.urls else "")


def _cached_alternative(source: DataSource, cache: Path) -> str | None:
    """A verified copy of the archive that another tool left in ``cache``, if any."""
    for alt in source.alt_archive_names:
        candidate = cache / alt
        if candidate.is_file():
            try:
                verify_checksum(candidate, source.sha256, "sha256")
                return str(candidate)
            except ChecksumError:
                pass
    return None


def download_and_extract(source: DataSource, cache: Path | None = None) -> Path:
    """Fetches (or reuses a cached, verified) archive and extracts it into ``cache``.

    The archive is verified against ``source.sha256`` before anything is extracted
    (:func:`tpr_keras.data.download.fetch_archive`), extracted with
    :func:`tpr_keras.data.download.safe_extract` into a temporary folder inside
    ``cache``, and its ``archive_top`` folder is moved to ``<cache>/<archive_top>`` only
    once it is complete, replacing an unusable earlier extraction.

    Args:
        source: The dataset; must have ``urls``.
        cache: The folder to extract into (default: ``source.cache()``).

    Returns:
        The data's folder (``source.locate(cache)``).

    Raises:
        ValueError: ``source`` has no URLs.
        DownloadError: No URL could be fetched (the message says what to pass instead).
        ChecksumError: No download matched the checksum (likewise).
        FileNotFoundError: The archive does not hold the data where ``source`` says.
    """
    if not source.downloadable:
        raise ValueError(f"{source.label} cannot be downloaded (no URL)")
    cache = source.cache() if cache is None else Path(cache)
    try:
        archive = _cached_alternative(source, cache) or fetch_archive(
            list(source.urls),
            source.archive_name,
            sha256=source.sha256,
            cache_root=cache.parent,
            cache_subdir=cache.name,
            timeout=source.timeout,
        )
    except ChecksumError as exc:
        raise ChecksumError(f"{exc}\n{source.manual_instructions(cache)}") from exc
    except OSError as exc:  # DownloadError, permission problems, ...
        raise DownloadError(
            f"{source.label} not found and the download failed ({exc}).\n"
            f"{source.manual_instructions(cache)}"
        ) from exc

    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{source.name}-extract-", dir=cache))
    try:
        safe_extract(archive, tmp)
        src = tmp / source.archive_top
        inside = source.locate(tmp)
        if inside is None or not (inside == src or src in inside.parents):
            raise FileNotFoundError(
                f"{archive} holds no {source.looking_for} under {source.archive_top}/")
        dst = cache / source.archive_top
        if dst.exists():  # An incomplete earlier extraction (we only get here if unusable).
            shutil.rmtree(dst)
        os.replace(src, dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    found = source.locate(cache)
    if found is None:  # pragma: no cover - the checks above make this unreachable.
        raise FileNotFoundError(f"{cache}: no {source.looked_for(cache)} after extraction")
    return found


def find_data_dir(
    source: DataSource, data_dir: str | os.PathLike | None = None, download: bool = True
) -> str:
    """The search order every dataset reader shares; returns the resolved folder.

    1. ``data_dir`` if given (nothing found there is an error, no fallback);
    2. the environment variable ``source.env_var`` if set (likewise);
    3. the cache folder ``source.cache()`` (``$KERAS_HOME``, default ``~/.keras``);
    4. if ``download`` and the source has URLs: :func:`download_and_extract`.

    Raises:
        FileNotFoundError: ``data_dir`` / the environment variable names a folder
            without the data, or nothing was found and step 4 is not possible; the
            message says what to pass.
        DownloadError, ChecksumError: from :func:`download_and_extract`.
    """
    for name, folder in (("data_dir", data_dir), (source.env_var, os.environ.get(source.env_var))):
        if folder:
            found = source.locate(folder)
            if found is None:
                if not source.markers:
                    raise FileNotFoundError(f"{name}={folder!r} is not a directory")
                raise FileNotFoundError(f"no {source.label} in {name}={folder}: "
                                        f"looked for {source.looked_for(folder)}")
            return str(found.resolve())
    cache = source.cache()
    found = source.locate(cache)
    if found is not None:
        return str(found.resolve())
    if not source.downloadable:
        raise FileNotFoundError(f"{source.label} not found. {source.manual_instructions(cache)}")
    if not download:
        raise FileNotFoundError(
            f"{source.label} not found (looked for {source.looked_for(cache)}) and "
            "download=False. " + source.manual_instructions(cache))
    return str(download_and_extract(source, cache).resolve())
