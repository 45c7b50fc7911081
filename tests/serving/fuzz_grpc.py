"""The fuzz probe's gRPC cases: valid Predict requests and malformed ones (corrupt and
truncated bytes, wrong dtypes and shapes, unknown inputs, outputs, models, versions and
signatures, oversize messages), Classify, GetModelMetadata and GetModelStatus, each with
the status TF Serving gives for it. Used by :func:`tests.serving.fuzz.make_case`."""

from __future__ import annotations

import random

from tensorflow.core.framework import tensor_pb2, types_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    predict_pb2,
)

from tests.serving.fuzz import (
    OK,
    Case,
    CaseMaker,
    G,
    Target,
    _answers,
    _grpc_status,
    predict_request,
    strings,
)

INVALID = frozenset({G.INVALID_ARGUMENT.name})
PARSED_ANYHOW = frozenset({OK, G.INVALID_ARGUMENT.name, G.NOT_FOUND.name,
                           G.FAILED_PRECONDITION.name})


def grpc_case(category: str, rng: random.Random, t: Target, pool, pairs) -> Case:
    """The case of a gRPC ``category`` (``pairs``: its stories and questions, from ``pool``)."""
    return _Cases(category, rng, t, pool, pairs).first_case(
        (_valid_and_odd_bytes, _malformed_tensors, _malformed_fields, _unknown_names,
         _other_calls))


class _Cases(CaseMaker):
    """:class:`~tests.serving.fuzz.CaseMaker` with this transport's request helpers."""

    def pr(self, **kw) -> predict_pb2.PredictRequest:
        """A valid Predict request of :attr:`pairs` (to be spoiled)."""
        return predict_request(self.t, self.pairs, **kw)

    def predict(self, req, pairs_for_answers=None, expected=INVALID) -> Case:
        """A case that sends ``req`` by Predict; answered OK, its answers are checked
        against ``pairs_for_answers``' reference answers (if given)."""
        t = self.t

        def run(ctx):
            status, reply = _grpc_status(lambda: ctx.stub.Predict(req, timeout=60))
            return status, (_answers(reply, t.output) if status == OK else None)
        return Case(self.category, "grpc", run, frozenset(expected), pairs_for_answers)

    def status(self, call, expected) -> Case:
        """A case judged by its status alone; ``call(ctx)`` sends the request."""
        def run(ctx):
            return _grpc_status(lambda: call(ctx))[0], None
        return Case(self.category, "grpc", run, frozenset(expected))


def _valid_and_odd_bytes(c: _Cases) -> Case | None:
    """Valid requests, odd texts (empty, huge, control characters, invalid UTF-8) and
    corrupt or truncated serialized requests."""
    category, rng, t = c.category, c.rng, c.t
    if category == "grpc valid":
        return c.predict(c.pr(), c.pairs, {OK})
    if category == "grpc odd text":
        odd = rng.choice(["", "\x00\x00", "ünïcödé wörds ☃ 😀", "a" * 20_000,
                          "mary " * 3000, "\n" * 500, ". . . ? ! ,", "\u202e\ufeff"])
        req = predict_pb2.PredictRequest()
        req.model_spec.name = t.model
        bad_utf8 = rng.random() < 0.3
        story = odd.encode() + (b"\xff\xfe\xc3" if bad_utf8 else b"")
        s, q = t.inputs
        req.inputs[s].CopyFrom(strings([story]))
        req.inputs[q].CopyFrom(strings([rng.choice([odd, "where is mary?"])]))
        return c.predict(req, None, {OK})
    if category in ("grpc corrupt bytes", "grpc truncated request"):
        data = c.pr().SerializeToString()
        if category == "grpc truncated request" and len(data) > 2:
            data = data[: rng.randrange(1, len(data) - 1)]
        elif rng.random() < 0.5:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
        else:
            data = bytearray(data or b"\x00")
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
            data = bytes(data)
        return c.status(lambda ctx: ctx.raw_predict(data, timeout=60), PARSED_ANYHOW)
    return None


