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
"""

from __future__ import annotations

import base64
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
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
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

INVALID = frozenset({G.INVALID_ARGUMENT.name})
PARSED_ANYHOW = frozenset({OK, G.INVALID_ARGUMENT.name, G.NOT_FOUND.name,
                           G.FAILED_PRECONDITION.name})


def _pairs(rng: random.Random, pool, n: int | None = None):
    n = rng.choice([0, 1, 1, 1, 2, 3, 8]) if n is None else n
    return [rng.choice(pool) for _ in range(n)]


def make_case(rng: random.Random, target: Target, pool, categories=None) -> Case:
    """One random case; the category is picked first (among ``categories`` if given),
    then its details."""
    from tests.serving import fuzz_partial
    s, q = target.inputs
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

    def pr(**kw):
        return predict_request(t, pairs, **kw)

    def grpc_predict(req, pairs_for_answers=None, expected=INVALID):
        def run(ctx):
            status, reply = _grpc_status(lambda: ctx.stub.Predict(req, timeout=60))
            return status, (_answers(reply, t.output) if status == OK else None)
        return Case(category, "grpc", run, frozenset(expected), pairs_for_answers)

    if category == "grpc valid":
        return grpc_predict(pr(), pairs, {OK})
    if category == "grpc odd text":
        odd = rng.choice(["", "\x00\x00", "ünïcödé wörds ☃ 😀", "a" * 20_000,
                          "mary " * 3000, "\n" * 500, ". . . ? ! ,", "\u202e\ufeff"])
        req = predict_pb2.PredictRequest()
        req.model_spec.name = t.model
        bad_utf8 = rng.random() < 0.3
        story = odd.encode() + (b"\xff\xfe\xc3" if bad_utf8 else b"")
        req.inputs[s].CopyFrom(strings([story]))
        req.inputs[q].CopyFrom(strings([rng.choice([odd, "where is mary?"])]))
        return grpc_predict(req, None, {OK})
    if category in ("grpc corrupt bytes", "grpc truncated request"):
        data = pr().SerializeToString()
        if category == "grpc truncated request" and len(data) > 2:
            data = data[: rng.randrange(1, len(data) - 1)]
            expected = PARSED_ANYHOW
        elif rng.random() < 0.5:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
            expected = PARSED_ANYHOW
        else:
            data = bytearray(data or b"\x00")
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
            data = bytes(data)
            expected = PARSED_ANYHOW

        def run(ctx):
            status, reply = _grpc_status(lambda: ctx.raw_predict(data, timeout=60))
            return status, None
        return Case(category, "grpc", run, expected)
    if category == "grpc wrong dtype":
        req = pr()
        bad = tensor_pb2.TensorProto(dtype=rng.choice([types_pb2.DT_FLOAT, types_pb2.DT_INT32,
                                                       types_pb2.DT_BOOL, 0, 999,
                                                       types_pb2.DT_RESOURCE]))
        bad.tensor_shape.dim.add(size=len(pairs))
        bad.float_val.extend([1.5] * len(pairs))
        req.inputs[rng.choice([s, q])].CopyFrom(bad)
        return grpc_predict(req)
    if category == "grpc negative dim":
        req = pr()
        req.inputs[s].tensor_shape.dim[0].size = rng.choice([-1, -2, -(2**40)])
        return grpc_predict(req)
    if category == "grpc unknown_rank with dims":
        req = pr()
        req.inputs[q].tensor_shape.unknown_rank = True
        return grpc_predict(req)
    if category == "grpc string tensor_content":
        req = pr()
        req.inputs[s].tensor_content = b"\x00\x01stray bytes"
        return grpc_predict(req)
    if category == "grpc more values than shape":
        req = predict_request(t, pairs + [pool[0]])
        req.inputs[s].tensor_shape.dim[0].size = len(pairs)
        return grpc_predict(req)
    if category == "grpc huge dims":
        req = pr()
        dims = rng.choice([[2**40], [2**31, 2**31], [1 << 62], [70_000]])
        req.inputs[s].tensor_shape.ClearField("dim")
        for d in dims:
            req.inputs[s].tensor_shape.dim.add(size=d)
        return grpc_predict(req)
    if category == "grpc duplicate output_filter":
        req = pr()
        req.output_filter.extend([t.output, t.output])
        return grpc_predict(req)
    if category == "grpc unknown output_filter":
        req = pr()
        req.output_filter.extend([t.output, rng.choice(["nope", "", "ANSWER", "x" * 5000])])
        return grpc_predict(req)
    if category == "grpc missing input":
        req = pr()
        del req.inputs[rng.choice([s, q])]
        return grpc_predict(req)
    if category == "grpc extra input":
        req = pr()
        req.inputs[rng.choice(["extra", "", "ü" * 300])].CopyFrom(strings(["x"] * len(pairs)))
        return grpc_predict(req)
    if category == "grpc batch mismatch":
        req = predict_request(t, pairs + [pool[1]])
        req.inputs[q].CopyFrom(strings([p[1] for p in pairs]))
        return grpc_predict(req)
    if category == "grpc rank 2":
        req = pr()
        req.inputs[s].CopyFrom(strings([p[0] for p in pairs], [len(pairs), 1]))
        return grpc_predict(req)
    if category == "grpc unknown model":
        return grpc_predict(pr(model=rng.choice(["nope", "", "ü" * 10, "x" * 20_000])),
                            None, {G.NOT_FOUND.name})
    if category == "grpc unknown version":
        req = pr()
        req.model_spec.version.value = rng.choice([0, -1, 42, 2**62])
        return grpc_predict(req, None, {G.NOT_FOUND.name})
    if category == "grpc unknown label":
        req = pr()
        req.model_spec.version_label = rng.choice(["stable", "canary", "ü"])
        return grpc_predict(req, None, {G.NOT_FOUND.name})
    if category == "grpc unknown signature":
        req = pr()
        req.model_spec.signature_name = rng.choice(["classify_me", "x" * 3000, "ü"])
        return grpc_predict(req, None, {G.FAILED_PRECONDITION.name})
    if category == "grpc oversize":
        req = predict_request(t, [("a" * (t.max_message_bytes + 1024), "q")])

        def run(ctx):
            return _grpc_status(lambda: ctx.stub.Predict(req, timeout=60))[0], None
        return Case(category, "grpc", run, frozenset({G.RESOURCE_EXHAUSTED.name}))
    if category == "grpc classify":
        # No examples, a predict signature or none of that name: TF Serving's
        # INVALID_ARGUMENT (classifier.cc, util.cc)
        creq = classification_pb2.ClassificationRequest()
        creq.model_spec.name = t.model
        creq.model_spec.signature_name = rng.choice(["", "classify", "nope"])

        def run(ctx):
            return _grpc_status(lambda: ctx.stub.Classify(creq, timeout=60))[0], None
        return Case(category, "grpc", run, frozenset({G.INVALID_ARGUMENT.name}))
    if category == "grpc metadata":
        req = get_model_metadata_pb2.GetModelMetadataRequest()
        req.model_spec.name = t.model
        fields = rng.choice([["signature_def"], [], ["nope"]])
        req.metadata_field.extend(fields)
        expected = {OK} if fields == ["signature_def"] else {G.INVALID_ARGUMENT.name}

        def run(ctx):
            return _grpc_status(lambda: ctx.stub.GetModelMetadata(req, timeout=60))[0], None
        return Case(category, "grpc", run, frozenset(expected))
    if category == "grpc status":
        req = get_model_status_pb2.GetModelStatusRequest()
        req.model_spec.name = rng.choice([t.model, "nope"])
        expected = {OK} if req.model_spec.name == t.model else {G.NOT_FOUND.name}

        def run(ctx):
            return _grpc_status(lambda: ctx.models.GetModelStatus(req, timeout=60))[0], None
        return Case(category, "grpc", run, frozenset(expected))
    return _rest_case(category, rng, t, pool, pairs)


def _rest_case(category: str, rng: random.Random, t: Target, pool, pairs) -> Case:
    s, q = t.inputs
    path = f"/v1/models/{t.model}:predict"
    bad = frozenset({"http:400"})

    def post(body: bytes, expected, answers_for=None, row=True, p=path, headers=None, **kw):
        def run(ctx):
            status, doc = http_post(t, p, body, headers, **kw)
            answers = None
            if status == "http:200" and isinstance(doc, dict):
                if row and "predictions" in doc:
                    answers = [x[t.output] for x in doc["predictions"]]
                elif "outputs" in doc:
                    answers = doc["outputs"][t.output]
            return status, (answers if answers_for is not None else _error_doc(status, doc))
        return Case(category, "rest", run, frozenset(expected), answers_for)

    def js(doc) -> bytes:
        return json.dumps(doc).encode()

    instances = [{s: a, q: b} for a, b in pairs]
    if category == "rest valid row":
        return post(js({"instances": instances}), {"http:200"}, pairs)
    if category == "rest valid columnar":
        return post(js({"inputs": {s: [p[0] for p in pairs], q: [p[1] for p in pairs]}}),
                    {"http:200"}, pairs, row=False)
    if category == "rest bad json":
        return post(rng.choice([b"{not json", b"", b"[1,2", b"nul", b'{"instances": [}']), bad)
    if category == "rest empty body":
        return post(b"", bad)
    if category == "rest invalid utf-8 body":
        return post(b'{"instances": ["\xff\xfe"]}', bad)
    if category == "rest deep nesting":
        depth = rng.choice([1000, 10_000, 100_000])
        inner = "[" * depth + "]" * depth
        return post(('{"instances": ' + inner + "}").encode(), bad)
    if category == "rest deep instances":
        depth = rng.choice([300, 900])
        one = "[" * depth + '"x"' + "]" * depth
        return post(('{"inputs": {"%s": %s, "%s": ["q"]}}' % (s, one, q)).encode(), bad)
    if category == "rest signature_name not a string":
        return post(js({"instances": instances, "signature_name": rng.choice(
            [["serving_default"], {"a": 1}, 3, None, True])}), bad)
    if category in ("rest number in string input", "rest bool in string input",
                    "rest null in string input"):
        value = {"rest number in string input": rng.choice([3.5, 0, -1, 1e300]),
                 "rest bool in string input": rng.choice([True, False]),
                 "rest null in string input": None}[category]
        doc = rng.choice([{"instances": [{s: value, q: "where?"}]},
                          {"inputs": {s: [value], q: ["where?"]}},
                          {"inputs": {s: ["a", value], q: ["x", "y"]}}])
        return post(js(doc), bad)
    if category == "rest ragged":
        return post(js({"inputs": {s: rng.choice([["a", ["b"]], [["a"], ["b", "c"]], [[]]]),
                                   q: ["x"]}}), bad)
    if category == "rest bad b64":
        return post(js({"instances": [{s: {"b64": rng.choice(["%%%", "abc", 3])}, q: "w"}]}),
                    bad)
    if category == "rest b64 story":
        story, question = rng.choice(pool)
        doc = {"instances": [{s: {"b64": base64.b64encode(story.encode()).decode()},
                              q: question}]}
        return post(js(doc), {"http:200"}, [(story, question)])
    if category == "rest lone surrogate":
        return post(b'{"instances": [{"%s": "\\ud800", "%s": "q"}]}' % (s.encode(), q.encode()),
                    bad)
    if category == "rest long story":
        story = "mary went to the kitchen . " * rng.choice([100, 4000])
        doc = {"inputs": {s: [story] + [""] * rng.choice([0, 999]),
                          q: ["where is mary ?"] * 0}}
        doc["inputs"][q] = ["where is mary ?"] * len(doc["inputs"][s])
        return post(js(doc), {"http:200"})
    if category == "rest unknown model":
        return post(js({"instances": instances}), {"http:404"},
                    p="/v1/models/" + rng.choice(["nope", "%C3%BC", "x" * 3000]) + ":predict")
    if category == "rest unknown path":
        return post(js({"instances": instances}), bad,
                    p=rng.choice(["/v2/x", "/v1/models", "/", "/v1/models/babi:explode"]))
    if category == "rest classify":
        return post(js({"examples": []}), {"http:400"}, p=f"/v1/models/{t.model}:classify")
    if category == "rest bad content-length":
        return post(js({"instances": instances}), bad,
                    headers={"Content-Length": rng.choice(["abc", "1.5", "0x10", "", "1e3"])})
    if category == "rest negative content-length":
        return post(js({"instances": instances}), bad, headers={"Content-Length": "-1"})
    if category == "rest chunked":
        return post(b"5\r\nhello\r\n0\r\n\r\n", {"http:411"},
                    headers={"Transfer-Encoding": "chunked", "Content-Length": None})
    if category == "rest oversize":
        size = t.max_message_bytes + 1
        return post(b"x" * min(size, 4 << 20), {"http:413"},
                    headers={"Content-Length": str(size)})
    if category == "rest short body":
        body = js({"instances": instances})
        return post(body, {"http:408"}, headers={"Content-Length": str(len(body) + 100)},
                    timeout=t.rest_timeout_s + 30)

    if category in ("rest put", "rest garbage request line", "rest status", "rest metadata"):
        if category == "rest put":
            data = f"PUT {path} HTTP/1.1\r\nContent-Length: 2\r\n\r\n{{}}".encode()
            expected = {"http:400"}
        elif category == "rest garbage request line":
            data = rng.choice([b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\r\n\r\n",
                               b"GET / HTTP/9.9\r\n\r\n", b"FOO /v1 HTTP/1.1\r\n\r\n",
                               b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"])
            expected = {"http:400", "http:405", "http:414", "http:431"}
        elif category == "rest status":
            name = rng.choice([t.model, "nope"])
            data = f"GET /v1/models/{name} HTTP/1.0\r\n\r\n".encode()
            expected = {"http:200"} if name == t.model else {"http:404"}
        else:
            data = f"GET /v1/models/{t.model}/metadata HTTP/1.0\r\n\r\n".encode()
            expected = {"http:200"}

        def run(ctx):
            status, doc = http_raw(t, data)
            return status, _error_doc(status, doc)
        return Case(category, "rest", run, frozenset(expected))
    raise AssertionError(category)


def _error_doc(status: str, doc) -> list[str] | None:
    """None when the reply is well-formed; else a one-item list with what is wrong (the
    runner reports it)."""
    if status.startswith("http:") and status != "http:200":
        if not (isinstance(doc, dict) and isinstance(doc.get("error"), str)):
            return [f"error body is not {{'error': ...}}: {str(doc)[:80]}"]
    return None


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
