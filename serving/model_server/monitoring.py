"""Prometheus metrics (``--monitoring_config_file``), named and shaped as
``tensorflow_model_server`` exports them on its REST port.

TF Serving's exporter (``tensorflow_serving/util/prometheus_exporter.cc``) turns a
TensorFlow metric ``/tensorflow/serving/request_count`` into ``:tensorflow:serving:request_count``
and writes one ``# TYPE`` line per metric, no ``# HELP``, counters under their own name
(no ``_total`` suffix) and histograms as ``_bucket{...,le=...}``/``_sum``/``_count``. The
metrics come from ``tensorflow_serving/servables/tensorflow/util.cc``:

* ``:tensorflow:serving:request_count{model_name,status}``: Predict, Classify and Regress
  requests, gRPC and REST, by canonical status code name (``OK``, ``NOT_FOUND``, ...);
* ``:tensorflow:serving:request_latency{model_name,API,entrypoint}``: successful requests'
  wall time in microseconds (``API="Predict"``, ``entrypoint="GRPC"``; REST
  ``API="predict"``, ``entrypoint="REST"``);
* ``:tensorflow:serving:runtime_latency{model_name,API,runtime}``: the signature call
  (``runtime="TF1"``: a session run, as this server's default runtime);

both histograms with TF Serving's buckets (10 us x 1.8^i, 33 bounds). From TensorFlow's
SavedModel loader (``tensorflow/cc/saved_model/loader.cc``), fed by the manager's
``on_load`` callback (:meth:`Metrics.saved_model_load`):

* ``:tensorflow:cc:saved_model:load_attempt_count{model_path,status}``: loads of each
  version folder, ``status`` ``success`` or ``fail``;
* ``:tensorflow:cc:saved_model:load_latency{model_path}``: a counter, the microseconds
  spent in successful loads (the warm-up replay is not part of a load).

This server adds
``:serving:model_version_available{model_name,version}`` (1 while a version is
AVAILABLE), read from the manager at scrape time. Each :class:`Metrics` has its own
``prometheus_client.CollectorRegistry``; the page is written from that registry's
metric families.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
import grpc
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from tensorflow_serving.apis import get_model_status_pb2

from serving.core.stats import Stats
from serving.model_server.config_protos import MonitoringConfig, read_text_proto

DEFAULT_PATH = "/monitoring/prometheus/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _buckets(scale: float = 10.0, growth: float = 1.8, count: int = 33) -> list[float]:
    bounds, bound = [], scale
    for _ in range(count):
        bounds.append(bound)
        bound *= growth
    return bounds


BUCKETS_US = _buckets()
_AVAILABLE = get_model_status_pb2.ModelVersionStatus.State.AVAILABLE


def read_monitoring_config(path: str) -> str | None:
    """The Prometheus path of a text ``MonitoringConfig`` file (:data:`DEFAULT_PATH` if
    unset), or None when ``prometheus_config.enable`` is false."""
    config = read_text_proto(path, MonitoringConfig, "monitoring_config_file")
    prometheus = config.prometheus_config
    if not prometheus.enable:
        return None
    return prometheus.path or DEFAULT_PATH


class _Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_US) + 1)  # the last: above every bound
        self.sum = 0.0
        self.count = 0

    def add(self, value: float) -> None:
        i = 0
        while i < len(BUCKETS_US) and value > BUCKETS_US[i]:
            i += 1
        self.counts[i] += 1
        self.sum += value
        self.count += 1


class Metrics:
    """Request and runtime metrics of one server, and their Prometheus page.

    Args:
        manager: Optional; its models' version states are exported at scrape time (the
            server sets it when the metrics are made before the manager).
    """

    def __init__(self, manager=None) -> None:
        self.manager = manager
        self._lock = threading.Lock()
        self._requests: collections.Counter[tuple[str, str]] = collections.Counter()
        self._load_attempts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._load_micros: collections.Counter[tuple[str]] = collections.Counter()
        self._request_latency: dict[tuple[str, str, str], _Histogram] = {}
        self._runtime_latency: dict[tuple[str, str, str], _Histogram] = {}
        self._current = threading.local()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    # ---- recording ----------------------------------------------------------------------

    def request(self, model_name: str, status: str, api: str, entrypoint: str,
                seconds: float) -> None:
        """One answered request; its latency counts only when ``status`` is ``OK``."""
        with self._lock:
            self._requests[(model_name, status)] += 1
            if status == "OK":
                key = (model_name, api, entrypoint)
                self._request_latency.setdefault(key, _Histogram()).add(seconds * 1e6)

    def runtime(self, model_name: str, api: str, seconds: float) -> None:
        with self._lock:
            key = (model_name, api, "TF1")
            self._runtime_latency.setdefault(key, _Histogram()).add(seconds * 1e6)

    def saved_model_load(self, name: str, version: int, path: str, ok: bool,
                         seconds: float) -> None:
        """One attempt to load the SavedModel in ``path`` (the manager's ``on_load``)."""
        with self._lock:
            self._load_attempts[(path, "success" if ok else "fail")] += 1
            if ok:
                self._load_micros[(path,)] += int(seconds * 1e6)

    def begin(self, model_name: str, api: str) -> None:
        """Names the request this thread handles, for :meth:`signature_call`."""
        self._current.request = (model_name, api)

    def signature_call(self, seconds: float) -> None:
        """The signature-call time of the request this thread handles (:meth:`begin`)."""
        current = getattr(self._current, "request", None)
        if current is not None:
            self.runtime(current[0], current[1], seconds)

    # ---- exporting ---------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        """The metric families (``prometheus_client`` collector protocol)."""
        with self._lock:
            requests = dict(self._requests)
            loads = {"load_attempt_count": (("model_path", "status"), dict(self._load_attempts)),
                     "load_latency": (("model_path",), dict(self._load_micros))}
            latencies = [(n, {k: (list(h.counts), h.sum, h.count) for k, h in d.items()})
                         for n, d in (("request_latency", self._request_latency),
                                      ("runtime_latency", self._runtime_latency))]
        yield _counter(":tensorflow:serving:request_count", ("model_name", "status"), requests)
        for short, (label_names, counts) in loads.items():
            yield _counter(f":tensorflow:cc:saved_model:{short}", label_names, counts)
        for short, cells in latencies:
            third = "entrypoint" if short == "request_latency" else "runtime"
            yield _histogram(f":tensorflow:serving:{short}", ("model_name", "API", third),
                             cells)
        if self.manager is not None:
            yield self._availability()

    def _availability(self) -> Metric:
        name = ":serving:model_version_available"
        family = Metric(name, "1 while a model version is AVAILABLE.", "gauge")
        for model_name in self.manager.model_names:
            try:
                states = self.manager.status(model_name)
            except Exception:  # noqa: BLE001 - no versions yet, or removed meanwhile
                states = []
            for s in states:
                family.add_sample(name, {"model_name": model_name, "version": str(s.version)},
                                  int(s.state == _AVAILABLE))
        return family

    def page(self) -> bytes:
        """The metrics in TF Serving's Prometheus text format."""
        lines = []
        for family in self.registry.collect():
            lines.append(f"# TYPE {family.name} {family.type}")
            for s in family.samples:
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items())
                lines.append(f"{s.name}{{{labels}}} {_number(s.value)}" if labels
                             else f"{s.name} {_number(s.value)}")
        return ("\n".join(lines) + "\n").encode()


