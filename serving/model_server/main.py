"""``main``: flags -> :class:`~serving.core.manager.ModelManager` -> :class:`ModelServer`,
then serve until SIGTERM/SIGINT (``python -m serving.server``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from tensorflow_serving.config import model_server_config_pb2

from serving.core._tf import tf
from serving.core.batching import BatchingParameters
from serving.core.manager import ModelManager
from serving.model_server.flags import parse_args
from serving.model_server.model_config import read_model_config_file
from serving.model_server.server import ModelServer

log = logging.getLogger("serving.server")


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
    args = parse_args(argv)
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

