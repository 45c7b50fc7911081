"""A seeded, randomized probe of a running server: valid and malformed requests, gRPC and
REST, each checked against the status TF Serving gives for it.

Used by ``tests/serving/test_fuzz.py`` (a few hundred requests),
``tests/serving/test_rest_http.py`` and ``tests/serving/serving_fuzz.py`` (thousands); test
code, not part of the served package (the wheel does not ship ``tests/``).

A request *fails* when the server answers a status outside its category's expected set,
INTERNAL/UNKNOWN or any 5xx other than 501 for an unimplemented verb, a REST error without
an ``{"error": ...}`` JSON body, a dropped or reset connection, or (valid requests) answers
that differ from the reference answers taken before the run.

The target is a served string-in/string-out model with two DT_STRING ``[-1]`` inputs
and a string output (the bAbI export: ``story``, ``question`` -> ``answer``).

The cases themselves live next to it: ``tests/serving/fuzz_grpc.py`` (gRPC),
``tests/serving/fuzz_rest.py`` (REST) and ``tests/serving/fuzz_partial.py`` (partial
inputs); this module holds what they share, picks the cases and runs them.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import json
import random
import socket
import threading
import time
from collections.abc import Callable

import grpc
from tensorflow.core.framework import tensor_pb2, types_pb2
from tensorflow_serving.apis import (
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

OK = "OK"
G = grpc.StatusCode
#: gRPC codes that never answer a client's mistake.
SERVER_FAULTS = {G.INTERNAL.name, G.UNKNOWN.name, G.DATA_LOSS.name, G.UNAVAILABLE.name}

STORIES = [
    ("Mary moved to the bathroom.\nJohn went to the hallway.", "Where is Mary?"),
    ("Daniel went back to the hallway.\nSandra moved to the garden.", "Where is Daniel?"),
    ("Sandra journeyed to the bedroom.\nMary travelled to the kitchen.", "Where is Sandra?"),
    ("John went to the office.\nMary went to the garden.\nJohn moved to the kitchen.",
     "Where is John?"),
]


@dataclasses.dataclass
class Target:
    """Where the server listens and what it serves."""

    grpc_port: int
    rest_port: int | None
    model: str = "babi"
    inputs: tuple[str, str] = ("story", "question")
    output: str = "answer"
    max_message_bytes: int | None = None  # the server's limit, for the oversize cases
    rest_timeout_s: float | None = None  # the server's read timeout; None: skip short bodies
    #: The served model's family, for the partial-input cases (tests.serving.fuzz_partial:
    #: "babi", "entailment"); None: none of them.
    family: str | None = "babi"
    host: str = "127.0.0.1"


@dataclasses.dataclass
class Case:
    category: str
    transport: str  # "grpc" | "rest"
    run: Callable[[Context], tuple[str, list[str] | None]]  # -> (status, answers or None)
    expected: frozenset[str]
    valid_pairs: list[tuple[str, str]] | None = None  # for answer checks
    #: What is wrong with an answered request's payload, or None (tests.serving.fuzz_partial).
    check: Callable[[object], str | None] | None = None


@dataclasses.dataclass
class CaseMaker:
    """What every family of a transport's cases builds on: the category, its random source,
    the target, the story pool and the case's pairs (``fuzz_grpc``, ``fuzz_rest``)."""

    category: str
    rng: random.Random
    t: Target
    pool: list
    pairs: list

    def first_case(self, families) -> Case:
        """The case of the first family (``family(self) -> Case | None``) that makes one of
        :attr:`category`."""
        for family in families:
            case = family(self)
            if case is not None:
                return case
        raise AssertionError(self.category)


@dataclasses.dataclass
class Result:
    category: str
    transport: str
    status: str
    ok: bool
    detail: str = ""


