"""The server's flags: every flag of TF Serving 2.x's ``tensorflow_model_server`` (its
``main.cc``), with its name, type and default, plus a few of this server's own (docs/serving.md,
"The server").

Flags take ``--flag=value`` or ``--flag value``; booleans also take ``true``/``false``,
``1``/``0`` or nothing (``--enable_batching`` is ``--enable_batching=true``). Flags that
cannot apply to this server (:data:`IGNORED`) are accepted; :func:`ignored_flags` names
the ones a command line asked for, and ``main`` logs them on one warning line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from serving.core.runners import DEFAULT_MAX_ROWS
from serving.core.servable import RUNTIMES
from serving.model_server.server import DEFAULT_MAX_MESSAGE_BYTES

_CPUS = os.cpu_count() or 1

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


def parse_bool(text: str | bool) -> bool:
    """``true``/``false``/``1``/``0`` (any case), as TensorFlow's command-line flags."""
    if isinstance(text, bool):
        return text
    value = text.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false/1/0, got {text!r}")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose ``add_argument`` takes the type from ``default`` (a bool
    default makes a boolean flag that also stands alone)."""

    def add_argument(self, *names, **kwargs):
        default = kwargs.get("default")
        if kwargs.get("action") is None and "type" not in kwargs and "choices" not in kwargs:
            if isinstance(default, bool):
                kwargs.update(type=parse_bool, nargs="?", const=True, metavar="BOOL")
            elif isinstance(default, (int, float)):
                kwargs["type"] = type(default)
        return super().add_argument(*names, **kwargs)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m serving.server", allow_abbrev=False,
                description="TF Serving-compatible gRPC/REST server for SavedModels "
                            "(flags as tensorflow_model_server).")

    # tensorflow_model_server's flags (main.cc), in its order.
    p.add_argument("--port", default=8500, help="gRPC port (0: a free one)")
    p.add_argument("--grpc_socket_path", default="", help="also serve gRPC on this UNIX socket")
    p.add_argument("--rest_api_port", default=0, help="REST port; 0 disables REST (-1: a free one)")
    p.add_argument("--rest_api_num_threads", default=0,
                   help="REST requests at once (0: --grpc_max_threads)")
    p.add_argument("--rest_api_timeout_in_ms", default=30_000,
                   help="deadline of a whole REST request: body not in by then 408, model "
                        "not reached by then 504 (DEADLINE_EXCEEDED)")
    p.add_argument("--rest_api_enable_cors_support", default=False,
                   help="CORS headers on REST answers")
    p.add_argument("--enable_batching", default=False,
                   help="batch concurrent Predict calls of a signature")
    p.add_argument("--allow_version_labels_for_unavailable_models", default=False,
                   help="a new version label may name a version that is not loaded yet")
    p.add_argument("--batching_parameters_file", default="",
                   help="TF Serving's text BatchingParameters")
    p.add_argument("--enable_per_model_batching_parameters", default=False, help="not applied here")
    p.add_argument("--model_config_file", default="",
                   help="text ModelServerConfig with several models (--model_name and "
                        "--model_base_path "
                        "are then ignored); relative base_paths start from the current directory")
    p.add_argument("--model_config_file_poll_wait_seconds", default=0.0,
                   help="re-read --model_config_file this often (0: never)")
    p.add_argument("--model_name", default="default", help="name of the single model")
    p.add_argument("--model_base_path", default="",
                   help="folder of the model's integer version folders")
    p.add_argument("--num_load_threads", default=0,
                   help="models loaded in parallel (0: 4)")
    p.add_argument("--num_unload_threads", default=0, help="not applied here")
    p.add_argument("--max_num_load_retries", default=5,
                   help="attempts per version before it is failed")
    p.add_argument("--load_retry_interval_micros", default=60_000_000,
                   help="not applied here: a failed version is retried at the next "
                        "file-system poll")
    p.add_argument("--file_system_poll_wait_seconds", default=1.0,
                   help="look for new versions this often (0: only at start)")
    p.add_argument("--flush_filesystem_caches", default=True, help="accepted; no effect here")
    p.add_argument("--tensorflow_session_parallelism", default=0,
                   help="threads of both TensorFlow pools where the next two flags are 0 "
                        "(0: TF's default)")
    p.add_argument("--tensorflow_session_config_file", default="",
                   help="text ConfigProto for each session")
    p.add_argument("--tensorflow_intra_op_parallelism", default=0,
                   help="threads in one op (0: TF's default)")
    p.add_argument("--tensorflow_inter_op_parallelism", default=0,
                   help="ops run in parallel (0: TF's default; negative: in the request's thread)")
    p.add_argument("--use_alts_credentials", default=False, help="not applied here")
    p.add_argument("--ssl_config_file", default="", help="text SSLConfig: serve gRPC over TLS")
    p.add_argument("--platform_config_file", default="", help="not applied here")
    p.add_argument("--per_process_gpu_memory_fraction", default=0.0,
                   help="GPU memory fraction in each session's ConfigProto (0: TF's default)")
    p.add_argument("--saved_model_tags", default="serve", help="comma-separated MetaGraph tags")
    p.add_argument("--grpc_channel_arguments", default="",
                   help="comma-separated gRPC server arguments "
                        "(grpc.max_connection_age_ms=2000,...)")
    p.add_argument("--grpc_max_threads", default=0,
                   help="gRPC handler threads (0: max(8, 4 x CPUs))")
    p.add_argument("--enable_model_warmup", default=True,
                   help="replay each version's assets.extra/tf_serving_warmup_requests "
                        "before it serves")
    p.add_argument("--num_request_iterations_for_warmup", default=0,
                   help="run each warm-up request this many times (used only if > 0: "
                        "else once, as TF Serving)")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("--monitoring_config_file", default="",
                   help="text MonitoringConfig: Prometheus metrics on the REST port")
    p.add_argument("--remove_unused_fields_from_bundle_metagraph", default=True,
                   help="accepted; no effect")
    p.add_argument("--prefer_tflite_model", default=False, help="not applied here")
    p.add_argument("--num_tflite_pools", default=_CPUS, help="not applied here")
    p.add_argument("--num_tflite_interpreters_per_pool", default=1, help="not applied here")
    p.add_argument("--enable_signature_method_name_check", default=False,
                   help="Classify/Regress/MultiInference: require the signature's method_name "
                        "(tensorflow/serving/classify or regress)")
    p.add_argument("--xla_cpu_compilation_enabled", default=False, help="not applied here")
    p.add_argument("--xla_gpu_compilation_enabled", default=False, help="not applied here")
    p.add_argument("--enable_profiler", default=True,
                   help="accepted; this server has no profiler service")
    p.add_argument("--thread_pool_factory_config_file", default="", help="not applied here")
    p.add_argument("--mixed_precision", default="", help="not applied here")
    p.add_argument("--skip_initialize_tpu", default=False, help="not applied here")
    p.add_argument("--enable_grpc_healthcheck_service", default=False,
                   help="serve grpc.health.v1.Health (SERVING once every model has a version)")
    p.add_argument("--enable_serialization_as_tensor_content", default=False,
                   help="not applied here")

    # This server's own.
    p.add_argument("--max_message_bytes", default=DEFAULT_MAX_MESSAGE_BYTES,
                   help="largest gRPC message / REST body, checked before decoding")
    p.add_argument("--max_rows_per_call", default=DEFAULT_MAX_ROWS,
                   help="batchable signatures run at most this many rows per call (0: never split)")
    p.add_argument("--servable_runtime", choices=RUNTIMES, default="session",
                   help="session: tf.compat.v1.Session by SignatureDef tensor names, as "
                        "tensorflow_model_server; function: TF2 signature functions")
    p.add_argument("--bind_address", default="0.0.0.0",
                   help="address to listen on (0.0.0.0: all interfaces, as TF Serving; "
                        "127.0.0.1: this "
                        "machine only)")
    p.add_argument("--shutdown_grace_seconds", default=10.0,
                   help="on SIGTERM/SIGINT, wait this long for in-flight requests")
    p.add_argument("--server_info_file", default="",
                   help="write JSON here: the bound ports once serving, and request "
                        "statistics at shutdown")
    p.add_argument("--verbosity", default="INFO", help="logging level")
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The flags of ``argv``; exits 2 with a usage message on a bad one. ``args.given`` is
    the set of flag names the command line named."""
    p = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    args.given = {a[2:].split("=", 1)[0] for a in argv if a.startswith("--")}
    if args.version:
        return args
    if not args.model_config_file and not args.model_base_path:
        p.error("pass --model_base_path (with --model_name) or --model_config_file")
    return args


def ignored_flags(args: argparse.Namespace) -> list[str]:
    """``--name=value`` of every flag the command line set to something this server does
    not do (:data:`IGNORED`), in flag order."""
    return [f"--{name}={getattr(args, name)}" for name, harmless in IGNORED.items()
            if name in args.given and getattr(args, name) != harmless]
