"""Request errors: a gRPC status code and a message, and TF Serving's HTTP mapping.

Every error a request can cause is a :class:`ServingError` with the code
``tensorflow_model_server`` gives for it; the gRPC service answers it with
``context.abort`` and the REST API with the HTTP status of TF Serving's
``tensorflow_serving/model_servers/http_rest_api_handler.cc`` / ``util/net_http`` mapping
(``ToHTTPStatusCode``) and an ``{"error": message}`` body.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import grpc
from tensorflow.core.framework import types_pb2

#: Longest message sent back: error details travel in gRPC trailers (8 KiB limit by
#: default), and messages quote request values (names, sizes) that a client controls.
MAX_MESSAGE_CHARS = 1500

CODE_BY_VALUE = {c.value[0]: c for c in grpc.StatusCode}

#: TF Serving's status -> HTTP mapping (``ToHTTPStatusCode`` in
#: tensorflow_serving/model_servers/http_rest_api_handler.cc's server).
HTTP_STATUS = {
    grpc.StatusCode.OK: 200, grpc.StatusCode.CANCELLED: 499, grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404, grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403, grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400, grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400, grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500, grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500, grpc.StatusCode.UNAUTHENTICATED: 401,
}


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text``, cut to ``limit`` characters (with a note saying how long it was)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... ({len(text)} characters)"


class ServingError(Exception):
    """A request error with its gRPC status code (message clipped for the wire)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        message = clip(message)
        super().__init__(message)
        self.code = code
        self.message = message


#: Where a TensorFlow error message stops being about the request: the node dump
#: (``[[{{node ...}}]]``), the op tag of an eager call (`` [Op:...]``).
_GRAPH_DUMP = re.compile(r"\s*(\[\[|\[Op:)")
#: Paragraphs of an eager error that locate the node in Python code, not the problem.
_LOCATION_PARAGRAPHS = ("Graph execution error", "Detected at node", "Detected in")


def model_error_message(message: str) -> str:
    """The problem a TensorFlow error states, without the graph dump a user cannot act
    on: no ``{{function_node ...}}`` tag, ``[[{{node ...}}]]`` node dump, ``[Op:...]`` tag,
    "Detected at node" stack, or "Original stack trace"; an ``Assert``'s own message
    alone; one line, prefixed with what happened.

    >>> model_error_message("Reduction axis -1 is empty in shape [1,50,0]\\n\\t "
    ...                     "[[{{node mem_n2n_1/memn2n_1/ArgMax}}]]")
    'the model could not run on this input: Reduction axis -1 is empty in shape [1,50,0]'
    """
    text = re.sub(r"\{\{function_node [^}]*\}\}", "", message)
    paragraphs = [p for p in re.split(r"\n\s*\n", text)
                  if p.strip() and not p.strip().startswith(_LOCATION_PARAGRAPHS)]
    text = _GRAPH_DUMP.split(paragraphs[0] if paragraphs else text, maxsplit=1)[0]
    asserted = re.match(r"\s*assertion failed: \[([^\]]*)\]", text)
    if asserted:
        text = asserted.group(1)
    text = " ".join(text.split()) or "an error without a message"
    return f"the model could not run on this input: {text}"


def invalid(message: str) -> ServingError:
    return ServingError(grpc.StatusCode.INVALID_ARGUMENT, message)


def dtype_name(enum: int) -> str:
    return types_pb2.DataType.Name(enum) if enum in types_pb2.DataType.values() else str(enum)


def shape_str(dims: Sequence[int] | None) -> str:
    if dims is None:
        return "unknown rank"
    if len(dims) > 8:
        return "[" + ", ".join(str(d) for d in dims[:8]) + f", ... ({len(dims)} dims)]"
    return "[" + ", ".join(str(d) for d in dims) + "]"
