"""TF Serving's REST API (``tensorflow_serving/model_servers/http_rest_api_handler.cc``).

``GET /v1/models/<name>[/versions/<v> | /labels/<l>]`` (status), ``.../metadata``, and
``POST .../<name>[...]:predict``, ``:classify`` and ``:regress``
(:mod:`serving.core.json_examples`, :mod:`serving.core.inference`). Every
answer is JSON; an error is ``{"error": message}`` with TF Serving's HTTP status for its
code (:data:`serving.core.status.HTTP_STATUS`), never 5xx for a malformed request.

The HTTP layer bounds what one connection can cost: the body size is checked against
the limit from ``Content-Length`` before anything is read (413); ``Content-Length`` must be
a non-negative integer (400); at most ``max_threads`` requests run at once. Every error,
the HTTP layer's own included, is counted and gets one log line naming the API, the model of
the path and the status (``Stats.count``; rate-limited, :mod:`serving.core.error_log`), as
the gRPC API's errors do.

``--rest_api_timeout_in_ms`` (TF Serving's flag, its REST requests' run timeout) is the
deadline of the whole request, from the moment its headers are read: a body that has not
arrived by then is 408, so a client that declares more than it sends cannot hold a handler
thread; a request still waiting for the model (in the batch queue) when it passes answers
DEADLINE_EXCEEDED, HTTP 504 as TF Serving's ``ToHTTPStatusCode``, without computing, and a
run still going then is cancelled and answers 504 too (:mod:`serving.core.deadline`).

With monitoring on, ``GET <path>`` answers the Prometheus page
(:mod:`serving.model_server.monitoring`) and ``:predict``/``:classify``/``:regress`` requests
are counted; with ``--rest_api_enable_cors_support`` every answer carries
``Access-Control-Allow-Origin: *`` and ``OPTIONS`` (a CORS preflight) is answered 204.
"""

from __future__ import annotations

import http
import http.server
import json
import logging
import re
import socket
import threading
import time
from typing import Any

from google.protobuf import json_format
from tensorflow_serving.apis import classification_pb2, get_model_status_pb2, regression_pb2

from serving.core import inference
from serving.core.deadline import deadline_after, remaining
from serving.core.json_examples import classification_json, input_from_json, regression_json
from serving.core.json_tensor import (
    columns_for,
    json_to_array,
    parse_json,
    response_json,
    signature_name,
)
from serving.core.manager import ModelManager
from serving.core.stats import Stats
from serving.core.status import HTTP_STATUS, ServingError, clip, invalid
from serving.core.tensors import check_batch, validate_inputs
from serving.model_server.monitoring import CONTENT_TYPE

log = logging.getLogger("serving.server")

_PREDICT_RE = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(predict|classify|regress)",
    re.IGNORECASE)
_STATUS_RE = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?(/metadata)?",
                        re.IGNORECASE)


#: The status code name of the HTTP layer's own errors (the rest are 4xx: INVALID_ARGUMENT).
_HTTP_CODE_NAMES = {404: "NOT_FOUND", 405: "UNIMPLEMENTED", 408: "DEADLINE_EXCEEDED",
                    413: "RESOURCE_EXHAUSTED"}


def _api_of(method: str, path: str) -> tuple[str, str | None, re.Match | None]:
    """The API a request counts under (``"REST predict"``, ``"REST status"``, ...), the
    model its path names (None: none), and its ``:predict``/``:classify``/``:regress``
    match (None for another request)."""
    predict = _PREDICT_RE.fullmatch(path) if method == "POST" else None
    status = None if predict else _STATUS_RE.fullmatch(path)
    api = (f"REST {predict.group(4).lower()}" if predict else
           "REST metadata" if path.endswith("/metadata") else "REST status")
    match = predict or status
    return api, match.group(1) if match else None, predict


