"""A model's versions on disk and in memory: the version folders of a base path, and the
state of each version (:class:`Model`), for :mod:`serving.core.manager`.

TF Serving's file-system source (``sources/storage_path/file_system_storage_path_source.cc``)
takes every child folder whose name parses as a non-negative integer as that version, so
``00000123`` (the folder name of TF Serving's own test models) is version 123.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Sequence

import grpc
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.config import model_server_config_pb2

from serving.core.servable import Servable

log = logging.getLogger("serving.server")

STATE = get_model_status_pb2.ModelVersionStatus.State


@dataclasses.dataclass
class VersionState:
    state: int
    error_code: grpc.StatusCode = grpc.StatusCode.OK
    error_message: str = ""
    failures: int = 0


class Model:
    """One configured model: its loaded versions (copy-on-write dict), their states, its
    checked version labels, and a lock held while it is polled or dropped."""

    def __init__(self, config: model_server_config_pb2.ModelConfig,
                 servables: dict[int, Servable] | None = None) -> None:
        self.config = config
        self.servables: dict[int, Servable] = dict(servables or {})  # replaced, never mutated
        self.states: dict[int, VersionState] = {
            v: VersionState(STATE.AVAILABLE) for v in self.servables}
        self.labels: dict[str, int] = {}
        self.folders: dict[int, str] = {}  # version -> its folder's name (e.g. "00000123")
        self.lock = threading.Lock()
        self.dropped = False

    def version_path(self, version: int) -> str:
        return os.path.join(self.config.base_path, self.folders.get(version, str(version)))

    def fresh(self, version: int) -> bool:
        """``version`` is loaded from the current base path (not kept from an old one)."""
        servable = self.servables.get(version)
        return servable is not None and servable.path == self.version_path(version)


def version_folders(base: str, names: Sequence[str]) -> dict[int, str]:
    """Version -> folder name for the SavedModel folders of ``base`` whose name is a
    non-negative integer, as TF Serving's file-system source reads them: ``00000123`` is
    version 123. Of two folders with the same number (``7`` and ``007``) the last name in
    sorted order is used, with a warning."""
    folders: dict[int, str] = {}
    for name in sorted(names):
        if not (name.isascii() and name.isdigit()) or not (
                os.path.isfile(os.path.join(base, name, "saved_model.pb"))
                or os.path.isfile(os.path.join(base, name, "saved_model.pbtxt"))):
            continue
        version = int(name)
        if version in folders:
            log.warning("duplicate version folders under %s: version %d is loaded from %s, "
                        "%s is ignored", base, version, name, folders[version])
        folders[version] = name
    return folders