def _counter(name: str, label_names: tuple[str, ...], counts: dict) -> Metric:
    family = Metric(name, "", "counter")
    for key, n in sorted(counts.items()):
        family.add_sample(name, dict(zip(label_names, key)), n)
    return family


def _histogram(name: str, label_names: tuple[str, ...], cells: dict) -> Metric:
    family = Metric(name, "", "histogram")
    for key, (counts, total, count) in sorted(cells.items()):
        labels = dict(zip(label_names, key))
        cumulative = 0
        for bound, n in zip([*BUCKETS_US, float("inf")], counts):
            cumulative += n
            family.add_sample(f"{name}_bucket", {**labels, "le": _number(bound)}, cumulative)
        family.add_sample(f"{name}_sum", labels, total)
        family.add_sample(f"{name}_count", labels, count)
    return family


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class MetricsStats(Stats):
    """A :class:`~serving.core.stats.Stats` whose signature-call times also go to
    :meth:`Metrics.signature_call` (the front ends append them to ``model_times``)."""

    def __init__(self, metrics: Metrics, keep: int = 200_000) -> None:
        super().__init__(keep)
        self.model_times = _ObservedDeque(metrics.signature_call, maxlen=keep)


class _ObservedDeque(collections.deque):
    def __init__(self, observe: Callable[[float], None], maxlen: int) -> None:
        super().__init__(maxlen=maxlen)
        self._observe = observe

    def append(self, value: float) -> None:
        super().append(value)
        self._observe(value)


#: gRPC methods counted, as TF Serving's ``prediction_service_impl.cc`` counts them.
_COUNTED = {f"/tensorflow.serving.PredictionService/{m}": m
            for m in ("Predict", "Classify", "Regress")}


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts gRPC Predict, Classify and Regress requests into :class:`Metrics` (their
    model name from the decoded request, their status from the handler's context)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        api = _COUNTED.get(handler_call_details.method)
        if handler is None or api is None or handler.unary_unary is None:
            return handler
        behavior, metrics = handler.unary_unary, self._metrics

        def counted(request, context):
            spec = getattr(request, "model_spec", None)
            model_name = getattr(spec, "name", "")
            metrics.begin(model_name, api)
            started = time.perf_counter()
            status = "UNKNOWN"
            try:
                response = behavior(request, context)
                status = "OK"
                return response
            except BaseException:
                code = context.code()
                status = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
                raise
            finally:
                metrics.request(model_name, status, api, "GRPC",
                                time.perf_counter() - started)

        return grpc.unary_unary_rpc_method_handler(
            counted, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)