class RestApi:
    """TF Serving's REST API over a ModelManager: ``handle`` returns (HTTP status, JSON).

    ``metrics`` (a :class:`~serving.model_server.monitoring.Metrics`, optional) counts
    ``:predict``/``:classify``/``:regress`` requests; ``metrics_path`` is where
    :class:`HttpHandler` serves its page.
    """

    def __init__(self, manager: ModelManager, stats: Stats, metrics=None,
                 metrics_path: str | None = None, method_check: bool = False) -> None:
        self._manager = manager
        self._method_check = method_check  # --enable_signature_method_name_check
        self._stats = stats
        self.metrics = metrics
        self.metrics_path = metrics_path if metrics is not None else None

    def handle(self, method: str, path: str, body: bytes,
               deadline: float | None = None) -> tuple[int, dict]:
        """``deadline``: ``time.monotonic()`` by which a predict must have reached the model
        (None: none)."""
        path = path.split("?", 1)[0]
        api, model, predict = _api_of(method, path)
        started = time.perf_counter()
        if predict and self.metrics is not None:
            self.metrics.begin(predict.group(1), predict.group(4).lower())
        status, code, doc = 200, "OK", None
        try:
            doc = self._dispatch(method, path, body, deadline)
        except ServingError as exc:
            status, code, doc = HTTP_STATUS.get(exc.code, 500), exc.code.name, {
                "error": exc.message}
            self._stats.count(api, code, exc.message, model=model, http_status=status)
        except Exception as exc:  # noqa: BLE001 - never crash a handler thread
            text = clip(f"internal error: {type(exc).__name__}: {exc}")
            status, code, doc = 500, "INTERNAL", {"error": text}
            self._stats.count(api, code, text, model=model, http_status=status,
                              level=logging.ERROR)
        elapsed = time.perf_counter() - started
        if predict and self.metrics is not None:
            self.metrics.request(predict.group(1), code, predict.group(4).lower(), "REST",
                                 elapsed)
        if status == 200:
            self._stats.count(api)
            if predict:
                self._stats.times.append(elapsed)  # successes only
        return status, doc

    def rejected(self, method: str, path: str, status: int, message: str) -> None:
        """A request the HTTP layer answered with error ``status`` before :meth:`handle`
        (a body over the limit, a bad ``Content-Length``, a body that did not arrive, a
        request line that does not parse): counted and logged as :meth:`handle`'s errors."""
        path = (path or "").split("?", 1)[0]
        api, model, _ = _api_of(method, path)
        if model is None:  # no API's path (or no request line that parsed)
            api = "REST request"
        self._stats.count(api, _HTTP_CODE_NAMES.get(status, "INVALID_ARGUMENT"), message,
                          model=model, http_status=status)

    def _dispatch(self, method: str, path: str, body: bytes, deadline: float | None) -> dict:
        m = _PREDICT_RE.fullmatch(path)
        if method == "POST" and m:
            name, version, label, verb = m.groups()
            version = int(version) if version else None
            if verb.lower() != "predict":
                return self._classify_regress(name, version, label, verb.lower(), body,
                                              deadline)
            return self._predict(name, version, label, body, deadline)
        m = _STATUS_RE.fullmatch(path)
        if method == "GET" and m:
            name, version, label, metadata = m.groups()
            version = int(version) if version else None
            if metadata:
                servable = self._manager.servable(name, version, label)
                return {"model_spec": {"name": name, "signature_name": "",
                                       "version": str(servable.version)},
                        "metadata": {"signature_def": json_format.MessageToDict(
                            servable.signature_def_map, preserving_proto_field_name=True,
                            always_print_fields_with_no_presence=True)}}
            response = get_model_status_pb2.GetModelStatusResponse()
            response.model_version_status.extend(self._manager.status(name, version, label))
            return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                             always_print_fields_with_no_presence=True)
        raise invalid(f"Malformed request: {method} {path}")

    def _predict(self, name: str, version: int | None, label: str | None, body: bytes,
                 deadline: float | None) -> dict:
        doc = parse_json(body)
        sig_name = signature_name(doc)
        with self._manager.acquire(name, version, label) as servable:
            sig = servable.signature(sig_name)
            columns, batch = columns_for(doc, sorted(sig.inputs))
            validate_inputs(name, sig, columns, {})  # names first: nothing decoded yet
            arrays = {k: json_to_array(v, sig.inputs[k].dtype, f"input '{k}'")
                      for k, v in columns.items()}
            check_batch(sig, arrays)
            started = time.perf_counter()
            outputs = sig.run(arrays, deadline=deadline)
            self._stats.model_times.append(time.perf_counter() - started)
            return response_json(outputs, batch)


    def _classify_regress(self, name: str, version: int | None, label: str | None,
                          verb: str, body: bytes, deadline: float | None) -> dict:
        sig_name, request_input = input_from_json(parse_json(body), verb)
        request = (classification_pb2.ClassificationRequest() if verb == "classify"
                   else regression_pb2.RegressionRequest())
        request.model_spec.signature_name = sig_name
        request.input.CopyFrom(request_input)
        with self._manager.acquire(name, version, label) as servable:
            started = time.perf_counter()
            run = inference.classify if verb == "classify" else inference.regress
            result = run(servable, request, deadline, self._method_check).result
            doc = (classification_json(result) if verb == "classify"
                   else regression_json(result))
            self._stats.model_times.append(time.perf_counter() - started)
            return doc


