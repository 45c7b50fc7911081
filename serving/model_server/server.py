"""The gRPC (and optional REST) server around a :class:`~serving.core.manager.ModelManager`:
:class:`ModelServer` binds the ports and wires the two front ends, ``ports``, ``stats()``,
and optionally TLS, the gRPC health service and Prometheus metrics."""

from __future__ import annotations

import concurrent.futures
import os
import threading

import grpc

from serving.core.manager import ModelManager
from serving.core.stats import Stats
from serving.model_server.grpc_service import add_services
from serving.model_server.health import ModelHealth
from serving.model_server.monitoring import Metrics, MetricsInterceptor, MetricsStats
from serving.model_server.rest_api import HttpServer, RestApi
from serving.model_server.tls import server_credentials

#: Largest gRPC message and REST body, as tensorflow_model_server's default gRPC limit.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ModelServer:
    """The gRPC (and optional REST) server around a ModelManager.

    Args:
        manager: The models.
        port: gRPC port (0: pick a free one).
        rest_api_port: REST port (None: no REST; 0: pick a free one).
        host: Address to bind (loopback by default).
        max_threads: gRPC handler threads.
        rest_api_num_threads: REST requests handled at once.
        max_message_bytes: Largest gRPC request/response and REST body, checked before
            anything is decoded.
        rest_api_timeout_s: The whole REST request must arrive within this time.
        ssl_config: A checked ``SSLConfig`` (:func:`serving.model_server.tls.read_ssl_config`):
            gRPC over TLS only, never plaintext.
        grpc_socket_path: Also serve gRPC on this UNIX socket.
        grpc_options: Extra gRPC server arguments (``--grpc_channel_arguments``).
        health: Serve ``grpc.health.v1.Health`` (:mod:`serving.model_server.health`).
        metrics_path: Serve Prometheus metrics at this REST path
            (:mod:`serving.model_server.monitoring`); needs REST.
        metrics: The :class:`~serving.model_server.monitoring.Metrics` to serve there, when
            they were made before the manager to count its loads (its ``on_load``:
            ``Metrics.saved_model_load``); by default a new one.
        cors: Send CORS headers on REST answers (``--rest_api_enable_cors_support``).
        signature_method_name_check: Classify, Regress and MultiInference require the
            signature's ``method_name`` (``--enable_signature_method_name_check``).
    """

    def __init__(self, manager: ModelManager, port: int = 8500, rest_api_port: int | None = None,
                 host: str = "127.0.0.1", max_threads: int | None = None,
                 rest_api_num_threads: int | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 rest_api_timeout_s: float = 30.0, ssl_config=None, grpc_socket_path: str = "",
                 grpc_options: list[tuple[str, int | str]] | None = None, health: bool = False,
                 metrics_path: str | None = None, cors: bool = False,
                 metrics: Metrics | None = None,
                 signature_method_name_check: bool = False) -> None:
        self.manager = manager
        if metrics is None and metrics_path:
            metrics = Metrics()
        if metrics is not None:
            metrics.manager = manager
        self.metrics = metrics if metrics_path else None
        self._stats = MetricsStats(self.metrics) if self.metrics else Stats()
        self.host = host
        cpus = os.cpu_count() or 1
        self.max_threads = max_threads or max(8, 4 * cpus)
        self._grpc = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=self.max_threads,
                                                  thread_name_prefix="grpc"),
            interceptors=[MetricsInterceptor(self.metrics)] if self.metrics else None,
            options=[("grpc.max_receive_message_length", max_message_bytes),
                     ("grpc.max_send_message_length", max_message_bytes),
                     ("grpc.so_reuseport", 0), *(grpc_options or [])])
        self.predictions = add_services(self._grpc, manager, self._stats,
                                        signature_method_name_check)
        self.health = ModelHealth(self._grpc, manager) if health else None
        address = f"{host}:{port}"
        try:
            if ssl_config is not None:
                self.port = self._grpc.add_secure_port(address, server_credentials(ssl_config))
            else:
                self.port = self._grpc.add_insecure_port(address)
        except RuntimeError:  # grpcio's "Failed to bind to address ..."
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot bind gRPC to {address} (--port={port}): the port is in "
                          "use or the address is not available")
        if grpc_socket_path:
            unix = f"unix:{os.path.abspath(grpc_socket_path)}"
            bound = (self._grpc.add_secure_port(unix, server_credentials(ssl_config))
                     if ssl_config is not None else self._grpc.add_insecure_port(unix))
            if bound == 0:
                raise OSError(f"cannot bind gRPC to {unix}")
        self._http: HttpServer | None = None
        self._http_thread: threading.Thread | None = None
        self.rest_api_port: int | None = None
        if rest_api_port is not None:
            try:
                self._http = HttpServer((host, rest_api_port),
                                        RestApi(manager, self._stats, self.metrics,
                                                metrics_path, signature_method_name_check),
                                        rest_api_num_threads or self.max_threads,
                                        max_message_bytes, rest_api_timeout_s, cors)
            except OSError as exc:
                self._grpc.stop(None)
                raise OSError(f"cannot bind REST to {host}:{rest_api_port} (--rest_api_port="
                              f"{rest_api_port}): {exc.strerror or exc}") from None
            self.rest_api_port = self._http.server_address[1]

    @property
    def ports(self) -> dict[str, int | None]:
        """The bound ports: ``{"grpc": ..., "rest": ...}`` (``rest`` None without REST)."""
        return {"grpc": self.port, "rest": self.rest_api_port}

    def stats(self) -> dict:
        """Requests per API, errors per status code, handler and signature-call time
        percentiles (ms) so far (:meth:`serving.core.stats.Stats.snapshot`)."""
        return self._stats.snapshot()

    def summary(self) -> str:
        """The shutdown line's text: requests, handler times, errors."""
        return self._stats.summary()

    def start(self) -> ModelServer:
        self._grpc.start()
        if self.health is not None:
            self.health.start()
        if self._http is not None:
            self._http_thread = threading.Thread(target=self._http.serve_forever,
                                                 kwargs={"poll_interval": 0.2},
                                                 daemon=True, name="rest")
            self._http_thread.start()
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Stops accepting requests, lets in-flight ones finish (up to ``grace`` s), then
        closes every loaded version. The health service says NOT_SERVING from the start."""
        if self.health is not None:
            self.health.drain()
        done = self._grpc.stop(grace)
        if self._http is not None:
            if self._http_thread is not None:
                self._http.shutdown()  # stop accepting
            self._http.server_close()  # join in-flight REST requests
        done.wait(grace + 1)
        self.manager.stop()
        self._stats.error_log.close()  # the count of error lines suppressed, if any

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop(grace=1.0)
