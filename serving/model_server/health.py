"""The standard gRPC health service (``grpc.health.v1.Health``,
``--enable_grpc_healthcheck_service``), answered from the model manager.

The overall service (``""``) and ``tensorflow.serving.PredictionService`` /
``tensorflow.serving.ModelService`` report SERVING once every configured model has a
version AVAILABLE (checked every ``interval_s`` seconds, so a config reload that adds a
model turns them NOT_SERVING until it loads), and NOT_SERVING from the moment the server
starts draining. An unknown service name is NOT_FOUND (``Check``) as grpcio's servicer
answers.
"""

from __future__ import annotations

import threading

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from tensorflow_serving.apis import get_model_status_pb2

from serving.model_server.grpc_service import MODEL_SERVICE, PREDICTION_SERVICE

SERVICES = ("", PREDICTION_SERVICE, MODEL_SERVICE)
_AVAILABLE = get_model_status_pb2.ModelVersionStatus.State.AVAILABLE
_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def all_models_available(manager) -> bool:
    """Whether every model of ``manager`` has at least one AVAILABLE version."""
    for name in manager.model_names:
        try:
            states = manager.status(name)
        except Exception:  # noqa: BLE001 - NOT_FOUND: no version yet
            return False
        if not any(s.state == _AVAILABLE for s in states):
            return False
    return True


class ModelHealth:
    """Registers the health servicer on a gRPC server and keeps its statuses current."""

    def __init__(self, server: grpc.Server, manager, interval_s: float = 0.5) -> None:
        self._manager = manager
        self._interval_s = interval_s
        self.servicer = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, server)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._serving: bool | None = None
        self.update()

    def update(self) -> bool:
        """Sets every service's status from the manager now; returns whether SERVING."""
        serving = not self._stop.is_set() and all_models_available(self._manager)
        if serving != self._serving:
            self._serving = serving
            for service in SERVICES:
                self.servicer.set(service, _SERVING if serving else _NOT_SERVING)
        return serving

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self._interval_s):
                self.update()

        self._thread = threading.Thread(target=loop, daemon=True, name="health")
        self._thread.start()

    def drain(self) -> None:
        """NOT_SERVING for good: the server is shutting down."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.servicer.enter_graceful_shutdown()
