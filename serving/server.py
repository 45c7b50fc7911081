"""A TF Serving-compatible model server for SavedModels: ``python -m serving.server``.

Serves the gRPC API of ``tensorflow-serving-api`` (``PredictionService``: ``Predict``,
``GetModelMetadata``; ``Classify``/``Regress``/``MultiInference`` answer UNIMPLEMENTED;
``ModelService``: ``GetModelStatus``, ``HandleReloadConfigRequest``) and TF Serving's REST
API, from model folders in TF Serving's layout ``<model_base_path>/<integer version>/``.
It knows nothing about tpr-keras: any SavedModel with signatures can be served, and stock
``tensorflow_model_server`` can replace it with the same flags. Like that server, it loads each
version's MetaGraph into its own ``tf.compat.v1.Session`` and runs a signature by its
SignatureDef tensor names (``--servable_runtime=function`` uses ``tf.saved_model.load``
instead)::

    python -m serving.server --port=8500 --rest_api_port=8501 \\
        --model_name=babi --model_base_path=/abs/path/export/babi

Semantics follow TF Serving: an empty signature name means ``serving_default``; an unset
version means the latest loaded one; NOT_FOUND for an unknown model, version or label;
FAILED_PRECONDITION for an unknown signature; INVALID_ARGUMENT for inputs whose names,
dtypes or shapes do not match the SignatureDef (the message says what was expected).
Versions: every ``--file_system_poll_wait_seconds`` the base paths are listed; a new
version is loaded completely (and warmed up with ``assets.extra/tf_serving_warmup_requests``
if present) before it is published, then versions the policy no longer wants are dropped
from the table. Requests hold a reference to the version they started on, so requests in
flight during a swap finish on the old version. SIGTERM/SIGINT: stop accepting, let
in-flight requests finish (``--shutdown_grace_seconds``), exit 0.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import collections
import concurrent.futures
import contextlib
import dataclasses
import http.server
import json
import logging
import math
import os
import queue
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

#: TensorFlow's start-up lines on a machine without a GPU (CUDA probing, CPU-feature note,
#: absl's pre-initialisation banner): kept out of the server's log unless
#: TPR_KERAS_TF_LOGS=1. (This module imports nothing from tpr_keras; same list as
#: tpr_keras.cli.)
_STARTUP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|cudart_stub\.cc|cpu_feature_guard\.cc"
    r"|To enable the following instructions|cuInit|Could not find cuda drivers"
    r"|Unable to register cu(DNN|FFT|BLAS) factory|computation placer already registered"
    r"|TF-TRT Warning|oneDNN custom operations are on")


@contextlib.contextmanager
def _quiet_tensorflow_start():
    if "tensorflow" in sys.modules or os.environ.get("TPR_KERAS_TF_LOGS", "0") not in ("", "0"):
        yield
        return
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().decode("utf-8", "replace").splitlines(True)
                    if not _STARTUP_NOISE.search(line)]
            if kept:
                sys.stderr.write("".join(kept))


with _quiet_tensorflow_start():
    import tensorflow as tf  # noqa: E402

    tf.config.list_physical_devices("GPU")  # CUDA probing; the runtime is not started yet

import grpc  # noqa: E402
import numpy as np  # noqa: E402
from google.protobuf import json_format, text_format  # noqa: E402
from tensorflow.core.framework import tensor_pb2, types_pb2  # noqa: E402
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, saved_model_pb2  # noqa: E402
from tensorflow_serving.apis import (  # noqa: E402
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_log_pb2,
    prediction_service_pb2_grpc,
)
from tensorflow_serving.config import model_server_config_pb2  # noqa: E402

__all__ = ["ModelManager", "ModelServer", "ServingError", "main", "parse_model_config"]

log = logging.getLogger("serving.server")

DEFAULT_SIGNATURE = "serving_default"
WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
_CODE_BY_VALUE = {c.value[0]: c for c in grpc.StatusCode}
_STATE = get_model_status_pb2.ModelVersionStatus.State
_HTTP_STATUS = {  # TF Serving's http_server.cc mapping.
    grpc.StatusCode.OK: 200, grpc.StatusCode.CANCELLED: 499, grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404, grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403, grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400, grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400, grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500, grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500, grpc.StatusCode.UNAUTHENTICATED: 401,
}


class ServingError(Exception):
    """A request error with its gRPC status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _dtype_name(enum: int) -> str:
    return types_pb2.DataType.Name(enum) if enum in types_pb2.DataType.values() else str(enum)


def _shape_str(dims: Sequence[int] | None) -> str:
    return "unknown rank" if dims is None else "[" + ", ".join(str(d) for d in dims) + "]"


# --------------------------------------------------------------------------------------
# Servables
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class TensorSpecInfo:
    """One signature input or output: its dtype enum and shape (-1 unknown; None rank)."""

    dtype: int
    shape: tuple[int, ...] | None

    @classmethod
    def from_tensor_info(cls, info: meta_graph_pb2.TensorInfo) -> TensorSpecInfo:
        if info.tensor_shape.unknown_rank:
            return cls(info.dtype, None)
        return cls(info.dtype, tuple(int(d.size) for d in info.tensor_shape.dim))

    def describe(self) -> str:
        return f"{_dtype_name(self.dtype)} {_shape_str(self.shape)}"


@dataclasses.dataclass
class Signature:
    """A signature of a loaded version: how to run it, and its SignatureDef.

    ``run`` maps input arrays to output arrays (all outputs, or the names asked for).
    """

    name: str
    run_fn: Callable[[Mapping[str, np.ndarray], Sequence[str]], dict[str, np.ndarray]]
    signature_def: meta_graph_pb2.SignatureDef
    inputs: dict[str, TensorSpecInfo]
    outputs: dict[str, TensorSpecInfo]
    batcher: Any = None

    def run(self, inputs: Mapping[str, np.ndarray],
            outputs: Sequence[str] = ()) -> dict[str, np.ndarray]:
        return self.run_fn(inputs, tuple(outputs) or tuple(self.outputs))

    def expected_inputs(self) -> str:
        return ", ".join(f"{k} ({v.describe()})" for k, v in sorted(self.inputs.items()))

    @property
    def batchable(self) -> bool:
        """All inputs and outputs have a leading batch dimension of unknown size."""
        specs = list(self.inputs.values()) + list(self.outputs.values())
        return bool(self.inputs) and all(s.shape and s.shape[0] == -1 for s in specs)


RUNTIMES = ("session", "function")


class _OwnedSession:
    """A version's session, closed when the last object using it is gone.

    The servable and each of its signatures hold one: when a version is unloaded, its
    session closes after the last request (or batch) still running on it has finished.
    """

    def __init__(self, session: tf.compat.v1.Session) -> None:
        self.session = session

    def __del__(self) -> None:
        self.session.close()


