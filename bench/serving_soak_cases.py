"""The requests of ``bench.serving_soak``: valid Predict requests (gRPC and REST) whose
answers are compared with a reference, and malformed ones, each with the statuses TF
Serving answers it with. Anything else a malformed request gets (OK, INTERNAL, a dropped
connection) is counted as unexpected.

A status is a gRPC code name (``OK``, ``INVALID_ARGUMENT``, ...) or ``http:<code>``; the
answers of a valid request that succeeded are a list of strings.
"""

import http.client
import json
import random

import grpc
from tensorflow.core.framework import tensor_pb2, types_pb2
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

#: Stories and questions of the valid requests (bAbI tasks 1 and 2 wording).
STORIES = [
    ("Mary moved to the bathroom. John went to the hallway.", "Where is Mary?"),
    ("Daniel went back to the hallway. Sandra moved to the garden. John moved to the office.",
     "Where is Daniel?"),
    ("Sandra journeyed to the bedroom. Mary travelled to the kitchen.", "Where is Sandra?"),
    ("John went to the garden. Mary went to the office. John travelled to the kitchen.",
     "Where is John?"),
    ("Mary got the football there. Mary went to the hallway. Mary dropped the football. "
     "Mary went back to the garden.", "Where is the football?"),
    ("Daniel picked up the apple. Daniel went to the bedroom. Sandra went to the office.",
     "Where is the apple?"),
]

#: The statuses of each malformed kind (TF Serving's; REST: HTTP codes).
EXPECTED = {
    "grpc unknown model": {"NOT_FOUND"},
    "grpc unknown version": {"NOT_FOUND"},
    "grpc unknown signature": {"FAILED_PRECONDITION"},
    "grpc missing input": {"INVALID_ARGUMENT"},
    "grpc wrong dtype": {"INVALID_ARGUMENT"},
    "grpc batch mismatch": {"INVALID_ARGUMENT"},
    "grpc corrupt bytes": {"INVALID_ARGUMENT", "INTERNAL"},
    "rest bad json": {"http:400"},
    "rest no instances": {"http:400"},
    "rest unknown input": {"http:400"},
    "rest unknown model": {"http:404"},
}



class Context:
    """One client's connections: a gRPC channel and stubs, and the REST address."""

    def __init__(self, grpc_port: int, rest_port: int, model: str) -> None:
        self.model = model
        self.rest_port = rest_port
        self.channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        self.stub = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self.raw_predict = self.channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict")

    def close(self) -> None:
        self.channel.close()

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """One REST POST on a fresh connection (the server speaks HTTP/1.0)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.rest_port, timeout=60)
        try:
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def strings(values, dims=None) -> tensor_pb2.TensorProto:
    t = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING)
    for d in (dims if dims is not None else [len(values)]):
        t.tensor_shape.dim.add(size=d)
    t.string_val.extend(v.encode() for v in values)
    return t


def predict_request(model: str, pairs) -> predict_pb2.PredictRequest:
    req = predict_pb2.PredictRequest()
    req.model_spec.name = model
    req.inputs["story"].CopyFrom(strings([s for s, _ in pairs]))
    req.inputs["question"].CopyFrom(strings([q for _, q in pairs]))
    return req


def grpc_call(call) -> tuple[str, object]:
    """``(status name, reply)`` of a gRPC call."""
    try:
        return "OK", call()
    except grpc.RpcError as exc:
        return exc.code().name, None


def grpc_answers(reply) -> list[str]:
    return [v.decode() for v in reply.outputs["answer"].string_val]


def rest_predict(ctx: Context, doc_or_bytes, model=None) -> tuple[str, list[str] | None]:
    body = (doc_or_bytes if isinstance(doc_or_bytes, bytes)
            else json.dumps(doc_or_bytes).encode())
    try:
        status, data = ctx.post(f"/v1/models/{model or ctx.model}:predict", body)
    except (OSError, http.client.HTTPException) as exc:
        return f"connection: {type(exc).__name__}", None
    if status != 200:
        return f"http:{status}", None
    return "http:200", [row["answer"] for row in json.loads(data)["predictions"]]


def valid_case(rng: random.Random, rest: bool):
    """A valid Predict of 1 to 3 stories: ``(kind, pairs, send)``; ``send(ctx)`` returns
    ``(status, answers, version)``, the version that answered (gRPC only, else None)."""
    pairs = [rng.choice(STORIES) for _ in range(rng.randint(1, 3))]
    if rest:
        doc = {"instances": [{"story": s, "question": q} for s, q in pairs]}
        return "rest valid", pairs, lambda ctx: (*rest_predict(ctx, doc), None)

    def send(ctx):
        status, reply = grpc_call(lambda: ctx.stub.Predict(
            predict_request(ctx.model, pairs), timeout=60))
        if status != "OK":
            return status, None, None
        return status, grpc_answers(reply), reply.model_spec.version.value
    return "grpc valid", pairs, send


def malformed_case(rng: random.Random, rest: bool):
    """A malformed request: ``(kind, send)``, ``kind`` a key of :data:`EXPECTED`."""
    pair = [rng.choice(STORIES)]
    if rest:
        kind = rng.choice([k for k in EXPECTED if k.startswith("rest")])
        doc = {"rest bad json": b'{"instances": [{"story": ',
               "rest no instances": {"inputs_wrong": []},
               "rest unknown input": {"instances": [{"tale": pair[0][0],
                                                     "question": pair[0][1]}]},
               "rest unknown model": {"instances": [{"story": pair[0][0],
                                                     "question": pair[0][1]}]}}[kind]
        model = "no_such_model" if kind == "rest unknown model" else None
        return kind, lambda ctx: rest_predict(ctx, doc, model)
    kind = rng.choice([k for k in EXPECTED if k.startswith("grpc")])

    def send(ctx):
        req = predict_request(ctx.model, pair)
        if kind == "grpc unknown model":
            req.model_spec.name = "no_such_model"
        elif kind == "grpc unknown version":
            req.model_spec.version.value = 10**9
        elif kind == "grpc unknown signature":
            req.model_spec.signature_name = "no_such_signature"
        elif kind == "grpc missing input":
            del req.inputs["question"]
        elif kind == "grpc wrong dtype":
            bad = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT)
            bad.tensor_shape.dim.add(size=1)
            bad.float_val.append(1.5)
            req.inputs["story"].CopyFrom(bad)
        elif kind == "grpc batch mismatch":
            req.inputs["story"].CopyFrom(strings([pair[0][0]] * 2))
        elif kind == "grpc corrupt bytes":
            data = req.SerializeToString()[:rng.randrange(1, 40)] + b"\x0f\xff"  # wire type 7
            return grpc_call(lambda: ctx.raw_predict(data, timeout=60))[0], None
        return grpc_call(lambda: ctx.stub.Predict(req, timeout=60))[0], None
    return kind, send
