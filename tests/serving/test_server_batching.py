"""serving.server with batching over loopback: batched requests give the answers of one
big request (and refuse mismatched and oversized batches), and a gRPC deadline reaches the
batch queue, so that requests expired while waiting behind a slow batch never run.
"""

import dataclasses
import os
import threading
import time

import grpc
from tensorflow_serving.apis import prediction_service_pb2_grpc

from serving.core.batching import Batcher, BatchingParameters
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer
from tests.serving.server_requests import answers, assert_status, model_config, request


def test_batching_gives_the_same_answers(export_base, task1):
    manager = ModelManager([model_config("babi", os.path.join(export_base, "babi"))],
                           batching=BatchingParameters(max_batch_size=48,
                                                       batch_timeout_micros=5000,
                                                       enable_large_batch_splitting=True,
                                                       max_execution_batch_size=16))
    n = min(48, len(task1.samples))
    results = {}
    with ModelServer(manager, port=0) as server, \
            grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        want = answers(stub.Predict(request(task1.stories[:n], task1.questions[:n]), timeout=60))

        def ask(i):
            results[i] = answers(stub.Predict(request([task1.stories[i]], [task1.questions[i]]),
                                              timeout=60))[0]

        threads = [threading.Thread(target=lambda k=k: [ask(i) for i in range(k, n, 8)])
                   for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        bad = request(task1.stories[:2], task1.questions[:1])
        assert_status(lambda: stub.Predict(bad, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                      "same batch size")
        rows = [i % len(task1.stories) for i in range(49)]  # over max_batch_size
        big = request([task1.stories[i] for i in rows], [task1.questions[i] for i in rows])
        assert_status(lambda: stub.Predict(big, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                      "larger than the maximum batch size 48")
    assert [results[i] for i in range(n)] == want


def test_grpc_deadline_reaches_the_batch_queue_and_expired_requests_never_run(export_base,
                                                                              task1):
    """The client's gRPC deadline travels down to the batcher: requests that wait behind a
    slow batch past their deadline answer DEADLINE_EXCEEDED and are never run, even after
    the slow batch has finished."""
    manager = ModelManager([model_config("babi", os.path.join(export_base, "babi"))])
    servable = manager.servable("babi")
    sig = servable.signature("")
    gate, started, calls = threading.Event(), threading.Event(), []

    def slow(inputs, outputs):
        calls.append(len(inputs["story"]))
        started.set()
        gate.wait(30)
        return sig.runner(inputs, outputs)

    batcher = Batcher(slow, tuple(sig.outputs), BatchingParameters(max_batch_size=8), "slow")
    servable.signatures[sig.name] = dataclasses.replace(sig, runner=batcher)
    req = request(task1.stories[:1], task1.questions[:1])
    try:
        with ModelServer(manager, port=0) as server, \
                grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            first = stub.Predict.future(req, timeout=60)
            assert started.wait(30)
            late = [stub.Predict.future(req, timeout=0.5) for _ in range(3)]
            for f in late:
                assert f.exception(30).code() == grpc.StatusCode.DEADLINE_EXCEEDED
            time.sleep(0.5)  # the server answered them too (its own deadline check)
            gate.set()
            assert answers(first.result(60)) and calls == [1]
            assert answers(stub.Predict(req, timeout=30))
        assert calls == [1, 1]  # no call for the three expired requests
        assert server.stats()["errors"].get("DEADLINE_EXCEEDED") == 3
    finally:
        batcher.stop()
        manager.stop()