class _SessionRunner:
    """Runs one SignatureDef in a ``tf.compat.v1.Session``, as ``tensorflow_model_server`` does.

    Feeds and fetches are the SignatureDef's tensor names. Each set of requested outputs
    gets one callable made from ``CallableOptions`` (what ``Session::MakeCallable`` does in
    C++): a call hands the arrays straight to the runtime, without ``Session.run``'s
    per-call parsing of feeds and fetches (half the time of a TF2 signature call for a
    small model, ``results/serving.md``).
    """

    def __init__(self, owned: _OwnedSession, sdef: meta_graph_pb2.SignatureDef) -> None:
        self._owned = owned
        self._session = owned.session
        self._input_names = sorted(sdef.inputs)
        self._feeds = [sdef.inputs[k].name for k in self._input_names]
        self._output_tensor = {k: v.name for k, v in sdef.outputs.items()}
        self._callables: dict[tuple[str, ...], Callable[..., list[np.ndarray]]] = {}
        self._lock = threading.Lock()

    def _make_callable(self, outputs: tuple[str, ...]) -> Callable[..., list[np.ndarray]]:
        fetches = [self._output_tensor[k] for k in outputs]
        make = getattr(self._session, "_make_callable_from_options", None)
        if make is None:  # not in this TensorFlow: the public, slower path
            graph = self._session.graph
            return self._session.make_callable(
                [graph.get_tensor_by_name(n) for n in fetches],
                [graph.get_tensor_by_name(n) for n in self._feeds])
        options = config_pb2.CallableOptions()
        options.feed.extend(self._feeds)
        options.fetch.extend(fetches)
        return make(options)

    def __call__(self, inputs: Mapping[str, np.ndarray],
                 outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
        fn = self._callables.get(outputs)
        if fn is None:
            with self._lock:
                fn = self._callables.get(outputs)
                if fn is None:
                    fn = self._make_callable(outputs)
                    self._callables = {**self._callables, outputs: fn}
        return dict(zip(outputs, fn(*[inputs[k] for k in self._input_names])))


class _FunctionRunner:
    """Runs one signature through ``tf.saved_model.load``'s TF2 signature function."""

    def __init__(self, fn: Callable[..., Mapping[str, tf.Tensor]]) -> None:
        self._fn = fn

    def __call__(self, inputs: Mapping[str, np.ndarray],
                 outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
        result = self._fn(**inputs)
        return {k: result[k].numpy() for k in outputs}


class Servable:
    """One loaded version of a model.

    Args:
        name: The model's name.
        version: The version number.
        path: The version folder (a SavedModel).
        tags: MetaGraph tags to load.
        runtime: ``"session"`` (default) loads the MetaGraph into its own
            ``tf.compat.v1.Session`` and runs signatures by their SignatureDef tensor names,
            the way ``tensorflow_model_server`` runs them; ``"function"`` uses
            ``tf.saved_model.load`` and its TF2 signature functions.
        session_config: ``ConfigProto`` for the session (thread pools).
    """

    def __init__(self, name: str, version: int, path: str, tags: Sequence[str],
                 runtime: str = "session",
                 session_config: tf.compat.v1.ConfigProto | None = None) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
        self.name = name
        self.version = version
        self.path = path
        self.runtime = runtime
        self.signature_def_map = get_model_metadata_pb2.SignatureDefMap()
        self.signatures: dict[str, Signature] = {}
        self._owned: _OwnedSession | None = None
        if runtime == "session":
            graph = tf.Graph()
            self._owned = _OwnedSession(tf.compat.v1.Session(graph=graph, config=session_config))
            with graph.as_default(), _tf_logging_at(logging.ERROR):
                meta = tf.compat.v1.saved_model.loader.load(self._owned.session, list(tags),
                                                            path)
            runners = {k: _SessionRunner(self._owned, sdef)
                       for k, sdef in meta.signature_def.items()
                       if not k.startswith("__")}  # "__saved_model_init_op" is not servable
        else:
            meta = _read_meta_graph(path, tags)
            loaded = tf.saved_model.load(path, tags=list(tags))
            runners = {k: _FunctionRunner(loaded.signatures[k]) for k in meta.signature_def
                       if k in loaded.signatures}
            self._loaded = loaded
        for key, sdef in meta.signature_def.items():
            self.signature_def_map.signature_def[key].CopyFrom(sdef)
            if key in runners:
                self.signatures[key] = Signature(
                    key, runners[key], sdef,
                    {k: TensorSpecInfo.from_tensor_info(v) for k, v in sdef.inputs.items()},
                    {k: TensorSpecInfo.from_tensor_info(v) for k, v in sdef.outputs.items()})

    def signature(self, name: str) -> Signature:
        sig = self.signatures.get(name or DEFAULT_SIGNATURE)
        if sig is None:
            raise ServingError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f'Serving signature key "{name or DEFAULT_SIGNATURE}" not found in model '
                f"'{self.name}' version {self.version}; signatures: {sorted(self.signatures)}")
        return sig

    @property
    def _session(self) -> tf.compat.v1.Session | None:
        return self._owned.session if self._owned is not None else None


@contextlib.contextmanager
def _tf_logging_at(level: int):
    """Sets TensorFlow's Python logger to ``level`` for a block (to silence the TF1
    loader's deprecation warning)."""
    logger = tf.get_logger()
    previous = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _read_meta_graph(path: str, tags: Sequence[str]) -> meta_graph_pb2.MetaGraphDef:
    pb = os.path.join(path, "saved_model.pb")
    sm = saved_model_pb2.SavedModel()
    if os.path.exists(pb):
        with open(pb, "rb") as f:
            sm.ParseFromString(f.read())
    else:
        with open(os.path.join(path, "saved_model.pbtxt"), encoding="utf-8") as f:
            text_format.Parse(f.read(), sm)
    for meta in sm.meta_graphs:
        if set(meta.meta_info_def.tags) == set(tags):
            return meta
    raise ValueError(f"{path}: no MetaGraph with tags {sorted(tags)}; found "
                     f"{[sorted(m.meta_info_def.tags) for m in sm.meta_graphs]}")


# --------------------------------------------------------------------------------------
# Tensors and validation
# --------------------------------------------------------------------------------------


def tensor_proto_to_array(name: str, proto: tensor_pb2.TensorProto) -> np.ndarray:
    """TensorProto -> numpy; malformed protos raise INVALID_ARGUMENT."""
    try:
        if proto.dtype == types_pb2.DT_STRING:
            shape = [d.size for d in proto.tensor_shape.dim]
            values = list(proto.string_val)
            n = math.prod(shape)
            if len(values) == 1 and n != 1:
                values = values * n
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
            return arr.reshape(shape)
        return tf.make_ndarray(proto)
    except Exception as exc:  # noqa: BLE001 - any malformed proto
        raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                           f"input '{name}': malformed TensorProto ({exc})") from None