class Context:
    """Per-thread channels and stubs."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.channel = grpc.insecure_channel(
            f"{target.host}:{target.grpc_port}",
            options=[("grpc.max_send_message_length", 256 * 1024 * 1024),
                     ("grpc.max_receive_message_length", 256 * 1024 * 1024)])
        self.stub = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self.models = model_service_pb2_grpc.ModelServiceStub(self.channel)
        self.raw_predict = self.channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict", request_serializer=None,
            response_deserializer=None)

    def close(self) -> None:
        self.channel.close()


# --------------------------------------------------------------------------------------
# Request builders
# --------------------------------------------------------------------------------------


def strings(values: list, dims: list[int] | None = None) -> tensor_pb2.TensorProto:
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING)
    proto.string_val.extend(v if isinstance(v, bytes) else v.encode("utf-8") for v in values)
    for d in ([len(values)] if dims is None else dims):
        proto.tensor_shape.dim.add(size=d)
    return proto


def predict_request(target: Target, pairs, **kwargs) -> predict_pb2.PredictRequest:
    req = predict_pb2.PredictRequest()
    req.model_spec.name = kwargs.pop("model", target.model)
    s, q = target.inputs
    req.inputs[s].CopyFrom(strings([p[0] for p in pairs]))
    req.inputs[q].CopyFrom(strings([p[1] for p in pairs]))
    return req


def _grpc_status(call: Callable[[], object]) -> tuple[str, object]:
    try:
        return OK, call()
    except grpc.RpcError as exc:
        return exc.code().name, exc.details()


def _answers(response, output: str) -> list[str] | None:
    if not isinstance(response, predict_pb2.PredictResponse):
        try:
            response = predict_pb2.PredictResponse.FromString(response)
        except Exception:  # noqa: BLE001
            return None
    return [a.decode("utf-8", "replace") for a in response.outputs[output].string_val]


def http_raw(target: Target, data: bytes, timeout: float = 60.0,
             send_delay: float = 0.0) -> tuple[str, object]:
    """Sends raw bytes to the REST port and reads the whole answer (HTTP/1.0: the server
    closes). Returns ("http:<code>", parsed JSON body) or ("dropped", reason)."""
    chunks: list[bytes] = []
    try:
        with socket.create_connection((target.host, target.rest_port), timeout=timeout) as sock:
            try:
                sock.sendall(data)
            except OSError:
                pass  # the server may answer before reading everything (413)
            if send_delay:
                time.sleep(send_delay)
            while True:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError as exc:  # reset, refused, timed out
        if not chunks:
            return "dropped", f"{type(exc).__name__}: {exc}"
    reply = b"".join(chunks)
    head, _, body = reply.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return "dropped", f"no HTTP status line: {reply[:80]!r}"
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        return "http:" + parts[1].decode(), f"body is not JSON: {body[:80]!r}"
    return "http:" + parts[1].decode(), doc


def http_post(target: Target, path: str, body: bytes, headers: dict | None = None,
              **kwargs) -> tuple[str, object]:
    hdrs = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    hdrs.update(headers or {})
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in hdrs.items() if v is not None) + "\r\n"
    return http_raw(target, head.encode("latin-1") + body, **kwargs)


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------


def _pairs(rng: random.Random, pool, n: int | None = None):
    n = rng.choice([0, 1, 1, 1, 2, 3, 8]) if n is None else n
    return [rng.choice(pool) for _ in range(n)]


def make_case(rng: random.Random, target: Target, pool, categories=None) -> Case:
    """One random case; the category is picked first (among ``categories`` if given),
    then its details."""
    from tests.serving import fuzz_grpc, fuzz_partial, fuzz_rest
    t = target
    grpc_cases = [
        "grpc valid", "grpc valid", "grpc valid", "grpc odd text", "grpc corrupt bytes",
        "grpc truncated request", "grpc wrong dtype", "grpc negative dim",
        "grpc unknown_rank with dims", "grpc string tensor_content", "grpc more values than shape",
        "grpc huge dims", "grpc duplicate output_filter", "grpc unknown output_filter",
        "grpc missing input", "grpc extra input", "grpc batch mismatch", "grpc rank 2",
        "grpc unknown model", "grpc unknown version", "grpc unknown label",
        "grpc unknown signature", "grpc classify", "grpc metadata", "grpc status"]
    rest_cases = [
        "rest valid row", "rest valid columnar", "rest bad json", "rest deep nesting",
        "rest signature_name not a string", "rest number in string input",
        "rest bool in string input", "rest null in string input", "rest ragged",
        "rest bad b64", "rest b64 story", "rest unknown model", "rest unknown path",
        "rest put", "rest classify", "rest bad content-length", "rest negative content-length",
        "rest garbage request line", "rest lone surrogate", "rest invalid utf-8 body",
        "rest long story", "rest status", "rest metadata", "rest empty body",
        "rest chunked", "rest deep instances"]
    if t.max_message_bytes:
        grpc_cases.append("grpc oversize")
        rest_cases.append("rest oversize")
    if t.rest_timeout_s:
        rest_cases.append("rest short body")
    if t.family in fuzz_partial.PARTIAL:
        grpc_cases.append("grpc partial input")
        rest_cases.append("rest partial input")
    names = grpc_cases + (rest_cases if t.rest_port else [])
    if categories is not None:
        names = [n for n in names if n in categories]
    category = rng.choice(names)
    if category in fuzz_partial.CATEGORIES:
        return fuzz_partial.partial_case(category, rng, t)
    pairs = _pairs(rng, pool)
    if category.startswith("grpc "):
        return fuzz_grpc.grpc_case(category, rng, t, pool, pairs)
    return fuzz_rest.rest_case(category, rng, t, pool, pairs)


# --------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------


def reference_answers(target: Target, pool) -> dict[tuple[str, str], str]:
    """Each pool pair's answer from one plain gRPC request (before the run)."""
    ctx = Context(target)
    try:
        reply = ctx.stub.Predict(predict_request(target, pool), timeout=120)
        answers = _answers(reply, target.output)
        return dict(zip(pool, answers))
    finally:
        ctx.close()


