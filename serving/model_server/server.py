"""The gRPC (and optional REST) server around a :class:`~serving.core.manager.ModelManager`:
:class:`ModelServer` binds the ports and wires the two front ends, ``ports``, ``stats()``."""

from __future__ import annotations

import concurrent.futures
import os
import threading

import grpc

from serving.core.manager import ModelManager
from serving.core.stats import Stats
from serving.model_server.grpc_service import add_services
from serving.model_server.rest_api import HttpServer, RestApi

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
    """

    def __init__(self, manager: ModelManager, port: int = 8500, rest_api_port: int | None = None,
                 host: str = "127.0.0.1", max_threads: int | None = None,
                 rest_api_num_threads: int | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 rest_api_timeout_s: float = 30.0) -> None:
        self.manager = manager
        self._stats = Stats()
        self.host = host
        cpus = os.cpu_count() or 1
        self.max_threads = max_threads or max(8, 4 * cpus)
        self._grpc = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=self.max_threads,
                                                  thread_name_prefix="grpc"),
            options=[("grpc.max_receive_message_length", max_message_bytes),
                     ("grpc.max_send_message_length", max_message_bytes),
                     ("grpc.so_reuseport", 0)])
        self.predictions = add_services(self._grpc, manager, self._stats)
        self.port = self._grpc.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise OSError(f"cannot bind gRPC to {host}:{port}")
        self._http: HttpServer | None = None
        self._http_thread: threading.Thread | None = None
        self.rest_api_port: int | None = None
        if rest_api_port is not None:
            self._http = HttpServer((host, rest_api_port), RestApi(manager, self._stats),
                                    rest_api_num_threads or self.max_threads, max_message_bytes,
                                    rest_api_timeout_s)
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
        if self._http is not None:
            self._http_thread = threading.Thread(target=self._http.serve_forever,
                                                 kwargs={"poll_interval": 0.2},
                                                 daemon=True, name="rest")
            self._http_thread.start()
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Stops accepting requests, lets in-flight ones finish (up to ``grace`` s), then
        closes every loaded version."""
        done = self._grpc.stop(grace)
        if self._http is not None:
            if self._http_thread is not None:
                self._http.shutdown()  # stop accepting
            self._http.server_close()  # join in-flight REST requests
        done.wait(grace + 1)
        self.manager.stop()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop(grace=1.0)
