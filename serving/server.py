"""A TF Serving-compatible model server for SavedModels: ``python -m serving.server``.

Serves the gRPC API of ``tensorflow-serving-api`` (``PredictionService``: ``Predict``,
``GetModelMetadata``; ``Classify``/``Regress``/``MultiInference`` answer UNIMPLEMENTED;
``ModelService``: ``GetModelStatus``, ``HandleReloadConfigRequest``) and TF Serving's REST
API, from model folders in TF Serving's layout ``<model_base_path>/<integer version>/``.
It knows nothing about tpr-keras: any SavedModel with signatures can be served, and stock
``tensorflow_model_server`` can replace it with the same flags::

    python -m serving.server --port=8500 --rest_api_port=8501 \\
        --model_name=babi --model_base_path=/abs/path/export/babi
    python -m serving.server --port=8500 --model_config_file=serving/models.config

The parts, along TF Serving's own seams:

* :mod:`serving.core.servable`: one loaded version and its signatures (``SavedModelBundle``);
  closed explicitly.
* :mod:`serving.core.manager`: versions, version policies, polling, swaps
  (``AspiredVersionsManager``).
* :mod:`serving.core.batching`: wraps a signature's runner when its version loads
  (``BatchingSession``).
* :mod:`serving.core.tensors` and :mod:`serving.core.json_tensor`: request tensors (``predict_util.cc``,
  ``util/json_tensor.cc``).
* :mod:`serving.model_server.grpc_service` and :mod:`serving.model_server.rest_api`: the two front ends.
* this module: :class:`ModelServer` (ports, ``stats()``) and ``main``, which wires them.

Semantics follow TF Serving: an empty signature name means ``serving_default``; an unset
version means the latest loaded one; NOT_FOUND for an unknown model, version or label;
FAILED_PRECONDITION for an unknown signature; INVALID_ARGUMENT for a malformed request
(bytes that do not parse, inputs whose names, dtypes or shapes do not match the
SignatureDef). A malformed request is answered with its status and one log line, never
INTERNAL or a 5xx. SIGTERM/SIGINT: stop accepting, let in-flight requests finish
(``--shutdown_grace_seconds``), exit 0.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from serving.core._tf import tf

import grpc  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from tensorflow_serving.config import model_server_config_pb2  # noqa: E402

from serving.core.batching import Batcher, BatchingParameters  # noqa: E402
from serving.model_server.grpc_service import ModelService, PredictionService, add_services  # noqa: E402
from serving.core.manager import ModelManager  # noqa: E402
from serving.model_server.rest_api import HttpServer, RestApi  # noqa: E402
from serving.core.runners import DEFAULT_MAX_ROWS, ChunkedRunner  # noqa: E402, F401
from serving.core.servable import RUNTIMES, Servable  # noqa: E402
from serving.core.signature import Signature, TensorSpecInfo  # noqa: E402
from serving.core.stats import Stats  # noqa: E402
from serving.core.status import ServingError  # noqa: E402
from serving.core.tensors import array_to_tensor_proto, tensor_proto_to_array  # noqa: E402

__all__ = ["Batcher", "BatchingParameters", "ModelManager", "ModelServer", "ModelService",
           "PredictionService", "RestApi", "Servable", "ServingError", "Signature", "Stats",
           "TensorSpecInfo", "array_to_tensor_proto", "main", "parse_model_config",
           "tensor_proto_to_array"]

log = logging.getLogger("serving.server")

#: Largest gRPC message and REST body, as tensorflow_model_server's default gRPC limit.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


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
                        "--model_name/--model_base_path); relative base_paths start from "
                        "the current directory")
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
    p.add_argument("--rest_api_timeout_in_ms", type=int, default=30_000,
                   help="a REST request must arrive whole within this time (else 408)")
    p.add_argument("--max_message_bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                   help="largest gRPC message / REST body, checked before decoding")
    p.add_argument("--max_rows_per_call", type=int, default=DEFAULT_MAX_ROWS,
                   help="run batchable signatures on at most this many rows per call, "
                        "splitting larger requests, so a model's memory per call is bounded "
                        "(0: never split)")
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
    p.add_argument("--server_info_file", default="",
                   help="write JSON here: the bound ports once serving, plus the request "
                        "statistics (ModelServer.stats()) at shutdown")
    p.add_argument("--verbosity", default="INFO", help="logging level")
    args = p.parse_args(argv)
    if bool(args.model_config_file) == bool(args.model_base_path):
        p.error("pass either --model_base_path (with --model_name) or --model_config_file")
    return args


def read_model_config_file(path: str) -> list[model_server_config_pb2.ModelConfig]:
    """The models of a text ModelServerConfig file; a relative ``base_path`` is taken from
    the directory the server runs in, as tensorflow_model_server's file system does."""
    with open(path, encoding="utf-8") as f:
        configs = parse_model_config(f.read())
    for c in configs:
        if c.base_path:
            c.base_path = os.path.abspath(c.base_path)
    return configs


def _configs_from_args(args: argparse.Namespace) -> list[model_server_config_pb2.ModelConfig]:
    if args.model_config_file:
        return read_model_config_file(args.model_config_file)
    return [model_server_config_pb2.ModelConfig(
        name=args.model_name, base_path=os.path.abspath(args.model_base_path),
        model_platform="tensorflow")]


def _write_info(path: str, info: dict) -> None:
    if not path:
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
    os.replace(tmp, path)  # readers never see half a file


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
                           runtime=args.servable_runtime, session_config=session_config,
                           max_rows_per_call=args.max_rows_per_call or None)
    rest_port = None if args.rest_api_port == 0 else max(args.rest_api_port, 0)
    server = ModelServer(manager, port=args.port, rest_api_port=rest_port,
                         host=args.bind_address, max_threads=args.grpc_max_threads or None,
                         rest_api_num_threads=args.rest_api_num_threads or None,
                         max_message_bytes=args.max_message_bytes,
                         rest_api_timeout_s=args.rest_api_timeout_in_ms / 1000).start()
    manager.start_polling(args.file_system_poll_wait_seconds)
    print(f"Running gRPC ModelServer at {args.bind_address}:{server.port} ...", file=sys.stderr,
          flush=True)
    if server.rest_api_port is not None:
        print(f"Exporting HTTP/REST API at {args.bind_address}:{server.rest_api_port} ...",
              file=sys.stderr, flush=True)
    print(f"Models: {', '.join(manager.model_names)}", file=sys.stderr, flush=True)
    info = {"pid": os.getpid(), "ports": server.ports, "models": manager.model_names}
    _write_info(args.server_info_file, info)

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
                    manager.reload_config(read_model_config_file(args.model_config_file))
                    config_text = text
                    log.info("reloaded %s", args.model_config_file)
            except Exception as exc:  # noqa: BLE001 - keep serving the old config
                log.error("cannot reload %s: %s", args.model_config_file, exc)
    log.info("shutting down: finishing in-flight requests (grace %.1f s)",
             args.shutdown_grace_seconds)
    server.stop(args.shutdown_grace_seconds)
    _write_info(args.server_info_file, {**info, "stats": server.stats()})
    print(f"Shut down; {server.summary()}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
