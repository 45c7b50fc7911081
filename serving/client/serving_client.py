"""Predict calls with string inputs to a TF Serving endpoint, over gRPC (with the
TensorFlow-free messages of :mod:`serving.client.protos`) or REST."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence


#: The largest gRPC message a client sends or receives by default: the server's default
#: limit (``python -m serving.server --max_message_bytes``).
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ServingClient:
    """Predict calls with string inputs to a TF Serving endpoint (gRPC, or REST with ``rest=True``).

    Args:
        server: ``host:port`` of the gRPC (default 8500) or REST (default 8501) endpoint.
        model_name: The served model's name.
        version: A model version; None asks for the latest.
        signature_name: The signature (``serving_default``).
        timeout: Seconds per request.
        rest: Use the REST API instead of gRPC.
        wait_seconds: While the server is not up yet (gRPC UNAVAILABLE, REST connection
            refused: a starting server opens its ports only once its models are available)
            or the model is still loading (NOT_FOUND while GetModelStatus reports a version
            START or LOADING), retry for up to this many seconds, then raise
            :class:`ServerNotReady` saying how long it waited and the last error (0: fail
            at once with the server's error).
        on_wait: Called with a one-line message saying what the client waits for and why,
            when waiting starts, when the reason changes and every ``report_every_s``
            seconds (``python -m serving.client`` prints it on stderr).
        report_every_s: Seconds between ``on_wait`` messages for the same reason.
        max_message_bytes: The largest gRPC message this client sends or receives (gRPC's
            default is 4 MiB; tensorflow_model_server accepts up to 2 GiB,
            ``python -m serving.server`` up to its ``--max_message_bytes``, 64 MiB by
            default). A larger request fails before it is sent: RESOURCE_EXHAUSTED
            ``CLIENT: Sent message larger than max (N vs. LIMIT)``.
    """

    def __init__(self, server: str = "localhost:8500", model_name: str = "babi",
                 version: int | None = None, signature_name: str = "serving_default",
                 timeout: float = 30.0, rest: bool = False, wait_seconds: float = 0.0,
                 on_wait=None, report_every_s: float = 10.0,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.server = server
        self.wait_seconds = wait_seconds
        self.on_wait = on_wait
        self.report_every_s = report_every_s
        self.model_name = model_name
        self.version = version
        self.signature_name = signature_name
        self.timeout = timeout
        self.rest = rest
        self.max_message_bytes = int(max_message_bytes)
        self._channel = None
        self._stub = self._status_stub = None
        if not rest:
            import grpc

            from serving.client import protos

            # reconnect at least every second while waiting: gRPC's default backoff grows to
            # 2 minutes, so a client that started long before the server would notice late
            self._channel = grpc.insecure_channel(
                server, options=[("grpc.max_receive_message_length", self.max_message_bytes),
                                 ("grpc.max_send_message_length", self.max_message_bytes),
                                 ("grpc.initial_reconnect_backoff_ms", 500),
                                 ("grpc.max_reconnect_backoff_ms", 1000)])
            # PredictionService.Predict, with the TensorFlow-free messages of serving.client.protos
            self._stub = self._channel.unary_unary(
                protos.PREDICT_METHOD,
                request_serializer=protos.PredictRequest.SerializeToString,
                response_deserializer=protos.PredictResponse.FromString)
            self._status_stub = self._channel.unary_unary(
                protos.MODEL_STATUS_METHOD,
                request_serializer=protos.GetModelStatusRequest.SerializeToString,
                response_deserializer=protos.GetModelStatusResponse.FromString)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def predict(self, inputs: dict[str, Sequence[str]]) -> tuple[dict[str, list], int | None]:
        """One Predict call; returns ``({output: rows}, version)``.

        Every input is a batch of strings. Each output is a list with one entry per
        example: a string or float, or a list of them for ``[batch, k]`` outputs.

        Raises:
            grpc.RpcError: gRPC errors (``.code()``, ``.details()``).
            RuntimeError: REST errors (the server's message, with the HTTP status).
            ServerNotReady: still not ready after ``wait_seconds`` (> 0).
        """
        start = time.monotonic()
        deadline = start + max(self.wait_seconds, 0.0)
        said, said_at = None, 0.0
        while True:
            try:
                if self.rest:
                    return self._predict_rest(inputs), None
                return self._predict_grpc(inputs)
            except Exception as exc:  # noqa: BLE001 - retried only while not ready
                reason = self._not_ready(exc) if self.wait_seconds > 0 else None
                if reason is None:
                    raise
                now = time.monotonic()
                if now >= deadline:
                    raise ServerNotReady(self._gave_up(now - start, reason, exc),
                                         now - start, exc) from None
                if self.on_wait is not None and (
                        reason != said or now - said_at >= self.report_every_s):
                    self.on_wait(f"waiting for model '{self.model_name}' at {self.server} "
                                 f"({now - start:.0f} s of --wait_seconds "
                                 f"{self.wait_seconds:g}): {reason}")
                    said, said_at = reason, now
            time.sleep(min(0.5, max(deadline - time.monotonic(), 0.0)))

    def _not_ready(self, exc: Exception) -> str | None:
        """Why a failed call may succeed later (the server still starting, the model still
        loading), or None: an error that waiting will not mend."""
        if _unreachable(exc):
            text = _message(exc)
            if "refused" in text.lower():
                return ("connection refused: the server is not up yet, or still loading its "
                        "models (it opens its ports only once all of them have loaded)")
            return f"the server is unavailable ({text})"
        if _code_name(exc) == "NOT_FOUND":
            loading = self._loading_versions()
            if loading:
                return f"the model is loading (version {loading})"
        return None

    def _loading_versions(self) -> str:
        """The model's versions on their way to AVAILABLE, as ``"2: LOADING"``; ``""`` when
        none (or the status cannot be had): a NOT_FOUND that waiting will not mend."""
        from serving.client import protos

        try:
            if self.rest:
                url = f"http://{self.server}/v1/models/{self.model_name}"
                with urllib.request.urlopen(url, timeout=self.timeout) as resp:
                    states = [(s.get("version"), s.get("state"))
                              for s in json.load(resp).get("model_version_status", [])]
            else:
                request = protos.GetModelStatusRequest()
                request.model_spec.name = self.model_name
                states = [(s.version, protos.LOADING_STATES.get(s.state, "")) for s in
                          self._status_stub(request, timeout=self.timeout).model_version_status]
        except Exception:  # noqa: BLE001 - no status: the model is not known to the server
            return ""
        return ", ".join(f"{v}: {state}" for v, state in states
                         if state in protos.LOADING_STATES.values())

    def _gave_up(self, waited: float, reason: str, exc: Exception) -> str:
        loading = f" ({reason})" if reason.startswith("the model is loading") else ""
        return (f"gave up after waiting {waited:.0f} s (--wait_seconds "
                f"{self.wait_seconds:g}) for model '{self.model_name}' at {self.server}; "
                f"last error: {_message(exc)}{loading}. A starting server opens its ports "
                "only once every model has loaded, which can take minutes on a slow or busy "
                "machine: "
                "if it is still starting or loading, run this again with a larger "
                "--wait_seconds (e.g. --wait_seconds 300); otherwise check that it runs and "
                "listens at this address (--server).")

    def _predict_grpc(self, inputs):
        from serving.client import protos

        request = protos.PredictRequest()
        request.model_spec.name = self.model_name
        request.model_spec.signature_name = self.signature_name
        if self.version is not None:
            request.model_spec.version.value = self.version
        for name, values in inputs.items():
            proto = request.inputs[name]
            proto.dtype = protos.DT_STRING
            proto.tensor_shape.dim.add(size=len(values))
            proto.string_val.extend(v.encode("utf-8") if isinstance(v, str) else v
                                    for v in values)
        response = self._stub(request, timeout=self.timeout)
        outputs = {}
        for name, proto in response.outputs.items():
            dims = [d.size for d in proto.tensor_shape.dim]
            if proto.string_val or proto.dtype == protos.DT_STRING:
                flat = [v.decode("utf-8", "replace") for v in proto.string_val]
            else:
                flat = _numbers(proto)
            outputs[name] = _nested(flat, dims)
        return outputs, response.model_spec.version.value

    def _predict_rest(self, inputs):
        url = f"http://{self.server}/v1/models/{self.model_name}"
        if self.version is not None:
            url += f"/versions/{self.version}"
        body = json.dumps({"signature_name": self.signature_name,
                           "inputs": {k: list(v) for k, v in inputs.items()}}).encode()
        req = urllib.request.Request(url + ":predict", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                doc = json.load(resp)
        except urllib.error.HTTPError as exc:
            try:
                message = json.load(exc).get("error", "")
            except ValueError:
                message = ""
            raise RuntimeError(f"{_HTTP_CODE_NAMES.get(exc.code, f'HTTP {exc.code}')}: "
                               f"{message or exc.reason}") from None
        except (urllib.error.URLError, ConnectionError) as exc:  # nothing listening, DNS
            raise RuntimeError(f"UNAVAILABLE: cannot reach http://{self.server} "
                               f"({getattr(exc, 'reason', exc)})") from None
        outputs = doc["outputs"]
        if not isinstance(outputs, dict):  # a signature with a single output
            outputs = {"output": outputs}
        return outputs


#: TF Serving's REST status codes, named like the gRPC ones (``NOT_FOUND: ...``).
_HTTP_CODE_NAMES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED",
                    409: "ALREADY_EXISTS", 413: "RESOURCE_EXHAUSTED", 429: "RESOURCE_EXHAUSTED",
                    500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
                    504: "DEADLINE_EXCEEDED"}


class ServerNotReady(RuntimeError):
    """The server did not answer, or the model did not load, within ``wait_seconds``.

    Attributes:
        waited_s: Seconds waited.
        last_error: The last call's error.
    """

    def __init__(self, message: str, waited_s: float, last_error: Exception) -> None:
        super().__init__(message)
        self.waited_s = waited_s
        self.last_error = last_error


def _code_name(exc: Exception) -> str | None:
    """A gRPC error's status name, or the ``NAME:`` a REST error's message starts with."""
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            return code().name
        except Exception:  # noqa: BLE001 - not a grpc.RpcError after all
            return None
    if isinstance(exc, RuntimeError):
        return str(exc).split(":", 1)[0]
    return None


def _message(exc: Exception) -> str:
    """An error as one line: ``CODE: details`` for gRPC, the message otherwise."""
    details = getattr(exc, "details", None)
    text = (f"{_code_name(exc)}: {details()}" if callable(details) and _code_name(exc)
            else str(exc))
    return " ".join(text.split())


def _unreachable(exc: Exception) -> bool:
    """The server is not (yet) answering: gRPC UNAVAILABLE, or REST's UNAVAILABLE."""
    if callable(getattr(exc, "code", None)):
        return _code_name(exc) == "UNAVAILABLE"
    return isinstance(exc, RuntimeError) and str(exc).startswith("UNAVAILABLE: cannot reach")


def _nested(flat: list, dims: list[int]) -> list:
    """A row-major flat list as nested lists of shape ``dims`` (rank 0 and 1: as is)."""
    for size in reversed(dims[1:]):
        flat = [flat[i:i + size] for i in range(0, len(flat), size)] if size else []
    return flat


def _numbers(proto) -> list:
    """The values of a numeric TensorProto (typed fields or ``tensor_content``)."""
    from serving.client import protos

    if proto.tensor_content:
        import numpy as np

        dtype = {protos.DT_FLOAT: np.float32, protos.DT_DOUBLE: np.float64,
                 protos.DT_INT32: np.int32, protos.DT_INT64: np.int64,
                 protos.DT_BOOL: np.bool_}.get(proto.dtype, np.float32)
        return np.frombuffer(proto.tensor_content, dtype=dtype).tolist()
    for field in ("float_val", "double_val", "int_val", "int64_val", "bool_val"):
        values = getattr(proto, field)
        if len(values):
            return list(values)
    return []
