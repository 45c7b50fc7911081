"""A seeded randomized probe (tests.serving.fuzz) against an in-process server on loopback:
valid and malformed requests, gRPC and REST, each answered with TF Serving's status, and
valid ones with the right answers. The longer run is tests/serving/serving_fuzz.py."""

import os
import random
import time

import grpc
import pytest
from tensorflow_serving.apis import prediction_service_pb2_grpc

from tests.serving import fuzz, fuzz_partial
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer

from tensorflow_serving.config import model_server_config_pb2

#: Small limits, so that the oversize and short-body cases are cheap. The REST timeout is
#: also each REST request's deadline (TF Serving's run timeout: 504 once past it), so it must
#: leave a valid long story time to run on a loaded 2-core machine.
MAX_BYTES = 1 << 20
READ_TIMEOUT_S = 3.0


def model_config(name, base_path):
    return model_server_config_pb2.ModelConfig(name=name, base_path=str(base_path),
                                               model_platform="tensorflow")


@pytest.fixture(scope="module")
def fuzz_server(export_base):
    manager = ModelManager([model_config("babi", os.path.join(export_base, "babi"))])
    server = ModelServer(manager, port=0, rest_api_port=0, max_message_bytes=MAX_BYTES,
                         rest_api_timeout_s=READ_TIMEOUT_S).start()
    yield server
    server.stop(grace=2)


def target(server):
    return fuzz.Target(server.ports["grpc"], server.ports["rest"], "babi",
                       max_message_bytes=MAX_BYTES, rest_timeout_s=READ_TIMEOUT_S)


def test_seeded_fuzz_every_request_gets_tf_servings_status(fuzz_server, task1):
    pool = list(zip(task1.stories[:20], task1.questions[:20]))
    started = time.perf_counter()
    report = fuzz.run(target(fuzz_server), n=400, seed=12, threads=8, pool=pool)
    seconds = time.perf_counter() - started
    failures = [(r.category, r.status, r.detail) for r in report.failures]
    assert not failures, failures[:30]
    table = report.table()
    # The run covered every case, each with the status TF Serving gives.
    assert len(table) >= 40, sorted(table)
    for category, status in [("grpc corrupt bytes", None), ("rest deep nesting", "http:400"),
                             ("rest signature_name not a string", "http:400"),
                             ("rest number in string input", "http:400"),
                             ("grpc duplicate output_filter", "INVALID_ARGUMENT"),
                             ("grpc negative dim", "INVALID_ARGUMENT"),
                             ("grpc string tensor_content", "INVALID_ARGUMENT"),
                             ("rest bad content-length", "http:400"),
                             ("rest short body", "http:408"), ("grpc valid", "OK"),
                             ("rest valid row", "http:200")]:
        assert category in table, category
        if status is not None:
            assert set(table[category]) == {status}, (category, table[category])
    # No status a client's mistake should never cause.
    statuses = {s for row in table.values() for s in row}
    assert not statuses & (fuzz.SERVER_FAULTS | {"dropped", "http:500"}), statuses
    assert seconds < 60, seconds
    # Counted per status code, and still serving.
    stats = fuzz_server.stats()
    assert "INTERNAL" not in stats["errors"] and stats["errors"]["INVALID_ARGUMENT"] > 50
    with grpc.insecure_channel(f"127.0.0.1:{fuzz_server.port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        reply = stub.Predict(fuzz.predict_request(target(fuzz_server), pool[:2]), timeout=30)
    assert len(reply.outputs["answer"].string_val) == 2


def test_same_seed_same_requests(fuzz_server):
    t = target(fuzz_server)
    rngs = random.Random(7), random.Random(7)
    one, two = ([fuzz.make_case(rng, t, fuzz.STORIES).category for _ in range(50)]
                for rng in rngs)
    assert one == two and len(set(one)) > 20


def test_partial_inputs_are_answered_and_reported(fuzz_server):
    """Empty, long and unknown-word requests (tests.serving.fuzz_partial) over gRPC and
    REST: each answered OK with the outputs that say what the model did not take in."""
    report = fuzz.run(target(fuzz_server), n=40, seed=5, threads=4,
                      categories=fuzz_partial.CATEGORIES)
    assert not report.failures, [(r.category, r.status, r.detail) for r in report.failures]
    assert set(report.table()) == set(fuzz_partial.CATEGORIES)


@pytest.fixture(scope="module")
def entailment_server(entailment_export):
    """The untrained entailment export of tests/serving/conftest.py, served."""
    _, path = entailment_export
    manager = ModelManager([model_config("entailment", os.path.dirname(path))])
    server = ModelServer(manager, port=0, rest_api_port=0, max_message_bytes=MAX_BYTES,
                         rest_api_timeout_s=READ_TIMEOUT_S).start()
    yield server
    server.stop(grace=2)


def test_seeded_fuzz_of_an_entailment_model(entailment_server):
    """The probe against the entailment export (its string output: unknown_tokens): TF
    Serving's statuses, and malformed, empty and unknown-character formulas reported."""
    t = fuzz.Target(entailment_server.ports["grpc"], entailment_server.ports["rest"],
                    "entailment", inputs=("premise", "hypothesis"), output="unknown_tokens",
                    max_message_bytes=MAX_BYTES, family="entailment")
    pool = [("(a&b)", "a"), ("(p>q)", "(~(q)>~(p))"), ("a", "(a|b)")]
    # Not "rest long story": a thousand 100,000-character formulas cost an RNN over
    # 100,000 steps, past the REST timeout (504); a bAbI export cuts its stories instead.
    probe = random.Random(0)
    categories = {fuzz.make_case(probe, t, pool).category for _ in range(2000)}
    report = fuzz.run(t, n=120, seed=3, threads=4, pool=pool,
                      categories=categories - {"rest long story"})
    assert not report.failures, [(r.category, r.status, r.detail) for r in report.failures]
    assert set(fuzz_partial.CATEGORIES) <= set(report.table())