@dataclasses.dataclass
class Report:
    results: list[Result]
    seconds: float

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if not r.ok]

    def table(self) -> dict[str, dict[str, int]]:
        out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in self.results:
            out[r.category][r.status] += 1
        return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def run(target: Target, n: int, seed: int = 0, threads: int = 8, pool=None,
        on_result: Callable[[int, Result], None] | None = None, categories=None) -> Report:
    """Generates ``n`` cases from ``seed`` (of ``categories`` only, if given) and sends them
    from ``threads`` threads."""
    pool = list(pool or STORIES)
    reference = reference_answers(target, pool)
    rng = random.Random(seed)
    cases = [make_case(random.Random(rng.getrandbits(64)), target, pool, categories)
             for _ in range(n)]
    local = threading.local()
    contexts: list[Context] = []
    lock = threading.Lock()

    def one(i: int) -> Result:
        case = cases[i]
        ctx = getattr(local, "ctx", None)
        if ctx is None:
            ctx = local.ctx = Context(target)
            with lock:
                contexts.append(ctx)
        try:
            status, payload = case.run(ctx)
        except Exception as exc:  # noqa: BLE001 - a client-side surprise is a failure too
            status, payload = "client error", [f"{type(exc).__name__}: {exc}"]
        result = _judge(case, status, payload, reference)
        if on_result is not None:
            on_result(i, result)
        return result

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool_exec:
        results = list(pool_exec.map(one, range(n)))
    for ctx in contexts:
        ctx.close()
    return Report(results, time.perf_counter() - started)


def _judge(case: Case, status: str, payload, reference) -> Result:
    def fail(why: str) -> Result:
        return Result(case.category, case.transport, status, False, why)

    if status in SERVER_FAULTS or (status.startswith("http:5") and status != "http:501"):
        return fail(f"server fault: {payload}")
    if isinstance(payload, str) and ("{{node" in payload or "{{function_node" in payload):
        return fail(f"a TensorFlow node dump reached the client: {payload[:200]}")
    if status not in case.expected:
        return fail(f"expected {sorted(case.expected)}: {str(payload)[:200]}")
    if case.check is not None:
        why = case.check(payload)
        if why is not None:
            return fail(why)
        return Result(case.category, case.transport, status, True)
    if case.valid_pairs is not None:
        want = [reference[p] for p in case.valid_pairs]
        if payload != want:
            return fail(f"answers {str(payload)[:120]} != reference {str(want)[:120]}")
    elif isinstance(payload, list) and payload and isinstance(payload[0], str) and (
            payload[0].startswith("error body")):
        return fail(payload[0])
    return Result(case.category, case.transport, status, True)