class HttpHandler(http.server.BaseHTTPRequestHandler):
    """One HTTP request: bounded read of the body, then :class:`RestApi`."""

    server_version = "tpr-keras-serving"
    api: RestApi  # set on the subclass the server makes
    server: HttpServer

    def setup(self) -> None:
        self.timeout = self.server.read_timeout_s  # applies to reading the request line too
        super().setup()

    def _respond(self, status: int, doc: dict, close: bool = False) -> None:
        self._send(status, json.dumps(doc).encode(), "application/json", close)

    def _reject(self, status: int, message: str) -> None:
        """Answers an error of the HTTP layer itself (before :meth:`RestApi.handle`), with
        its log line, and closes the connection."""
        self.api.rejected(self.command, self.path, status, message)
        self._respond(status, {"error": message}, close=True)

    def _send(self, status: int, data: bytes, content_type: str, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if self.server.cors:
            self.send_header("Access-Control-Allow-Origin", "*")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """The http.server's own errors (bad request line, headers too long, unknown
        method) as JSON, and 4xx: a malformed request is never a server error."""
        if code >= 500:
            code = 405 if code == http.HTTPStatus.NOT_IMPLEMENTED else 400
        try:
            phrase = http.HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        if not getattr(self, "command", None):
            self.command = ""
        self.api.rejected(self.command, getattr(self, "path", ""), code,
                          message or explain or phrase)
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # a request line that did not parse: still
            # answer with a status line and headers
        self._respond(code, {"error": message or explain or phrase}, close=True)

    def _read_body(self, length: int, deadline: float | None) -> bytes | None:
        """``length`` bytes by the request's ``deadline``, or None after answering 400/408."""
        chunks, got = [], 0
        try:
            while got < length:
                left = remaining(deadline)
                if left is not None and left <= 0:
                    raise TimeoutError
                self.connection.settimeout(left)
                chunk = self.rfile.read1(min(length - got, 1 << 20))
                if not chunk:
                    self._reject(400, f"the body ended after {got} of the {length} bytes "
                                      "of Content-Length")
                    return None
                chunks.append(chunk)
                got += len(chunk)
        except (TimeoutError, socket.timeout):
            self._reject(408, f"received {got} of the {length} bytes of Content-Length "
                              f"within the read timeout of {self.server.read_timeout_s:g} s")
            return None
        return b"".join(chunks)

    def _discard_body(self, length: int) -> None:
        """Reads and drops (up to) ``length`` bytes for a few seconds, so that a client
        still sending its body reads our answer instead of a connection reset."""
        deadline = time.monotonic() + 5
        try:
            self.connection.shutdown(socket.SHUT_WR)
            while length > 0 and time.monotonic() < deadline:
                self.connection.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = self.rfile.read1(min(length, 1 << 20))
                if not chunk:
                    break
                length -= len(chunk)
        except OSError:
            pass

    def _handle(self, method: str) -> None:
        deadline = deadline_after(self.server.read_timeout_s)  # the whole request's
        if self.headers.get("Transfer-Encoding"):
            self._reject(411, "Transfer-Encoding is not supported; send the body with a "
                              "Content-Length")
            return
        header = self.headers.get("Content-Length")
        text = "0" if header is None else header.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 18:
            self._reject(400, "Content-Length must be a non-negative integer, got "
                              f"{clip(header or '', 40)!r}")
            return
        length = int(text)
        limit = self.server.max_body_bytes
        if length > limit:
            self._reject(413, f"request body of {length} bytes exceeds the limit of {limit} "
                              "bytes (the server's --max_message_bytes)")
            self._discard_body(length)
            return
        body = self._read_body(length, deadline) if length else b""
        if body is None:
            return
        self.connection.settimeout(self.server.read_timeout_s)
        path = self.path.split("?", 1)[0]
        if method == "GET" and self.api.metrics_path and path == self.api.metrics_path:
            self._send(200, self.api.metrics.page(), CONTENT_TYPE)
            return
        if method == "OPTIONS" and self.server.cors:
            self.send_response(204)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Content-Type")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status, doc = self.api.handle(method, self.path, body, deadline)
        self._respond(status, doc)

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    # Other methods are answered like unknown paths (400 "Malformed request").
    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = (  # noqa: N815
        lambda self: self._handle(self.command))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.debug("REST %s", format % args)


class HttpServer(http.server.ThreadingHTTPServer):
    """Threads per request, at most ``max_threads`` at once (back-pressure on accept)."""

    daemon_threads = False  # server_close() joins in-flight requests
    block_on_close = True
    request_queue_size = 128

    def __init__(self, address, api: RestApi, max_threads: int, max_body_bytes: int,
                 read_timeout_s: float, cors: bool = False) -> None:
        handler = type("Handler", (HttpHandler,), {"api": api})
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_threads)
        self.max_body_bytes = max_body_bytes
        self.read_timeout_s = read_timeout_s
        self.cors = cors

    def process_request(self, request, client_address):
        self._slots.acquire()  # back-pressure: at most max_threads requests at once
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()