def array_to_tensor_proto(arr: np.ndarray,
                          proto: tensor_pb2.TensorProto | None = None) -> tensor_pb2.TensorProto:
    """numpy -> TensorProto (written into ``proto`` if given, e.g. a response field)."""
    if proto is None:
        proto = tensor_pb2.TensorProto()
    if arr.dtype == object or arr.dtype.kind in "SU":
        proto.dtype = types_pb2.DT_STRING
        values = arr.ravel().tolist()
        if arr.dtype.kind == "U":
            values = [v.encode("utf-8") for v in values]
        proto.string_val.extend(values)
    else:
        field = _VALUE_FIELD.get(arr.dtype)
        if field is None:  # complex, half and other rare dtypes
            proto.CopyFrom(tf.make_tensor_proto(arr))
            return proto
        proto.dtype = tf.as_dtype(arr.dtype).as_datatype_enum
        getattr(proto, field).extend(arr.ravel().tolist())
    dims = proto.tensor_shape.dim
    for d in arr.shape:
        dims.add(size=d)
    return proto


# Typed value fields, as tensorflow_model_server fills Predict outputs (``AsProtoField``):
# clients that read ``float_val`` directly work against both servers.
_VALUE_FIELD = {np.dtype(k): v for k, v in (
    (np.float32, "float_val"), (np.float64, "double_val"), (np.int32, "int_val"),
    (np.int16, "int_val"), (np.int8, "int_val"), (np.uint8, "int_val"),
    (np.uint16, "int_val"), (np.int64, "int64_val"), (np.uint32, "uint32_val"),
    (np.uint64, "uint64_val"), (np.bool_, "bool_val"))}


def _dtype_enum(arr: np.ndarray) -> int:
    if arr.dtype == object or arr.dtype.kind in "SU":
        return types_pb2.DT_STRING
    return tf.as_dtype(arr.dtype).as_datatype_enum


def validate_inputs(model: str, sig: Signature, inputs: Mapping[str, Any],
                    dtypes: Mapping[str, int], shapes: Mapping[str, Sequence[int]]) -> None:
    """Checks names, dtypes and shapes against the SignatureDef (INVALID_ARGUMENT)."""
    extra = sorted(set(inputs) - set(sig.inputs))
    missing = sorted(set(sig.inputs) - set(inputs))
    if extra or missing:
        parts = []
        if extra:
            parts.append(f"unexpected input(s) {extra}")
        if missing:
            parts.append(f"missing input(s) {missing}")
        raise ServingError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"Request inputs do not match signature '{sig.name}' of model '{model}': "
            f"{'; '.join(parts)}. Expected inputs: {sig.expected_inputs()}")
    for name, spec in sig.inputs.items():
        dtype = dtypes[name]
        if dtype != spec.dtype:
            raise ServingError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"input '{name}': expected dtype {_dtype_name(spec.dtype)}, got "
                f"{_dtype_name(dtype)}. Expected inputs: {sig.expected_inputs()}")
        shape = shapes[name]
        if spec.shape is not None and (
                len(shape) != len(spec.shape)
                or any(e not in (-1, g) for e, g in zip(spec.shape, shape))):
            raise ServingError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"input '{name}': expected shape {_shape_str(spec.shape)} (-1: any size), "
                f"got {_shape_str(shape)}. Expected inputs: {sig.expected_inputs()}")


def _check_output_filter(sig: Signature, output_filter: Iterable[str]) -> list[str]:
    names = list(output_filter) or list(sig.outputs)
    unknown = sorted(set(names) - set(sig.outputs))
    if unknown:
        raise ServingError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"output tensor alias(es) {unknown} not found in signature '{sig.name}'. "
            f"Outputs expected to be in the set {sorted(sig.outputs)}")
    return names


def _run(sig: Signature, inputs: Mapping[str, np.ndarray],
         outputs: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """Runs the signature; TF errors keep their code (TF and gRPC codes are equal)."""
    try:
        if sig.batcher is not None:
            result = sig.batcher.run(inputs)
            return {k: result[k] for k in outputs} if outputs else result
        return sig.run(inputs, outputs)
    except tf.errors.OpError as exc:
        raise ServingError(_CODE_BY_VALUE.get(exc.error_code, grpc.StatusCode.INTERNAL),
                           exc.message) from None


# --------------------------------------------------------------------------------------
# Server-side batching (like tensorflow_model_server --enable_batching)
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class BatchingParameters:
    """The fields of TF Serving's BatchingParameters this server uses."""

    max_batch_size: int = 128
    batch_timeout_micros: int = 0  # 0: batch what queued while the previous batch ran
    num_batch_threads: int = 1
    max_enqueued_batches: int = 100

    @classmethod
    def parse(cls, text: str) -> BatchingParameters:
        """Reads TF Serving's text format (``max_batch_size { value: 32 }`` ...)."""
        params = cls()
        for field in dataclasses.fields(cls):
            m = re.search(rf"\b{field.name}\s*\{{\s*value\s*:\s*(\d+)\s*\}}", text)
            if m:
                setattr(params, field.name, int(m.group(1)))
        return params


class _Task:
    __slots__ = ("inputs", "size", "done", "result", "error")

    def __init__(self, inputs: Mapping[str, np.ndarray], size: int) -> None:
        self.inputs = inputs
        self.size = size
        self.done = threading.Event()
        self.result: dict[str, np.ndarray] | None = None
        self.error: BaseException | None = None


class Batcher:
    """Merges concurrent calls of one signature along the batch axis.

    A batch thread takes the first waiting request, waits up to ``batch_timeout_micros``
    for more (up to ``max_batch_size`` rows), concatenates the inputs, calls the
    signature once and splits the outputs. Requests larger than ``max_batch_size`` run
    alone. If a merged call fails, its requests are retried one by one, so one bad
    request cannot fail its neighbours.
    """

    def __init__(self, sig: Signature, params: BatchingParameters) -> None:
        self._run = sig.run
        self._params = params
        self._queue: queue.Queue[_Task] = queue.Queue(
            maxsize=params.max_enqueued_batches * params.max_batch_size)
        self._stop = threading.Event()
        self._lock = threading.Lock()  # no put after stop(): the threads drain the queue
        self._threads = [threading.Thread(target=self._loop, daemon=True,
                                          name=f"batch-{sig.name}-{i}")
                         for i in range(max(1, params.num_batch_threads))]
        for t in self._threads:
            t.start()

    def _call(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._run(inputs)

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        sizes = {v.shape[0] for v in inputs.values()}
        if len(sizes) != 1:
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               "with batching, all inputs need the same batch size (dim 0); "
                               f"got {({k: v.shape[0] for k, v in inputs.items()})}")
        size = sizes.pop()
        if size > self._params.max_batch_size or size == 0:
            return self._call(inputs)
        task = _Task(inputs, size)
        with self._lock:
            if self._stop.is_set():
                return self._call(inputs)
            try:
                self._queue.put_nowait(task)
            except queue.Full:
                raise ServingError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   "the batching queue is full") from None
        task.done.wait()
        if task.error is not None:
            raise task.error
        assert task.result is not None
        return task.result

    def _loop(self) -> None:
        carry: _Task | None = None
        while not self._stop.is_set() or carry is not None or not self._queue.empty():
            if carry is not None:
                first, carry = carry, None
            else:
                try:
                    first = self._queue.get(timeout=0.1)
                except queue.Empty:
                    continue
            tasks, rows = [first], first.size
            deadline = time.perf_counter() + self._params.batch_timeout_micros / 1e6
            while rows < self._params.max_batch_size:
                try:
                    left = deadline - time.perf_counter()
                    task = self._queue.get_nowait() if left <= 0 else self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if rows + task.size > self._params.max_batch_size:
                    carry = task
                    break
                tasks.append(task)
                rows += task.size
            self._execute(tasks)

    def _execute(self, tasks: list[_Task]) -> None:
        if len(tasks) == 1:
            self._execute_one(tasks[0])
            return
        try:
            merged = {k: np.concatenate([t.inputs[k] for t in tasks]) for k in tasks[0].inputs}
            out = self._call(merged)
            start = 0
            for t in tasks:
                t.result = {k: v[start:start + t.size] for k, v in out.items()}
                start += t.size
                t.done.set()
        except Exception:  # noqa: BLE001 - retry one by one, each gets its own error
            for t in tasks:
                if not t.done.is_set():
                    self._execute_one(t)

    def _execute_one(self, task: _Task) -> None:
        try:
            task.result = self._call(task.inputs)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
            task.error = exc
        task.done.set()

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
        for t in self._threads:
            t.join(timeout=5)


