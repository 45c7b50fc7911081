"""Waiting for the initial models before the ports open, as ``tensorflow_model_server``
does (``ServerCore::WaitUntilModelsAvailable`` in ``model_servers/server_core.cc``): the
gRPC and REST servers start only once every configured model has a version AVAILABLE, so
"port open" means "ready". A model whose every version failed to load (after
``--max_num_load_retries`` attempts) ends the wait, and the server exits with TF Serving's
message: ``N model(s) did not become available: {...}`` naming each model, version and
load error. A model without any version folder is waited for, as TF Serving does.
"""

from __future__ import annotations

import logging
import threading
import time

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
import grpc
from tensorflow_serving.apis import get_model_status_pb2

from serving.core.manager import ModelManager
from serving.core.status import ServingError

log = logging.getLogger("serving.server")

_STATE = get_model_status_pb2.ModelVersionStatus.State
#: The error code of a version that failed every load attempt (ModelManager's "gave up").
_GAVE_UP = grpc.StatusCode.UNKNOWN.value[0]


def unavailable_models(manager: ModelManager) -> tuple[list[str], dict[str, list]]:
    """``(pending, failed)``: models still without an AVAILABLE version that may get one,
    and models whose every version failed for good (name -> their version statuses)."""
    pending, failed = [], {}
    for name in manager.model_names:
        try:
            states = manager.status(name)
        except ServingError:  # NOT_FOUND: no version folder seen yet
            pending.append(name)
            continue
        if any(s.state == _STATE.AVAILABLE for s in states):
            continue
        if all(s.state == _STATE.END and s.status.error_code == _GAVE_UP for s in states):
            failed[name] = states
        else:
            pending.append(name)
    return pending, failed


def failure_message(failed: dict[str, list]) -> str:
    """TF Serving's start-up error for the models that did not become available."""
    parts = []
    for name, states in sorted(failed.items()):
        latest = max(states, key=lambda s: s.version)
        parts.append(f"{{{{name: {name} version: {latest.version}}} due to error: "
                     f"{latest.status.error_message}}}")
    return f"{len(failed)} model(s) did not become available: {{{', '.join(parts)}}}"


def wait_until_available(manager: ModelManager, stop: threading.Event,
                         interval_s: float = 1.0, log_every_s: float = 30.0) -> str | None:
    """Polls ``manager`` every ``interval_s`` until no model is pending; returns None if
    every model is available (or ``stop`` was set), else :func:`failure_message`."""
    last_log = time.monotonic()
    while True:
        pending, failed = unavailable_models(manager)
        if not pending:
            return failure_message(failed) if failed else None
        if time.monotonic() - last_log >= log_every_s:
            log.info("waiting for model(s) %s to become available", pending)
            last_log = time.monotonic()
        if stop.wait(interval_s):
            return None
        manager.poll()
