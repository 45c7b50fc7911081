"""Request statistics of a running server (``ModelServer.stats()``) and the one log line
written per rejected request (:mod:`serving.core.error_log`, rate-limited)."""

from __future__ import annotations

import collections
import logging
import threading

import numpy as np

from serving.core.error_log import ErrorLog

log = logging.getLogger("serving.server")


class Stats:
    """Request counts of every API and times of the last Predict requests (seconds).

    ``requests``: answered requests per API (``"gRPC Predict"``, ``"REST predict"``,
    ``"gRPC GetModelStatus"``, ``"REST status"``, ...), errors included;
    ``times``: the whole Predict (and Classify, Regress) handler (request parsed ->
    response built), gRPC and REST, successes only; ``model_times``: the part spent in the signature call (incl.
    batching waits); ``errors``: failed requests per status code, every API;
    ``error_log``: the front ends' rate-limited line per failed request.
    """

    def __init__(self, keep: int = 200_000) -> None:
        self.times: collections.deque[float] = collections.deque(maxlen=keep)
        self.model_times: collections.deque[float] = collections.deque(maxlen=keep)
        self.errors: collections.Counter[str] = collections.Counter()
        self.requests: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self.error_log = ErrorLog(log)

    def count(self, api: str, error: str | None = None, message: str = "",
              model: str | None = None, http_status: int | None = None,
              level: int = logging.INFO) -> None:
        """Counts one answered request; a rejected one (``error``: its status code's name)
        also gets one log line naming ``api``, the ``model`` it asked for and the status
        (:meth:`ErrorLog.request_failed <serving.core.error_log.ErrorLog.request_failed>`)."""
        with self._lock:
            self.requests[api] += 1
            if error is not None:
                self.errors[error] += 1
        if error is not None:
            self.error_log.request_failed(api, model, error, message, http_status, level)

    def snapshot(self) -> dict:
        """Counts and handler-time percentiles (milliseconds) as plain JSON-able values."""
        with self._lock:
            requests, errors = dict(self.requests), dict(self.errors)
        times, model_times = np.asarray(self.times), np.asarray(self.model_times)
        out: dict = {"requests": requests, "errors": errors}
        for key, arr in (("handler_ms", times), ("signature_call_ms", model_times)):
            if len(arr):
                p50, p99 = np.percentile(arr, [50, 99]) * 1e3
                out[key] = {"count": int(len(arr)), "p50": float(p50), "p99": float(p99)}
        return out

    def summary(self) -> str:
        predicts = {api: n for api, n in self.requests.items() if api.lower().endswith("predict")}
        others = {api: n for api, n in sorted(self.requests.items()) if api not in predicts}
        total = sum(predicts.values())
        line = f"served {total} Predict requests"
        if predicts:
            line += " (" + ", ".join(f"{api} {n}" for api, n in sorted(predicts.items())) + ")"
        times = np.asarray(self.times)
        if len(times):
            p50, p99 = np.percentile(times, [50, 99]) * 1e3
            line += f": handler time p50 {p50:.3f} ms, p99 {p99:.3f} ms"
            if len(self.model_times):
                m50, m99 = np.percentile(np.asarray(self.model_times), [50, 99]) * 1e3
                line += f" (signature call p50 {m50:.3f} ms, p99 {m99:.3f} ms)"
        if others:
            line += "; other requests " + ", ".join(f"{api} {n}" for api, n in others.items())
        return line + f"; errors {dict(self.errors) or 0}"