# --------------------------------------------------------------------------------------
# Model manager: versions, polling, swaps
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class _VersionState:
    state: int
    error_code: grpc.StatusCode = grpc.StatusCode.OK
    error_message: str = ""
    failures: int = 0


class _Model:
    """One configured model: its loaded versions (copy-on-write dict) and their states."""

    def __init__(self, config: model_server_config_pb2.ModelConfig) -> None:
        self.config = config
        self.servables: dict[int, Servable] = {}  # replaced, never mutated
        self.states: dict[int, _VersionState] = {}

    def latest(self) -> Servable | None:
        servables = self.servables
        return servables[max(servables)] if servables else None


class ModelManager:
    """Loads model versions from disk, keeps them current, and finds them for requests.

    Args:
        configs: The models (TF Serving ``ModelConfig`` protos).
        tags: MetaGraph tags to load (``serve``).
        batching: If set, concurrent Predict calls are batched with these parameters.
        max_num_load_retries: Attempts to load a version before giving up on it.
        runtime: How versions run their signatures (see ``Servable``): ``"session"``
            (default, as ``tensorflow_model_server``) or ``"function"``.
        session_config: ``ConfigProto`` for each version's session (thread pools).
    """

    def __init__(self, configs: Sequence[model_server_config_pb2.ModelConfig],
                 tags: Sequence[str] = ("serve",), batching: BatchingParameters | None = None,
                 max_num_load_retries: int = 5, runtime: str = "session",
                 session_config: tf.compat.v1.ConfigProto | None = None) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
        self._tags = list(tags)
        self._runtime = runtime
        self._session_config = session_config
        self._batching = batching
        self._max_retries = max_num_load_retries
        self._models: dict[str, _Model] = {}
        self._lock = threading.Lock()  # config changes and polls, never requests
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reload_config(configs)

    # ---- requests -----------------------------------------------------------------

    def model(self, name: str) -> _Model:
        model = self._models.get(name)
        if model is None:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Servable not found for request: model '{name}' is not served "
                               f"(models: {sorted(self._models)})")
        return model

    @staticmethod
    def _labelled_version(model: _Model, version: int | None, label: str | None) -> int | None:
        """``version``, or the version ``label`` names (NOT_FOUND if it names none)."""
        if not label:
            return version
        labels = model.config.version_labels
        if label not in labels:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Unrecognized servable version label '{label}' of model "
                               f"'{model.config.name}' (labels: {sorted(labels)})")
        return int(labels[label])

    def servable(self, name: str, version: int | None = None,
                 label: str | None = None) -> Servable:
        """The version a request asks for: latest, a number, or a label."""
        model = self.model(name)
        version = self._labelled_version(model, version, label)
        servables = model.servables
        if version is None:
            servable = model.latest()
            if servable is None:
                raise ServingError(grpc.StatusCode.NOT_FOUND,
                                   f"Servable not found for request: Latest({name}): no version "
                                   "is loaded yet")
            return servable
        servable = servables.get(version)
        if servable is None:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Servable not found for request: Specific({name}, {version}); "
                               f"loaded versions: {sorted(servables)}")
        return servable

    def status(self, name: str, version: int | None = None,
               label: str | None = None) -> list[get_model_status_pb2.ModelVersionStatus]:
        model = self.model(name)
        version = self._labelled_version(model, version, label)
        states = dict(model.states)
        if version is not None:
            if version not in states:
                raise ServingError(grpc.StatusCode.NOT_FOUND,
                                   f"Could not find version {version} of model {name}")
            states = {version: states[version]}
        elif not states:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Could not find any versions of model {name}")
        out = []
        for v in sorted(states):
            s = states[v]
            status = get_model_status_pb2.ModelVersionStatus(version=v, state=s.state)
            status.status.error_code = s.error_code.value[0]
            status.status.error_message = s.error_message
            out.append(status)
        return out

    @property
    def model_names(self) -> list[str]:
        return sorted(self._models)

    # ---- configuration and polling --------------------------------------------------

    def reload_config(self, configs: Sequence[model_server_config_pb2.ModelConfig]) -> None:
        """Serves exactly ``configs``: new models are added, removed ones dropped."""
        names = [c.name for c in configs]
        if len(set(names)) != len(names) or not all(names):
            raise ValueError(f"model names must be non-empty and unique, got {names}")
        for c in configs:
            if c.model_platform not in ("", "tensorflow"):
                raise ValueError(f"model '{c.name}': unsupported model_platform "
                                 f"'{c.model_platform}' (only 'tensorflow')")
            if not c.base_path:
                raise ValueError(f"model '{c.name}': base_path is required")
        with self._lock:
            models = {}
            for c in configs:
                old = self._models.get(c.name)
                if old is not None and old.config.base_path == c.base_path:
                    old.config = c
                    models[c.name] = old
                else:
                    models[c.name] = _Model(c)
            dropped = [m for n, m in self._models.items() if models.get(n) is not m]
            self._models = models
        for m in dropped:
            self._stop_batchers(m.servables.values())
        self.poll()

    def _aspired(self, model: _Model, on_disk: list[int]) -> list[int]:
        policy = model.config.model_version_policy
        kind = policy.WhichOneof("policy_choice")
        if kind == "all":
            return on_disk
        if kind == "specific":
            return sorted(set(on_disk) & set(policy.specific.versions))
        n = policy.latest.num_versions if kind == "latest" and policy.latest.num_versions else 1
        return sorted(on_disk)[-n:]

    def poll(self) -> None:
        """Lists every base path once; loads new versions, then unloads unwanted ones."""
        with self._lock:
            for model in list(self._models.values()):
                try:
                    self._poll_model(model)
                except Exception:  # noqa: BLE001 - a bad model must not stop the others
                    log.exception("polling model %s failed", model.config.name)

    def _poll_model(self, model: _Model) -> None:
        base = model.config.base_path
        try:
            names = os.listdir(base)
        except OSError as exc:
            log.warning("model %s: cannot list %s (%s); keeping loaded versions",
                        model.config.name, base, exc)
            return
        on_disk = sorted(int(n) for n in names if n.isdigit() and int(n) > 0 and (
            os.path.isfile(os.path.join(base, n, "saved_model.pb"))
            or os.path.isfile(os.path.join(base, n, "saved_model.pbtxt"))))
        for _ in range(len(on_disk) + 1):  # bounded: each extra round gives up on a version
            # Versions that failed every load attempt drop out, so "latest" falls back to
            # the newest loadable version instead of serving nothing.
            usable = [v for v in on_disk if not self._gave_up(model, v)]
            aspired = self._aspired(model, usable)
            if not aspired:
                if not model.servables:
                    log.warning("model %s: no loadable version under %s", model.config.name,
                                base)
                return  # keep serving what is loaded rather than going dark
            for version in sorted(set(aspired) - set(model.servables), reverse=True):
                self._load(model, version, os.path.join(base, str(version)))
            if not any(self._gave_up(model, v) for v in aspired):
                break
        unwanted = set(model.servables) - set(aspired)
        if unwanted and any(v in model.servables for v in aspired):
            kept = {v: s for v, s in model.servables.items() if v not in unwanted}
            for v in unwanted:
                model.states[v] = _VersionState(_STATE.UNLOADING)
            gone = [model.servables[v] for v in unwanted]
            model.servables = kept  # atomic swap; in-flight requests keep their reference
            self._stop_batchers(gone)
            for v in unwanted:
                model.states[v] = _VersionState(_STATE.END)
                log.info("model %s: unloaded version %d", model.config.name, v)

    def _gave_up(self, model: _Model, version: int) -> bool:
        state = model.states.get(version)
        return state is not None and state.failures >= self._max_retries and (
            version not in model.servables)

    def _load(self, model: _Model, version: int, path: str) -> None:
        name = model.config.name
        previous = model.states.get(version)
        failures = previous.failures if previous else 0
        model.states[version] = _VersionState(_STATE.LOADING, failures=failures)
        started = time.perf_counter()
        try:
            servable = Servable(name, version, path, self._tags, self._runtime,
                                self._session_config)
            warmed = _warm_up(servable)
        except Exception as exc:  # noqa: BLE001 - report in GetModelStatus, retry next poll
            failures += 1
            log.error("model %s: loading version %d failed (attempt %d of %d): %s",
                      name, version, failures, self._max_retries, exc)
            model.states[version] = _VersionState(
                _STATE.END, grpc.StatusCode.UNKNOWN if failures >= self._max_retries
                else grpc.StatusCode.UNAVAILABLE, f"loading failed: {exc}", failures)
            return
        if self._batching is not None:
            for sig in servable.signatures.values():
                if sig.batchable:
                    sig.batcher = Batcher(sig, self._batching)
        servables = dict(model.servables)
        servables[version] = servable
        model.servables = servables  # publish atomically
        model.states[version] = _VersionState(_STATE.AVAILABLE)
        log.info("model %s: version %d available (%s; loaded in %.2f s, %d warm-up requests)",
                 name, version, path, time.perf_counter() - started, warmed)

    @staticmethod
    def _stop_batchers(servables: Iterable[Servable]) -> None:
        for s in servables:
            for sig in s.signatures.values():
                if sig.batcher is not None:
                    threading.Thread(target=sig.batcher.stop, daemon=True).start()

    def start_polling(self, interval_s: float) -> None:
        """Polls every ``interval_s`` seconds in a daemon thread (<= 0: never)."""
        if interval_s <= 0 or self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval_s):
                self.poll()

        self._thread = threading.Thread(target=loop, daemon=True, name="version-poller")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        for m in self._models.values():
            for s in m.servables.values():
                for sig in s.signatures.values():
                    if sig.batcher is not None:
                        sig.batcher.stop()


