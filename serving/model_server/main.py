"""``main``: flags -> :class:`~serving.core.manager.ModelManager` -> :class:`ModelServer`,
then serve until SIGTERM/SIGINT (``python -m serving.server``)."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import signal
import sys
import threading
import types
from collections.abc import Sequence
from typing import NamedTuple

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

from serving.core._tf import tf
from serving.core.batching_config import BatchingParameters
from serving.core.manager import ModelManager
from serving.model_server.config_protos import ConfigError, read_text_proto
from serving.model_server.flags import ignored_flags, parse_args
from serving.model_server.model_config import read_model_config_file
from serving.model_server.monitoring import Metrics, read_monitoring_config
from serving.model_server.readiness import wait_until_available
from serving.model_server.server import ModelServer
from serving.model_server.tls import read_ssl_config

log = logging.getLogger("serving.server")


def _configs_from_args(args: types.SimpleNamespace) -> list[model_server_config_pb2.ModelConfig]:
    if args.model_config_file:
        return read_model_config_file(args.model_config_file)
    return [model_server_config_pb2.ModelConfig(
        name=args.model_name, base_path=os.path.abspath(args.model_base_path),
        model_platform="tensorflow")]


def version_text() -> str:
    """What ``--version`` prints: this server's and TensorFlow's versions."""
    try:
        ours = importlib.metadata.version("tpr-keras")
    except importlib.metadata.PackageNotFoundError:
        ours = "unknown"
    return f"TensorFlow ModelServer: tpr-keras {ours}\nTensorFlow Library: {tf.__version__}"


def session_config(args: types.SimpleNamespace) -> tf.compat.v1.ConfigProto:
    """Each session's ConfigProto: ``--tensorflow_session_config_file``, then the thread
    flags (``--tensorflow_session_parallelism`` where the intra/inter flags are 0) and
    ``--per_process_gpu_memory_fraction`` over it."""
    config = tf.compat.v1.ConfigProto()
    if args.tensorflow_session_config_file:
        config = read_text_proto(args.tensorflow_session_config_file,
                                 tf.compat.v1.ConfigProto, "tensorflow_session_config_file")
    both = args.tensorflow_session_parallelism
    intra = args.tensorflow_intra_op_parallelism or both
    inter = args.tensorflow_inter_op_parallelism or both
    if intra:
        config.intra_op_parallelism_threads = max(intra, 0)
    if inter:
        config.inter_op_parallelism_threads = inter
    if args.per_process_gpu_memory_fraction:
        config.gpu_options.per_process_gpu_memory_fraction = (
            args.per_process_gpu_memory_fraction)
    return config


def grpc_channel_arguments(text: str) -> list[tuple[str, int | str]]:
    """``--grpc_channel_arguments``: ``key=value,...``; an integer value is passed as one."""
    out: list[tuple[str, int | str]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--grpc_channel_arguments: {item!r} is not key=value")
        try:
            out.append((key, int(value)))
        except ValueError:
            out.append((key, value))
    return out


def batching_parameters(args: types.SimpleNamespace) -> BatchingParameters | None:
    """``--enable_batching`` with ``--batching_parameters_file`` (None: batching off)."""
    if not args.enable_batching:
        return None
    path = args.batching_parameters_file
    if not path:
        return BatchingParameters()
    try:
        return BatchingParameters.from_file(path)
    except OSError as exc:
        raise ConfigError(f"--batching_parameters_file={path}: cannot read the file: "
                          f"{exc.strerror or exc}") from None
    except ValueError as exc:  # its message starts with the file's name
        raise ConfigError(f"--batching_parameters_file={exc}") from None


def _write_info(path: str, info: dict) -> None:
    if not path:
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
    os.replace(tmp, path)  # readers never see half a file


class _Settings(NamedTuple):
    """What the flags' files and texts say, read before anything starts."""

    models: list[model_server_config_pb2.ModelConfig]
    session_config: tf.compat.v1.ConfigProto
    channel_args: list[tuple[str, int | str]]
    metrics_path: str | None
    ssl_config: object | None  # a checked SSLConfig (serving.model_server.tls)
    batching: BatchingParameters | None


def _failed(error: object) -> int:
    """tensorflow_model_server's one line for a server that cannot start; exit status 1."""
    print(f"Failed to start server. Error: {error}", file=sys.stderr, flush=True)
    return 1


def _log_flag_notes(args: types.SimpleNamespace) -> None:
    """One warning naming the flags set that this server does not apply, and a note when
    ``--model_config_file`` overrides ``--model_base_path``."""
    ignored = ignored_flags(args)
    if ignored:
        log.warning("these tensorflow_model_server flags do not apply to this server and "
                    "are ignored: %s", " ".join(ignored))
    if args.model_config_file and "model_base_path" in args.given:
        log.info("--model_config_file is set: --model_name and --model_base_path are ignored")


def _read_settings(args: types.SimpleNamespace) -> _Settings:
    """Reads every config file and flag text; raises ConfigError naming the flag."""
    try:
        models = _configs_from_args(args)
    except (OSError, ValueError, text_format.ParseError) as exc:
        raise ConfigError(f"--model_config_file={args.model_config_file}: {exc}") from None
    config = session_config(args)
    channel_args = grpc_channel_arguments(args.grpc_channel_arguments)
    metrics_path = (read_monitoring_config(args.monitoring_config_file)
                    if args.monitoring_config_file else None)
    ssl_config = read_ssl_config(args.ssl_config_file) if args.ssl_config_file else None
    batching = batching_parameters(args)
    if batching is not None:
        log.info("batching enabled: %s", batching)
    return _Settings(models, config, channel_args, metrics_path, ssl_config, batching)


