"""A servable: one loaded version of a model, its signatures, and how to run them.

Like TF Serving's ``SavedModelBundle`` (``tensorflow_serving/servables/tensorflow/``), a
version loads its MetaGraph into its own ``tf.compat.v1.Session`` and runs a signature by
its SignatureDef tensor names (``runtime="function"`` uses ``tf.saved_model.load``).

Lifetime: requests take a lease (:meth:`Servable.acquire` / :meth:`Servable.release`);
:meth:`Servable.close` retires the version, and its batch threads and session are closed
as soon as the last lease is returned: right away if none is out, otherwise by the request
that returns it. Nothing waits for the garbage collector.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence

import grpc
import numpy as np
from google.protobuf import text_format
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, saved_model_pb2
from tensorflow_serving.apis import get_model_metadata_pb2, prediction_log_pb2

from serving.core._tf import tf
from serving.core.batching import Batcher, BatchingParameters
from serving.core.layout import WARMUP_PATH
from serving.core.status import CODE_BY_VALUE, ServingError, dtype_name, shape_str
from serving.core.tensors import check_batch, dtype_enum, tensor_proto_to_array, validate_inputs

log = logging.getLogger("serving.server")

#: "serving_default": TensorFlow's own constant, the one definition the exporters in
#: tpr_keras use too (the server imports nothing from tpr_keras).
DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
RUNTIMES = ("session", "function")
#: Rows per signature call for batchable signatures (``ChunkedRunner``): a bAbI batch of 128
#: stories padded to 70 sentences costs about 50 MB in the model (results/serving.md).
DEFAULT_MAX_ROWS = 128

Runner = Callable[[Mapping[str, np.ndarray], tuple[str, ...]], dict[str, np.ndarray]]


@dataclasses.dataclass(frozen=True)
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
        return f"{dtype_name(self.dtype)} {shape_str(self.shape)}"


@dataclasses.dataclass(frozen=True)
class Signature:
    """A signature of a loaded version: its runner (batched or not) and its SignatureDef."""

    name: str
    runner: Runner
    signature_def: meta_graph_pb2.SignatureDef
    inputs: dict[str, TensorSpecInfo]
    outputs: dict[str, TensorSpecInfo]

    def run(self, inputs: Mapping[str, np.ndarray],
            outputs: Sequence[str] = ()) -> dict[str, np.ndarray]:
        """Maps input arrays to output arrays (all outputs, or the names asked for); a
        TensorFlow error keeps its code (TF and gRPC codes are equal)."""
        try:
            return self.runner(inputs, tuple(outputs) or tuple(self.outputs))
        except tf.errors.OpError as exc:
            raise ServingError(CODE_BY_VALUE.get(exc.error_code, grpc.StatusCode.INTERNAL),
                               exc.message) from None

    def expected_inputs(self) -> str:
        return ", ".join(f"{k} ({v.describe()})" for k, v in sorted(self.inputs.items()))

    @functools.cached_property
    def batchable(self) -> bool:
        """All inputs and outputs have a leading batch dimension of unknown size."""
        specs = list(self.inputs.values()) + list(self.outputs.values())
        return bool(self.inputs) and all(s.shape and s.shape[0] == -1 for s in specs)


class _SessionRunner:
    """Runs one SignatureDef in a ``tf.compat.v1.Session``, as ``tensorflow_model_server`` does.

    Feeds and fetches are the SignatureDef's tensor names. Each set of requested outputs
    gets one callable made from ``CallableOptions`` (what ``Session::MakeCallable`` does in
    C++): a call hands the arrays straight to the runtime, without ``Session.run``'s
    per-call parsing of feeds and fetches.
    """

    def __init__(self, session: tf.compat.v1.Session, sdef: meta_graph_pb2.SignatureDef) -> None:
        self._session = session
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


class ChunkedRunner:
    """Runs a batchable signature on at most ``rows`` rows at a time and concatenates the
    outputs, so that the model's own memory per call is bounded whatever the request's
    batch (TF Serving's ``enable_large_batch_splitting`` / ``max_execution_batch_size``).

    A model that pads its batch (a bAbI export pads every story to the longest one) would
    otherwise turn one long story and a million empty ones, a few MB on the wire, into a
    million padded stories in one call. If the outputs of two chunks cannot be
    concatenated (a dimension other than the batch varies with the chunk's content), the
    request runs whole.
    """

    def __init__(self, runner: Runner, rows: int) -> None:
        self._runner = runner
        self._rows = rows

    def __call__(self, inputs: Mapping[str, np.ndarray],
                 outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
        sizes = {v.shape[0] if v.ndim else -1 for v in inputs.values()}
        n = sizes.pop() if len(sizes) == 1 else -1
        if n <= self._rows:
            return self._runner(inputs, outputs)
        parts = [self._runner({k: v[i:i + self._rows] for k, v in inputs.items()}, outputs)
                 for i in range(0, n, self._rows)]
        try:
            return {k: np.concatenate([part[k] for part in parts]) for k in outputs}
        except ValueError:
            return self._runner(inputs, outputs)


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
        batching: If set, each batchable signature's runner is wrapped in a
            :class:`~serving.core.batching.Batcher` with these parameters.
        max_rows_per_call: If set, a batchable signature runs at most this many rows per
            call (:class:`ChunkedRunner`); larger requests are split.
    """

    def __init__(self, name: str, version: int, path: str, tags: Sequence[str] = ("serve",),
                 runtime: str = "session",
                 session_config: tf.compat.v1.ConfigProto | None = None,
                 batching: BatchingParameters | None = None,
                 max_rows_per_call: int | None = None) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
        self.name = name
        self.version = version
        self.path = path
        self.runtime = runtime
        self.signature_def_map = get_model_metadata_pb2.SignatureDefMap()
        self.signatures: dict[str, Signature] = {}
        self._session: tf.compat.v1.Session | None = None
        self._loaded = None
        self._batchers: list[Batcher] = []
        self._lock = threading.Lock()
        self._leases = 0
        self._retired = False
        self.closed = False
        if runtime == "session":
            graph = tf.Graph()
            self._session = tf.compat.v1.Session(graph=graph, config=session_config)
            try:
                with graph.as_default(), _tf_logging_at(logging.ERROR):
                    meta = tf.compat.v1.saved_model.loader.load(self._session, list(tags), path)
            except BaseException:
                self._session.close()
                raise
            runners: dict[str, Runner] = {
                k: _SessionRunner(self._session, sdef) for k, sdef in meta.signature_def.items()
                if not k.startswith("__")}  # "__saved_model_init_op" is not servable
        else:
            meta = read_meta_graph(path, tags)
            self._loaded = tf.saved_model.load(path, tags=list(tags))
            runners = {k: _FunctionRunner(self._loaded.signatures[k]) for k in meta.signature_def
                       if k in self._loaded.signatures}
        for key, sdef in meta.signature_def.items():
            self.signature_def_map.signature_def[key].CopyFrom(sdef)
            if key not in runners:
                continue
            inputs = {k: TensorSpecInfo.from_tensor_info(v) for k, v in sdef.inputs.items()}
            outputs = {k: TensorSpecInfo.from_tensor_info(v) for k, v in sdef.outputs.items()}
            sig = Signature(key, runners[key], sdef, inputs, outputs)
            if max_rows_per_call and sig.batchable:
                sig = dataclasses.replace(sig, runner=ChunkedRunner(sig.runner,
                                                                    max_rows_per_call))
            if batching is not None and sig.batchable:
                batcher = Batcher(sig.runner, tuple(outputs), batching, f"{name}-{key}")
                self._batchers.append(batcher)
                sig = dataclasses.replace(sig, runner=batcher)
            self.signatures[key] = sig

    def signature(self, name: str) -> Signature:
        sig = self.signatures.get(name or DEFAULT_SIGNATURE)
        if sig is None:
            raise ServingError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f'Serving signature key "{name or DEFAULT_SIGNATURE}" not found in model '
                f"'{self.name}' version {self.version}; signatures: {sorted(self.signatures)}")
        return sig

    # ---- lifetime ---------------------------------------------------------------------

    def acquire(self) -> bool:
        """Takes a lease for one request; False once the version is retired."""
        with self._lock:
            if self._retired:
                return False
            self._leases += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._leases -= 1
            last = self._retired and self._leases == 0 and not self.closed
            if last:
                self.closed = True
        if last:
            self._close_now()

    def close(self) -> None:
        """Retires the version: no new leases; batch threads and the session close now, or
        when the last request in flight returns its lease. Idempotent."""
        with self._lock:
            self._retired = True
            last = self._leases == 0 and not self.closed
            if last:
                self.closed = True
        if last:
            self._close_now()

    def _close_now(self) -> None:
        for batcher in self._batchers:
            batcher.stop()
        if self._session is not None:
            self._session.close()
        self._loaded = None
        log.debug("model %s: version %d closed", self.name, self.version)

    @property
    def session(self) -> tf.compat.v1.Session | None:
        return self._session


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


def read_meta_graph(path: str, tags: Sequence[str]) -> meta_graph_pb2.MetaGraphDef:
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


def warm_up(servable: Servable) -> int:
    """Replays TF Serving's warm-up file (PredictionLog TFRecords; reference:
    tensorflow_serving/servables/tensorflow/saved_model_warmup.cc), if the export has one."""
    path = os.path.join(servable.path, WARMUP_PATH)
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
        validate_inputs(servable.name, sig, inputs, {k: dtype_enum(v) for k, v in inputs.items()},
                        {k: v.shape for k, v in inputs.items()})
        check_batch(sig, inputs)
        sig.run(inputs)
        count += 1
    return count