def _warm_up(servable: Servable) -> int:
    """Replays TF Serving's warm-up file (PredictionLog TFRecords), if the export has one."""
    path = os.path.join(servable.path, WARMUP_FILE)
    if not os.path.exists(path):
        return 0
    count = 0
    for record in tf.data.TFRecordDataset(path).take(1000):
        entry = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        if entry.WhichOneof("log_type") != "predict_log":
            continue
        request = entry.predict_log.request
        sig = servable.signature(request.model_spec.signature_name)
        inputs = {k: tensor_proto_to_array(k, v) for k, v in request.inputs.items()}
        validate_inputs(servable.name, sig, inputs, {k: _dtype_enum(v) for k, v in inputs.items()},
                        {k: v.shape for k, v in inputs.items()})
        _run(sig, inputs)
        count += 1
    return count


# --------------------------------------------------------------------------------------
# Request statistics
# --------------------------------------------------------------------------------------


class Stats:
    """Request counts of every API and times of the last Predict requests (seconds),
    for the shutdown summary.

    ``requests``: answered requests per API (``"gRPC Predict"``, ``"REST predict"``,
    ``"gRPC GetModelStatus"``, ``"REST status"``, ...), errors included;
    ``times``: the whole Predict handler (request parsed -> response built), gRPC and
    REST, successes only; ``model_times``: the part spent in the signature call (incl.
    batching waits); ``errors``: failed requests per status code, every API.
    """

    def __init__(self, keep: int = 200_000) -> None:
        self.times: collections.deque[float] = collections.deque(maxlen=keep)
        self.model_times: collections.deque[float] = collections.deque(maxlen=keep)
        self.errors: collections.Counter[str] = collections.Counter()
        self.requests: collections.Counter[str] = collections.Counter()

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


# --------------------------------------------------------------------------------------
# gRPC services
# --------------------------------------------------------------------------------------


def _version_of(spec) -> int | None:
    return spec.version.value if spec.HasField("version") else None


