"""The server's flags: every flag of TF Serving 2.x's ``tensorflow_model_server`` (its
``main.cc``), with its name, type and default, plus a few of this server's own (docs/serving.md,
"The server").

Flags take ``--flag=value`` or ``--flag value``; booleans also take ``true``/``false``,
``1``/``0`` or nothing (``--enable_batching`` is ``--enable_batching=true``), parsed by absl
(:mod:`serving.command_flags`, this server's own ``FlagValues``). Flags that
cannot apply to this server (:data:`IGNORED`) are accepted; :func:`ignored_flags` names
the ones a command line asked for, and ``main`` logs them on one warning line.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence

from serving.command_flags import Command

_CPUS = os.cpu_count() or 1

#: The defaults and choices of the core's and the server's (tested equal to
#: ``serving.core.runners.DEFAULT_MAX_ROWS``, ``serving.core.servable.RUNTIMES`` and
#: ``serving.model_server.server.DEFAULT_MAX_MESSAGE_BYTES``), written here so that the
#: flags and ``--help`` import no TensorFlow.
DEFAULT_MAX_ROWS = 128
RUNTIMES = ("session", "function")
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

_HELP = ("-h", "-help", "--help", "-?", "--helpshort", "--helpfull")

#: Flags this server accepts but does not apply, with the value that matches what it does
#: anyway: asking for any other value is reported by :func:`ignored_flags`.
IGNORED: dict[str, object] = {
    "enable_per_model_batching_parameters": False,
    "num_unload_threads": 0,
    "load_retry_interval_micros": 60_000_000,
    "flush_filesystem_caches": True,
    "use_alts_credentials": False,
    "platform_config_file": "",
    "remove_unused_fields_from_bundle_metagraph": True,
    "prefer_tflite_model": False, "num_tflite_pools": _CPUS,
    "num_tflite_interpreters_per_pool": 1,
    "xla_cpu_compilation_enabled": False, "xla_gpu_compilation_enabled": False,
    "enable_profiler": False,
    "thread_pool_factory_config_file": "",
    "mixed_precision": "",
    "skip_initialize_tpu": False,
    "enable_serialization_as_tensor_content": False,
}


def _flag(command: Command, name: str, default, help: str) -> None:
    """A flag whose type is its default's, as in TF Serving's ``main.cc``."""
    if isinstance(default, bool):
        command.boolean(name, default, help)
    elif isinstance(default, int):
        command.integer(name, default, help)
    elif isinstance(default, float):
        command.float(name, default, help)
    else:
        command.string(name, default, help)


def server_command() -> Command:
    """The server's flags, defined on a fresh :class:`~serving.command_flags.Command`:
    tensorflow_model_server's (main.cc) and this server's own, grouped by purpose in
    ``--help``; those it accepts without applying them (:data:`IGNORED`) last."""
    c = Command("python -m serving.server",
                "TF Serving-compatible gRPC/REST server for SavedModels (flags as "
                "tensorflow_model_server).",
                example="python -m serving.server --port=8500 --rest_api_port=8501 "
                        "--model_name=babi --model_base_path=$PWD/exports/babi")
    for define in (_model_flags, _connection_flags, _batching_flags, _session_flags,
                   _monitoring_flags, _ignored_flags):
        define(c)
    return c


def _model_flags(c: Command) -> None:
    """The models to serve, how their versions are found, loaded and warmed up."""
    c.group("Models to serve")
    _flag(c, "model_name", "default", "name of the single model")
    _flag(c, "model_base_path", "",
          "folder of the model's integer version folders")
    _flag(c, "model_config_file", "",
          "text ModelServerConfig with several models (--model_name and "
          "--model_base_path "
          "are then ignored); relative base_paths start from the current directory")
    _flag(c, "model_config_file_poll_wait_seconds", 0.0,
          "re-read --model_config_file this often (0: never)")
    _flag(c, "file_system_poll_wait_seconds", 1.0,
          "look for new versions this often (0: only at start)")
    _flag(c, "num_load_threads", 0,
          "models loaded in parallel (0: 4)")
    _flag(c, "max_num_load_retries", 5,
          "attempts per version before it is failed")
    _flag(c, "saved_model_tags", "serve", "comma-separated MetaGraph tags")
    c.enum("servable_runtime", "session", RUNTIMES,
           "session: tf.compat.v1.Session by SignatureDef tensor names, as "
           "tensorflow_model_server; function: TF2 signature functions")
    _flag(c, "enable_model_warmup", True,
          "replay each version's assets.extra/tf_serving_warmup_requests "
          "before it serves")
    _flag(c, "num_request_iterations_for_warmup", 0,
          "run each warm-up request this many times (used only if > 0: "
          "else once, as TF Serving)")
    _flag(c, "allow_version_labels_for_unavailable_models", False,
          "a new version label may name a version that is not loaded yet")
    _flag(c, "enable_signature_method_name_check", False,
          "Classify/Regress/MultiInference: require the signature's method_name "
          "(tensorflow/serving/classify or regress)")


def _connection_flags(c: Command) -> None:
    """The ports, sockets and connection limits of the gRPC and REST front ends."""
    c.group("Ports and connections")
    _flag(c, "port", 8500, "gRPC port (0: a free one)")
    _flag(c, "grpc_socket_path", "", "also serve gRPC on this UNIX socket")
    _flag(c, "rest_api_port", 0, "REST port; 0 disables REST (-1: a free one)")
    _flag(c, "bind_address", "0.0.0.0",
          "address to listen on (0.0.0.0: all interfaces, as TF Serving; "
          "127.0.0.1: this "
          "machine only)")
    _flag(c, "rest_api_num_threads", 0,
          "REST requests at once (0: --grpc_max_threads)")
    _flag(c, "rest_api_timeout_in_ms", 30_000,
          "deadline of a whole REST request: body not in by then 408, model "
          "not reached by then 504 (DEADLINE_EXCEEDED)")
    _flag(c, "rest_api_enable_cors_support", False,
          "CORS headers on REST answers")
    _flag(c, "grpc_channel_arguments", "",
          "comma-separated gRPC server arguments "
          "(grpc.max_connection_age_ms=2000,...)")
    _flag(c, "grpc_max_threads", 0,
          "gRPC handler threads (0: max(8, 4 x CPUs))")
    _flag(c, "max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES,
          "largest gRPC message / REST body, checked before decoding")
    _flag(c, "ssl_config_file", "", "text SSLConfig: serve gRPC over TLS")
    _flag(c, "enable_grpc_healthcheck_service", False,
          "serve grpc.health.v1.Health (SERVING once every model has a version)")


def _batching_flags(c: Command) -> None:
    """Batching of concurrent requests and the rows of one call."""
    c.group("Batching")
    _flag(c, "enable_batching", False,
          "batch concurrent Predict calls of a signature")
    _flag(c, "batching_parameters_file", "",
          "TF Serving's text BatchingParameters")
    _flag(c, "max_rows_per_call", DEFAULT_MAX_ROWS,
          "batchable signatures run at most this many rows per call (0: never split)")


def _session_flags(c: Command) -> None:
    """Each session's threads, ConfigProto and GPU memory."""
    c.group("TensorFlow sessions")
    _flag(c, "tensorflow_session_parallelism", 0,
          "threads of both TensorFlow pools where the next two flags are 0 "
          "(0: TF's default)")
    _flag(c, "tensorflow_session_config_file", "",
          "text ConfigProto for each session")
    _flag(c, "tensorflow_intra_op_parallelism", 0,
          "threads in one op (0: TF's default)")
    _flag(c, "tensorflow_inter_op_parallelism", 0,
          "ops run in parallel (0: TF's default; negative: in the request's thread)")
    _flag(c, "per_process_gpu_memory_fraction", 0.0,
          "GPU memory fraction in each session's ConfigProto (0: TF's default)")


