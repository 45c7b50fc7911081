"""A servable: one loaded version of a model and its signatures.

Like TF Serving's ``SavedModelBundle`` (``tensorflow_serving/servables/tensorflow/``), a
version loads its MetaGraph into its own ``tf.compat.v1.Session`` and runs a signature by
its SignatureDef tensor names (``runtime="function"`` uses ``tf.saved_model.load``).

Lifetime: requests take a lease (:meth:`Servable.acquire` / :meth:`Servable.release`);
:meth:`Servable.close` retires the version, and its batch threads and session are closed
as soon as the last lease is returned: right away if none is out, otherwise by the request
that returns it. Nothing waits for the garbage collector; the version's graph, which
only a full collection frees, is freed by the next poll of the manager
(:mod:`serving.core.memory`).

A signature and its runners are in :mod:`serving.core.signature` and
:mod:`serving.core.runners`; the warm-up replay in :mod:`serving.core.warmup`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Sequence

import grpc
from google.protobuf import text_format
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2
from tensorflow_serving.apis import get_model_metadata_pb2

from serving.core._tf import tf
from serving.core.batch_scheduler import BatchScheduler
from serving.core.batching import Batcher, BatchingParameters
from serving.core.memory import version_dropped
from serving.core.runners import ChunkedRunner, FunctionRunner, SessionRunner
from serving.core.signature import DEFAULT_SIGNATURE, Runner, Signature, TensorSpecInfo
from serving.core.status import ServingError

log = logging.getLogger("serving.server")

#: How a version runs its signatures (:class:`Servable`'s ``runtime``).
RUNTIMES = ("session", "function")


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
        batch_scheduler: The batch threads the batchers share (a ModelManager's, one for
            all models as in TF Serving); None: each batcher has its own.
        max_rows_per_call: If set, a batchable signature runs at most this many rows per
            call (:class:`ChunkedRunner`); larger requests are split.
    """

    def __init__(self, name: str, version: int, path: str, tags: Sequence[str] = ("serve",),
                 runtime: str = "session",
                 session_config: tf.compat.v1.ConfigProto | None = None,
                 batching: BatchingParameters | None = None,
                 max_rows_per_call: int | None = None,
                 batch_scheduler: BatchScheduler | None = None) -> None:
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
                version_dropped()  # the graph built so far is garbage now
                raise
            runners: dict[str, Runner] = {
                k: SessionRunner(self._session, sdef) for k, sdef in meta.signature_def.items()
                if not k.startswith("__")}  # "__saved_model_init_op" is not servable
        else:
            meta = read_meta_graph(path, tags)
            try:
                self._loaded = tf.saved_model.load(path, tags=list(tags))
            except BaseException:
                version_dropped()  # the functions restored so far are garbage now
                raise
            runners = {k: FunctionRunner(self._loaded.signatures[k]) for k in meta.signature_def
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
                batcher = Batcher(sig.runner, tuple(outputs), batching, f"{name}-{key}",
                                  batch_scheduler)
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
        version_dropped()  # its graph is freed at the next poll (serving.core.memory)
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