def _grpc_call(fn: Callable[[], Any], context: grpc.ServicerContext, stats: Stats | None = None,
               api: str | None = None):
    if stats is not None and api is not None:
        stats.requests[api] += 1
    try:
        return fn()
    except ServingError as exc:
        if stats is not None:
            stats.errors[exc.code.name] += 1
        context.abort(exc.code, exc.message)
    except Exception as exc:  # noqa: BLE001 - never crash a handler thread
        log.error("internal error: %s", traceback.format_exc())
        if stats is not None:
            stats.errors["INTERNAL"] += 1
        context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    def __init__(self, manager: ModelManager, stats: Stats) -> None:
        self._manager = manager
        self._stats = stats

    def predict(self, request: predict_pb2.PredictRequest) -> predict_pb2.PredictResponse:
        spec = request.model_spec
        servable = self._manager.servable(spec.name, _version_of(spec), spec.version_label)
        sig = servable.signature(spec.signature_name)
        dtypes = {k: v.dtype for k, v in request.inputs.items()}
        shapes = {k: [d.size for d in v.tensor_shape.dim] for k, v in request.inputs.items()}
        validate_inputs(spec.name, sig, request.inputs, dtypes, shapes)
        names = _check_output_filter(sig, request.output_filter)
        inputs = {k: tensor_proto_to_array(k, v) for k, v in request.inputs.items()}
        started = time.perf_counter()
        outputs = _run(sig, inputs, names)
        model_time = time.perf_counter() - started
        response = predict_pb2.PredictResponse()
        response.model_spec.name = spec.name
        response.model_spec.version.value = servable.version
        response.model_spec.signature_name = sig.name
        for name in names:
            array_to_tensor_proto(outputs[name], response.outputs[name])
        self._stats.model_times.append(model_time)
        return response

    def Predict(self, request, context):  # noqa: N802 - gRPC method name
        started = time.perf_counter()
        response = _grpc_call(lambda: self.predict(request), context, self._stats,
                              "gRPC Predict")
        self._stats.times.append(time.perf_counter() - started)  # successes only
        return response

    def metadata(self, request: get_model_metadata_pb2.GetModelMetadataRequest):
        spec = request.model_spec
        fields = list(request.metadata_field)
        if not fields:
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               "GetModelMetadataRequest must specify at least one "
                               "metadata_field (supported: signature_def)")
        unsupported = [f for f in fields if f != "signature_def"]
        if unsupported:
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               f"Metadata field(s) {unsupported} not supported "
                               "(supported: signature_def)")
        servable = self._manager.servable(spec.name, _version_of(spec), spec.version_label)
        response = get_model_metadata_pb2.GetModelMetadataResponse()
        response.model_spec.name = spec.name
        response.model_spec.version.value = servable.version
        response.metadata["signature_def"].Pack(servable.signature_def_map)
        return response

    def GetModelMetadata(self, request, context):  # noqa: N802
        return _grpc_call(lambda: self.metadata(request), context, self._stats,
                          "gRPC GetModelMetadata")

    def _unimplemented(self, method: str, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      f"{method} is not implemented by this server; it serves Predict, "
                      "GetModelMetadata and GetModelStatus")

    def Classify(self, request, context):  # noqa: N802
        self._unimplemented("Classify", context)

    def Regress(self, request, context):  # noqa: N802
        self._unimplemented("Regress", context)

    def MultiInference(self, request, context):  # noqa: N802
        self._unimplemented("MultiInference", context)


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    def __init__(self, manager: ModelManager, stats: Stats | None = None) -> None:
        self._manager = manager
        self._stats = stats

    def GetModelStatus(self, request, context):  # noqa: N802
        def run():
            spec = request.model_spec
            response = get_model_status_pb2.GetModelStatusResponse()
            response.model_version_status.extend(
                self._manager.status(spec.name, _version_of(spec), spec.version_label))
            return response
        return _grpc_call(run, context, self._stats, "gRPC GetModelStatus")

    def HandleReloadConfigRequest(self, request, context):  # noqa: N802
        def run():
            config = request.config
            if config.WhichOneof("config") != "model_config_list":
                raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                                   "only model_config_list configs are supported")
            try:
                self._manager.reload_config(list(config.model_config_list.config))
            except ValueError as exc:
                raise ServingError(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
            return model_management_pb2.ReloadConfigResponse()
        return _grpc_call(run, context, self._stats, "gRPC ReloadConfig")


# --------------------------------------------------------------------------------------
# REST API
# --------------------------------------------------------------------------------------

_PREDICT_RE = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(predict|classify|regress)",
    re.IGNORECASE)
_STATUS_RE = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?(/metadata)?",
                        re.IGNORECASE)


def _json_value(value: Any, dtype: int, where: str) -> np.ndarray:
    if dtype == types_pb2.DT_STRING:
        try:  # fast path: plain strings; TensorFlow encodes numpy unicode as UTF-8 in C++
            arr = np.array(value)
            if arr.dtype.kind == "U":
                return arr
            if arr.size == 0 and isinstance(value, list):
                return np.empty(arr.shape, dtype=object)
        except ValueError:  # ragged; the slow path says so
            pass

        def conv(v):
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, str):
                return v.encode("utf-8")
            if isinstance(v, dict) and set(v) == {"b64"} and isinstance(v["b64"], str):
                try:
                    return base64.b64decode(v["b64"], validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                                       f"{where}: invalid base64 ({exc})") from None
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{where}: expected a string or {{\"b64\": ...}}, got "
                               f"{json.dumps(v)[:80]}")
        nested = conv(value)
        try:
            arr = np.array(nested, dtype=object)
        except ValueError:
            arr = None
        if arr is None or any(not isinstance(x, bytes) for x in arr.ravel()):
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{where}: nested lists of strings must be rectangular")
        return arr
    try:
        np_dtype = tf.dtypes.as_dtype(dtype).as_numpy_dtype
        if isinstance(value, list) and any(isinstance(x, (str, dict)) for x in np.ravel(
                np.array(value, dtype=object))):
            raise ValueError("strings given for a numeric input")
        return np.asarray(value, dtype=np_dtype)
    except (ValueError, TypeError) as exc:
        raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                           f"{where}: cannot convert to {_dtype_name(dtype)} ({exc})") from None


def _json_output(arr: np.ndarray, name: str) -> Any:
    if arr.dtype == object:
        if not arr.size:
            return arr.tolist()
        if name.endswith("_bytes"):  # TF Serving's convention for binary outputs
            return np.vectorize(lambda b: {"b64": base64.b64encode(b).decode()},
                                otypes=[object])(arr).tolist()
        # JSON is built element by element anyway; ("S" arrays would drop trailing NULs).
        text = np.empty(arr.size, dtype=object)
        text[:] = [b.decode("utf-8", "replace") for b in arr.ravel().tolist()]
        return text.reshape(arr.shape).tolist()
    return arr.tolist()