def _monitoring_flags(c: Command) -> None:
    """Metrics, the info file, shutdown, logging and ``--version``."""
    c.group("Monitoring and run control")
    _flag(c, "monitoring_config_file", "",
          "text MonitoringConfig: Prometheus metrics on the REST port")
    _flag(c, "server_info_file", "",
          "write JSON here: the bound ports once serving, and request "
          "statistics at shutdown")
    _flag(c, "shutdown_grace_seconds", 10.0,
          "on SIGTERM/SIGINT, wait this long for in-flight requests")
    _flag(c, "verbosity", "INFO", "logging level")
    c.boolean("version", False, "print the version and exit")


def _ignored_flags(c: Command) -> None:
    """tensorflow_model_server's flags this server accepts without applying them
    (:data:`IGNORED`; :func:`ignored_flags` names those a command line set)."""
    c.group("Accepted for tensorflow_model_server's command lines, not applied here")
    _flag(c, "enable_per_model_batching_parameters", False, "not applied here")
    _flag(c, "num_unload_threads", 0, "not applied here")
    _flag(c, "load_retry_interval_micros", 60_000_000,
          "not applied here: a failed version is retried at the next "
          "file-system poll")
    _flag(c, "flush_filesystem_caches", True, "accepted; no effect here")
    _flag(c, "use_alts_credentials", False, "not applied here")
    _flag(c, "platform_config_file", "", "not applied here")
    _flag(c, "remove_unused_fields_from_bundle_metagraph", True,
          "accepted; no effect")
    _flag(c, "prefer_tflite_model", False, "not applied here")
    _flag(c, "num_tflite_pools", _CPUS, "not applied here")
    _flag(c, "num_tflite_interpreters_per_pool", 1, "not applied here")
    _flag(c, "xla_cpu_compilation_enabled", False, "not applied here")
    _flag(c, "xla_gpu_compilation_enabled", False, "not applied here")
    _flag(c, "enable_profiler", True,
          "accepted; this server has no profiler service")
    _flag(c, "thread_pool_factory_config_file", "", "not applied here")
    _flag(c, "mixed_precision", "", "not applied here")
    _flag(c, "skip_initialize_tpu", False, "not applied here")
    _flag(c, "enable_serialization_as_tensor_content", False,
          "not applied here")