def _apply_process_settings(args: types.SimpleNamespace, settings: _Settings) -> None:
    """TensorFlow's process-wide thread pools from the session config, and a warning for
    metrics asked for without a REST port to serve them on."""
    if settings.metrics_path and args.rest_api_port == 0:
        log.warning("--monitoring_config_file: metrics are served on the REST port, and "
                    "--rest_api_port is 0 (REST off)")
    config = settings.session_config
    if config.intra_op_parallelism_threads:
        tf.config.threading.set_intra_op_parallelism_threads(config.intra_op_parallelism_threads)
    if config.inter_op_parallelism_threads > 0:
        tf.config.threading.set_inter_op_parallelism_threads(config.inter_op_parallelism_threads)


def _stop_on_signals() -> threading.Event:
    """An event that SIGTERM and SIGINT set."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _model_manager(args: types.SimpleNamespace, settings: _Settings,
                   metrics: Metrics | None) -> ModelManager:
    """The manager of the configured models (it starts loading them); raises ValueError
    for the config's models or version labels."""
    return ModelManager(
        settings.models, tags=args.saved_model_tags.split(","), batching=settings.batching,
        max_num_load_retries=args.max_num_load_retries, runtime=args.servable_runtime,
        session_config=settings.session_config,
        max_rows_per_call=args.max_rows_per_call or None,
        allow_version_labels_for_unavailable_models=(
            args.allow_version_labels_for_unavailable_models),
        num_load_threads=args.num_load_threads or 4,
        model_warmup=args.enable_model_warmup,
        warmup_iterations=max(args.num_request_iterations_for_warmup, 1),
        on_load=metrics.saved_model_load if metrics is not None else None)


def _model_server(args: types.SimpleNamespace, settings: _Settings, manager: ModelManager,
                  metrics: Metrics | None) -> ModelServer:
    """The started gRPC and REST front ends; raises OSError for a port in use (one line
    naming the port and its flag)."""
    rest_port = None if args.rest_api_port == 0 else max(args.rest_api_port, 0)
    return ModelServer(manager, port=args.port, rest_api_port=rest_port,
                       host=args.bind_address, max_threads=args.grpc_max_threads or None,
                       rest_api_num_threads=args.rest_api_num_threads or None,
                       max_message_bytes=args.max_message_bytes,
                       rest_api_timeout_s=args.rest_api_timeout_in_ms / 1000,
                       ssl_config=settings.ssl_config, grpc_socket_path=args.grpc_socket_path,
                       grpc_options=settings.channel_args,
                       health=args.enable_grpc_healthcheck_service,
                       metrics_path=settings.metrics_path, metrics=metrics,
                       cors=args.rest_api_enable_cors_support,
                       signature_method_name_check=(
                           args.enable_signature_method_name_check)).start()


def _announce(args: types.SimpleNamespace, server: ModelServer, manager: ModelManager) -> dict:
    """tensorflow_model_server's lines once serving, and ``--server_info_file``'s first
    contents (returned: the shutdown adds the statistics to it)."""
    print(f"Running gRPC ModelServer at {args.bind_address}:{server.port} ...", file=sys.stderr,
          flush=True)
    if server.rest_api_port is not None:
        print(f"Exporting HTTP/REST API at {args.bind_address}:{server.rest_api_port} ...",
              file=sys.stderr, flush=True)
    print(f"Models: {', '.join(manager.model_names)}", file=sys.stderr, flush=True)
    info = {"pid": os.getpid(), "ports": server.ports, "models": manager.model_names}
    _write_info(args.server_info_file, info)
    return info


def _serve_until_stopped(args: types.SimpleNamespace, manager: ModelManager,
                         stop: threading.Event) -> None:
    """Waits for ``stop``, re-reading ``--model_config_file`` every
    ``--model_config_file_poll_wait_seconds`` (> 0) and reloading it when it changed; a
    config that cannot be read or applied is logged and the old one kept."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m serving.server``: 0 after a clean shutdown (or ``--version``), 1 when the
    server cannot start (one ``Failed to start server.`` line), 2 for bad flags."""
    args = parse_args(argv)
    if args.version:
        print(version_text(), flush=True)
        return 0
    logging.basicConfig(level=args.verbosity.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _log_flag_notes(args)
    try:
        settings = _read_settings(args)
    except ConfigError as exc:
        return _failed(exc)
    _apply_process_settings(args, settings)
    stop = _stop_on_signals()
    metrics = Metrics() if settings.metrics_path else None  # before the manager: it counts loads
    try:
        manager = _model_manager(args, settings, metrics)
    except ValueError as exc:  # the config's models or version labels
        return _failed(exc)
    # As tensorflow_model_server: the ports open once every initial model is available.
    failure = wait_until_available(manager, stop)
    if failure is not None or stop.is_set():
        manager.stop()
        return 0 if failure is None else _failed(failure)
    try:
        server = _model_server(args, settings, manager, metrics)
    except OSError as exc:  # a port in use: one line naming the port and its flag
        manager.stop()
        return _failed(exc)
    manager.start_polling(args.file_system_poll_wait_seconds)
    info = _announce(args, server, manager)
    _serve_until_stopped(args, manager, stop)
    log.info("shutting down: finishing in-flight requests (grace %.1f s)",
             args.shutdown_grace_seconds)
    server.stop(args.shutdown_grace_seconds)
    _write_info(args.server_info_file, {**info, "stats": server.stats()})
    print(f"Shut down; {server.summary()}", file=sys.stderr, flush=True)
    return 0