class RestApi:
    """TF Serving's REST API over the same ModelManager (returns (HTTP status, JSON))."""

    def __init__(self, manager: ModelManager, predictions: PredictionService,
                 stats: Stats | None = None) -> None:
        self._manager = manager
        self._predictions = predictions
        self._stats = stats

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        path = path.split("?", 1)[0]
        api = ("REST predict" if _PREDICT_RE.fullmatch(path) and method == "POST" else
               "REST metadata" if path.endswith("/metadata") else "REST status")
        started = time.perf_counter()
        try:
            doc = self._dispatch(method, path, body)
        except ServingError as exc:
            self._count(api, exc.code.name)
            return _HTTP_STATUS.get(exc.code, 500), {"error": exc.message}
        except Exception as exc:  # noqa: BLE001
            log.error("internal error: %s", traceback.format_exc())
            self._count(api, "INTERNAL")
            return 500, {"error": f"internal error: {type(exc).__name__}: {exc}"}
        self._count(api)
        if api == "REST predict" and self._stats is not None:
            self._stats.times.append(time.perf_counter() - started)  # successes only
        return 200, doc

    def _count(self, api: str, error: str | None = None) -> None:
        if self._stats is None:
            return
        self._stats.requests[api] += 1
        if error is not None:
            self._stats.errors[error] += 1

    def _dispatch(self, method: str, path: str, body: bytes) -> dict:
        m = _PREDICT_RE.fullmatch(path)
        if method == "POST" and m:
            name, version, label, verb = m.groups()
            if verb.lower() != "predict":
                raise ServingError(grpc.StatusCode.UNIMPLEMENTED,
                                   f":{verb} is not implemented by this server; use :predict")
            return self._predict(name, int(version) if version else None, label, body)
        m = _STATUS_RE.fullmatch(path)
        if method == "GET" and m:
            name, version, label, metadata = m.groups()
            version = int(version) if version else None
            if metadata:
                servable = self._manager.servable(name, version, label)
                return {"model_spec": {"name": name, "signature_name": "",
                                       "version": str(servable.version)},
                        "metadata": {"signature_def": json_format.MessageToDict(
                            servable.signature_def_map, preserving_proto_field_name=True)}}
            response = get_model_status_pb2.GetModelStatusResponse()
            response.model_version_status.extend(self._manager.status(name, version, label))
            return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                             always_print_fields_with_no_presence=True)
        raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                           f"Malformed request: {method} {path}")

    def _predict(self, name: str, version: int | None, label: str | None, body: bytes) -> dict:
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               f"JSON Parse error: {exc}") from None
        if not isinstance(doc, dict):
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               "JSON request must be an object with 'instances' or 'inputs'")
        keys = set(doc) & {"instances", "inputs"}
        if len(keys) != 1:
            raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                               "JSON request needs exactly one of 'instances' (row format) or "
                               "'inputs' (columnar format)")
        servable = self._manager.servable(name, version, label)
        sig = servable.signature(doc.get("signature_name", ""))
        row = "instances" in doc
        if row:
            instances = doc["instances"]
            if not isinstance(instances, list):
                raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                                   "'instances' must be a list")
            if len(sig.inputs) == 1 and not all(
                    isinstance(i, dict) and set(i) == set(sig.inputs) for i in instances):
                (only,) = sig.inputs
                columns = {only: instances}
            else:
                for i, inst in enumerate(instances):
                    if not isinstance(inst, dict):
                        raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                                           f"instance {i}: expected an object with inputs "
                                           f"{sorted(sig.inputs)}")
                    if set(inst) != set(sig.inputs):
                        validate_inputs(name, sig, inst, {}, {})  # raises: names do not match
                columns = {k: [inst[k] for inst in instances] for k in sig.inputs}
        else:
            value = doc["inputs"]
            if isinstance(value, dict) and not (set(value) == {"b64"} and len(sig.inputs) == 1):
                columns = value
            elif len(sig.inputs) == 1:
                (only,) = sig.inputs
                columns = {only: value}
            else:
                raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                                   f"'inputs' must be an object with {sorted(sig.inputs)}")
        if set(columns) != set(sig.inputs):
            validate_inputs(name, sig, columns, {}, {})  # raises: names do not match
        arrays = {k: _json_value(v, sig.inputs[k].dtype, f"input '{k}'")
                  for k, v in columns.items()}
        validate_inputs(name, sig, arrays, {k: sig.inputs[k].dtype for k in arrays},
                        {k: v.shape for k, v in arrays.items()})
        started = time.perf_counter()
        outputs = _run(sig, arrays)
        if self._stats is not None:
            self._stats.model_times.append(time.perf_counter() - started)
        if row:
            batch = len(doc["instances"])
            bad = [k for k, v in outputs.items() if v.ndim == 0 or v.shape[0] != batch]
            if bad:
                raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                                   f"outputs {bad} do not have the batch size {batch} in dim 0; "
                                   "use the columnar 'inputs' format")
            cols = {k: _json_output(v, k) for k, v in outputs.items()}
            if len(cols) == 1:
                return {"predictions": next(iter(cols.values()))}
            return {"predictions": [{k: cols[k][i] for k in cols} for i in range(batch)]}
        cols = {k: _json_output(v, k) for k, v in outputs.items()}
        return {"outputs": next(iter(cols.values())) if len(cols) == 1 else cols}


class _HttpHandler(http.server.BaseHTTPRequestHandler):
    server_version = "tpr-keras-serving"
    api: RestApi  # set on the subclass

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.server.max_body_bytes:  # type: ignore[attr-defined]
            status, doc = 413, {"error": f"request body of {length} bytes exceeds the limit of "
                                         f"{self.server.max_body_bytes}"}  # type: ignore
        else:
            body = self.rfile.read(length) if length else b""
            status, doc = self.api.handle(method, self.path, body)
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.debug("REST %s", format % args)


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins in-flight requests
    block_on_close = True

    def __init__(self, address, handler, max_threads: int, max_body_bytes: int) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_threads)
        self.max_body_bytes = max_body_bytes

    def process_request(self, request, client_address):
        self._slots.acquire()  # back-pressure: at most max_threads requests at once
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


# --------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------


def parse_model_config(text: str) -> list[model_server_config_pb2.ModelConfig]:
    """Parses TF Serving's text ``ModelServerConfig`` (``model_config_list { config {...} }``)."""
    config = model_server_config_pb2.ModelServerConfig()
    text_format.Parse(text, config)
    if config.WhichOneof("config") != "model_config_list":
        raise ValueError("the model config file must hold a model_config_list")
    return list(config.model_config_list.config)