def _join_bool_values(argv: list[str], booleans: set[str]) -> list[str]:
    """``--flag true`` as ``--flag=true`` for a boolean flag (``true``/``false``/``1``/``0``,
    any case, stand apart in TF Serving's command lines as in any other flag's)."""
    out = []
    for arg in argv:
        previous = out[-1] if out else ""
        if (previous.lstrip("-") in booleans and previous.startswith("-") and "=" not in previous
                and arg.lower() in ("true", "false", "1", "0")):
            out[-1] = f"{previous}={arg}"
        else:
            out.append(arg)
    return out


def parse_args(argv: Sequence[str] | None) -> types.SimpleNamespace:
    """The flags of ``argv`` (default ``sys.argv[1:]``); a bad one ends the command with a
    one-line error and exit status 2. ``args.given`` is the set of flag names the command
    line named."""
    command = server_command()
    argv = sys.argv[1:] if argv is None else list(argv)
    booleans = {name for name in command.flag_values
                if command.flag_values[name].flag_type() == "bool"}
    args = command.parse(_join_bool_values(argv, booleans))
    if args.version:
        return args
    if not args.model_config_file and not args.model_base_path:
        command.error("pass --model_base_path (with --model_name) or --model_config_file")
    return args


def exit_before_tensorflow(argv: Sequence[str]) -> None:
    """Prints ``--help`` and exits 0 when ``argv`` asks for it, and ends a bad command line
    with its one-line error and exit status 2 (:func:`parse_args`): before anything imports
    TensorFlow, so that either takes a fraction of a second."""
    argv = list(argv)
    if any(arg in _HELP for arg in (argv[:argv.index("--")] if "--" in argv else argv)):
        server_command().parse(["--help"])
    parse_args(argv)


def ignored_flags(args: types.SimpleNamespace) -> list[str]:
    """``--name=value`` of every flag the command line set to something this server does
    not do (:data:`IGNORED`), in flag order."""
    return [f"--{name}={getattr(args, name)}" for name, harmless in IGNORED.items()
            if name in args.given and getattr(args, name) != harmless]
