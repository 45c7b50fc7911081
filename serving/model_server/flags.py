"""The server's flags: ``tensorflow_model_server``'s names and defaults (README, "The server")."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from serving.core.runners import DEFAULT_MAX_ROWS
from serving.core.servable import RUNTIMES
from serving.model_server.server import DEFAULT_MAX_MESSAGE_BYTES


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
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