def _malformed_tensors(c: _Cases) -> Case | None:
    """Input tensors whose dtype, shape or contents do not fit: INVALID_ARGUMENT."""
    category, rng, pairs = c.category, c.rng, c.pairs
    s, q = c.t.inputs
    if category == "grpc wrong dtype":
        req = c.pr()
        bad = tensor_pb2.TensorProto(dtype=rng.choice([types_pb2.DT_FLOAT, types_pb2.DT_INT32,
                                                       types_pb2.DT_BOOL, 0, 999,
                                                       types_pb2.DT_RESOURCE]))
        bad.tensor_shape.dim.add(size=len(pairs))
        bad.float_val.extend([1.5] * len(pairs))
        req.inputs[rng.choice([s, q])].CopyFrom(bad)
        return c.predict(req)
    if category == "grpc negative dim":
        req = c.pr()
        req.inputs[s].tensor_shape.dim[0].size = rng.choice([-1, -2, -(2**40)])
        return c.predict(req)
    if category == "grpc unknown_rank with dims":
        req = c.pr()
        req.inputs[q].tensor_shape.unknown_rank = True
        return c.predict(req)
    if category == "grpc string tensor_content":
        req = c.pr()
        req.inputs[s].tensor_content = b"\x00\x01stray bytes"
        return c.predict(req)
    if category == "grpc more values than shape":
        req = predict_request(c.t, pairs + [c.pool[0]])
        req.inputs[s].tensor_shape.dim[0].size = len(pairs)
        return c.predict(req)
    if category == "grpc huge dims":
        req = c.pr()
        dims = rng.choice([[2**40], [2**31, 2**31], [1 << 62], [70_000]])
        req.inputs[s].tensor_shape.ClearField("dim")
        for d in dims:
            req.inputs[s].tensor_shape.dim.add(size=d)
        return c.predict(req)
    if category == "grpc rank 2":
        req = c.pr()
        req.inputs[s].CopyFrom(strings([p[0] for p in pairs], [len(pairs), 1]))
        return c.predict(req)
    return None


def _malformed_fields(c: _Cases) -> Case | None:
    """Output filters, inputs missing, extra or of another batch: INVALID_ARGUMENT."""
    category, rng, t, pairs = c.category, c.rng, c.t, c.pairs
    s, q = t.inputs
    if category == "grpc duplicate output_filter":
        req = c.pr()
        req.output_filter.extend([t.output, t.output])
        return c.predict(req)
    if category == "grpc unknown output_filter":
        req = c.pr()
        req.output_filter.extend([t.output, rng.choice(["nope", "", "ANSWER", "x" * 5000])])
        return c.predict(req)
    if category == "grpc missing input":
        req = c.pr()
        del req.inputs[rng.choice([s, q])]
        return c.predict(req)
    if category == "grpc extra input":
        req = c.pr()
        req.inputs[rng.choice(["extra", "", "ü" * 300])].CopyFrom(strings(["x"] * len(pairs)))
        return c.predict(req)
    if category == "grpc batch mismatch":
        req = predict_request(t, pairs + [c.pool[1]])
        req.inputs[q].CopyFrom(strings([p[1] for p in pairs]))
        return c.predict(req)
    return None


def _unknown_names(c: _Cases) -> Case | None:
    """Unknown models, versions and labels (NOT_FOUND) and signatures
    (FAILED_PRECONDITION)."""
    category, rng = c.category, c.rng
    if category == "grpc unknown model":
        return c.predict(c.pr(model=rng.choice(["nope", "", "ü" * 10, "x" * 20_000])),
                         None, {G.NOT_FOUND.name})
    if category == "grpc unknown version":
        req = c.pr()
        req.model_spec.version.value = rng.choice([0, -1, 42, 2**62])
        return c.predict(req, None, {G.NOT_FOUND.name})
    if category == "grpc unknown label":
        req = c.pr()
        req.model_spec.version_label = rng.choice(["stable", "canary", "ü"])
        return c.predict(req, None, {G.NOT_FOUND.name})
    if category == "grpc unknown signature":
        req = c.pr()
        req.model_spec.signature_name = rng.choice(["classify_me", "x" * 3000, "ü"])
        return c.predict(req, None, {G.FAILED_PRECONDITION.name})
    return None


def _other_calls(c: _Cases) -> Case | None:
    """Oversize messages, Classify, GetModelMetadata and GetModelStatus."""
    category, rng, t = c.category, c.rng, c.t
    if category == "grpc oversize":
        req = predict_request(t, [("a" * (t.max_message_bytes + 1024), "q")])
        return c.status(lambda ctx: ctx.stub.Predict(req, timeout=60),
                        {G.RESOURCE_EXHAUSTED.name})
    if category == "grpc classify":
        # No examples, a predict signature or none of that name: TF Serving's
        # INVALID_ARGUMENT (classifier.cc, util.cc)
        creq = classification_pb2.ClassificationRequest()
        creq.model_spec.name = t.model
        creq.model_spec.signature_name = rng.choice(["", "classify", "nope"])
        return c.status(lambda ctx: ctx.stub.Classify(creq, timeout=60), INVALID)
    if category == "grpc metadata":
        req = get_model_metadata_pb2.GetModelMetadataRequest()
        req.model_spec.name = t.model
        fields = rng.choice([["signature_def"], [], ["nope"]])
        req.metadata_field.extend(fields)
        expected = {OK} if fields == ["signature_def"] else {G.INVALID_ARGUMENT.name}
        return c.status(lambda ctx: ctx.stub.GetModelMetadata(req, timeout=60), expected)
    if category == "grpc status":
        req = get_model_status_pb2.GetModelStatusRequest()
        req.model_spec.name = rng.choice([t.model, "nope"])
        expected = {OK} if req.model_spec.name == t.model else {G.NOT_FOUND.name}
        return c.status(lambda ctx: ctx.models.GetModelStatus(req, timeout=60), expected)
    return None