class ModelServer:
    """The gRPC (and optional REST) server around a ModelManager.

    Args:
        manager: The models.
        port: gRPC port (0: pick a free one).
        rest_api_port: REST port (None: no REST; 0: pick a free one).
        host: Address to bind (loopback by default).
        max_threads: gRPC handler threads.
        max_message_bytes: Largest gRPC request/response.
    """

    def __init__(self, manager: ModelManager, port: int = 8500, rest_api_port: int | None = None,
                 host: str = "127.0.0.1", max_threads: int | None = None,
                 rest_api_num_threads: int | None = None,
                 max_message_bytes: int = 64 * 1024 * 1024) -> None:
        self.manager = manager
        self.stats = Stats()
        self.host = host
        cpus = os.cpu_count() or 1
        self.max_threads = max_threads or max(8, 4 * cpus)
        self._grpc = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=self.max_threads,
                                                  thread_name_prefix="grpc"),
            options=[("grpc.max_receive_message_length", max_message_bytes),
                     ("grpc.max_send_message_length", max_message_bytes),
                     ("grpc.so_reuseport", 0)])
        self.predictions = PredictionService(manager, self.stats)
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(self.predictions,
                                                                            self._grpc)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelService(manager, self.stats),
                                                                  self._grpc)
        self.port = self._grpc.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise OSError(f"cannot bind gRPC to {host}:{port}")
        self._http: _HttpServer | None = None
        self._http_thread: threading.Thread | None = None
        self.rest_api_port: int | None = None
        if rest_api_port is not None:
            handler = type("Handler", (_HttpHandler,),
                           {"api": RestApi(manager, self.predictions, self.stats)})
            self._http = _HttpServer((host, rest_api_port), handler,
                                     rest_api_num_threads or self.max_threads, max_message_bytes)
            self.rest_api_port = self._http.server_address[1]

    def start(self) -> ModelServer:
        self._grpc.start()
        if self._http is not None:
            self._http_thread = threading.Thread(target=self._http.serve_forever,
                                                 kwargs={"poll_interval": 0.2},
                                                 daemon=True, name="rest")
            self._http_thread.start()
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Stops accepting requests, lets in-flight ones finish (up to ``grace`` s)."""
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


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m serving.server",
        description="TF Serving-compatible gRPC/REST server for SavedModels "
                    "(flags as tensorflow_model_server).")
    p.add_argument("--port", type=int, default=8500, help="gRPC port (0: a free one)")
    p.add_argument("--rest_api_port", type=int, default=0,
                   help="REST port; 0 disables REST, as in tensorflow_model_server "
                        "(-1: a free one)")
    p.add_argument("--model_name", default="default", help="name of the single model")
    p.add_argument("--model_base_path", default="",
                   help="folder holding the model's integer version folders")
    p.add_argument("--model_config_file", default="",
                   help="text ModelServerConfig with several models (instead of "
                        "--model_name/--model_base_path)")
    p.add_argument("--model_config_file_poll_wait_seconds", type=float, default=0,
                   help="re-read --model_config_file this often (0: never)")
    p.add_argument("--file_system_poll_wait_seconds", type=float, default=1.0,
                   help="look for new versions this often (0: only at start)")
    p.add_argument("--saved_model_tags", default="serve", help="comma-separated MetaGraph tags")
    p.add_argument("--enable_batching", action="store_true",
                   help="batch concurrent Predict calls of one signature")
    p.add_argument("--batching_parameters_file", default="",
                   help="TF Serving's text BatchingParameters (max_batch_size, "
                        "batch_timeout_micros, num_batch_threads, max_enqueued_batches)")
    p.add_argument("--max_num_load_retries", type=int, default=5)
    p.add_argument("--grpc_max_threads", type=int, default=0,
                   help="gRPC handler threads (0: max(8, 4 x CPUs))")
    p.add_argument("--rest_api_num_threads", type=int, default=0,
                   help="concurrent REST requests (0: as --grpc_max_threads)")
    p.add_argument("--max_message_bytes", type=int, default=64 * 1024 * 1024,
                   help="largest gRPC message / REST body")
    p.add_argument("--tensorflow_intra_op_parallelism", type=int, default=0,
                   help="threads inside one op (0: TensorFlow's default)")
    p.add_argument("--tensorflow_inter_op_parallelism", type=int, default=0,
                   help="ops run in parallel (0: TensorFlow's default)")
    p.add_argument("--servable_runtime", choices=RUNTIMES, default="session",
                   help="session: run signatures in a tf.compat.v1.Session by their "
                        "SignatureDef tensor names, as tensorflow_model_server does; "
                        "function: tf.saved_model.load's TF2 signature functions")
    p.add_argument("--bind_address", default="127.0.0.1",
                   help="address to listen on (0.0.0.0: all interfaces, as TF Serving)")
    p.add_argument("--shutdown_grace_seconds", type=float, default=10.0,
                   help="on SIGTERM/SIGINT, wait this long for in-flight requests")
    p.add_argument("--verbosity", default="INFO", help="logging level")
    args = p.parse_args(argv)
    if bool(args.model_config_file) == bool(args.model_base_path):
        p.error("pass either --model_base_path (with --model_name) or --model_config_file")
    return args


def _configs_from_args(args: argparse.Namespace) -> list[model_server_config_pb2.ModelConfig]:
    if args.model_config_file:
        with open(args.model_config_file, encoding="utf-8") as f:
            return parse_model_config(f.read())
    return [model_server_config_pb2.ModelConfig(
        name=args.model_name, base_path=os.path.abspath(args.model_base_path),
        model_platform="tensorflow")]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    logging.basicConfig(level=args.verbosity.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.tensorflow_intra_op_parallelism:
        tf.config.threading.set_intra_op_parallelism_threads(args.tensorflow_intra_op_parallelism)
    if args.tensorflow_inter_op_parallelism > 0:
        tf.config.threading.set_inter_op_parallelism_threads(args.tensorflow_inter_op_parallelism)
    session_config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=max(args.tensorflow_intra_op_parallelism, 0),
        inter_op_parallelism_threads=args.tensorflow_inter_op_parallelism)
    batching = None
    if args.enable_batching:
        batching = BatchingParameters()
        if args.batching_parameters_file:
            with open(args.batching_parameters_file, encoding="utf-8") as f:
                batching = BatchingParameters.parse(f.read())
        log.info("batching enabled: %s", batching)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    manager = ModelManager(_configs_from_args(args), tags=args.saved_model_tags.split(","),
                           batching=batching, max_num_load_retries=args.max_num_load_retries,
                           runtime=args.servable_runtime, session_config=session_config)
    rest_port = None if args.rest_api_port == 0 else max(args.rest_api_port, 0)
    server = ModelServer(manager, port=args.port, rest_api_port=rest_port,
                         host=args.bind_address, max_threads=args.grpc_max_threads or None,
                         rest_api_num_threads=args.rest_api_num_threads or None,
                         max_message_bytes=args.max_message_bytes).start()
    manager.start_polling(args.file_system_poll_wait_seconds)
    print(f"Running gRPC ModelServer at {args.bind_address}:{server.port} ...", file=sys.stderr,
          flush=True)
    if server.rest_api_port is not None:
        print(f"Exporting HTTP/REST API at {args.bind_address}:{server.rest_api_port} ...",
              file=sys.stderr, flush=True)
    print(f"Models: {', '.join(manager.model_names)}", file=sys.stderr, flush=True)

    config_text = None
    if args.model_config_file:
        with open(args.model_config_file, encoding="utf-8") as f:
            config_text = f.read()
    wait = args.model_config_file_poll_wait_seconds if args.model_config_file else 0
    while not stop.wait(wait if wait > 0 else 3600):
        if wait > 0:
            try:
                with open(args.model_config_file, encoding="utf-8") as f:
                    text = f.read()
                if text != config_text:
                    manager.reload_config(parse_model_config(text))
                    config_text = text
                    log.info("reloaded %s", args.model_config_file)
            except Exception as exc:  # noqa: BLE001 - keep serving the old config
                log.error("cannot reload %s: %s", args.model_config_file, exc)
    log.info("shutting down: finishing in-flight requests (grace %.1f s)",
             args.shutdown_grace_seconds)
    server.stop(args.shutdown_grace_seconds)
    print(f"Shut down; {server.stats.summary()}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
