"""``--rest_api_timeout_in_ms`` is the deadline of the whole REST request, as TF Serving's
REST handler turns it into the run's timeout: a request still in the batch queue when it
passes answers 504 (DEADLINE_EXCEEDED in TF Serving's ``ToHTTPStatusCode``) and the model
never runs it. A fake model (a gated runner behind a real Batcher) keeps TensorFlow out."""

import concurrent.futures
import contextlib
import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from tensorflow.core.framework import types_pb2

from serving.core.batching import Batcher
from serving.core.batching_config import BatchingParameters
from serving.core.signature import Signature, TensorSpecInfo
from serving.core.stats import Stats
from serving.model_server.rest_api import HttpServer, RestApi

TIMEOUT_S = 2.0


class GatedRunner:
    """Doubles ``x``; records each call's rows; holds every call until ``gate`` is set."""

    def __init__(self):
        self.calls = []
        self.gate = threading.Event()
        self.started = threading.Event()

    def __call__(self, inputs, outputs):
        self.calls.append(inputs["x"].tolist())
        self.started.set()
        assert self.gate.wait(30)
        return {"y": inputs["x"] * 2}


class FakeManager:
    """The one model ``m``, whose default signature is ``signature``."""

    def __init__(self, signature):
        self._servable = type("Servable", (), {"signature": lambda _self, name: signature})()

    @contextlib.contextmanager
    def acquire(self, name, version=None, label=None):
        yield self._servable


@pytest.fixture()
def batched():
    runner = GatedRunner()
    spec = TensorSpecInfo(types_pb2.DT_FLOAT, (-1,))
    batcher = Batcher(runner, ("y",), BatchingParameters(max_batch_size=4), "m-default")
    sig = Signature("serving_default", batcher, None, {"x": spec}, {"y": spec})
    server = HttpServer(("127.0.0.1", 0), RestApi(FakeManager(sig), Stats()), max_threads=4,
                        max_body_bytes=1 << 20, read_timeout_s=TIMEOUT_S)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    yield runner, batcher, server.server_address[1]
    runner.gate.set()
    server.shutdown()
    server.server_close()
    batcher.stop()


def predict(port, value):
    body = json.dumps({"inputs": {"x": [value]}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models/m:predict", body)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_request_that_expires_in_the_batch_queue_is_504_and_never_runs(batched):
    runner, batcher, port = batched
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(predict, port, 1.0)
        assert runner.started.wait(30)  # the first request holds the only batch thread
        started = time.monotonic()
        status, doc = predict(port, 2.0)  # queued behind it until its deadline passes
        waited = time.monotonic() - started
        assert status == 504 and "Deadline exceeded" in doc["error"], doc
        assert waited < TIMEOUT_S + 10  # answered at its deadline, not after the first run
        runner.gate.set()
        first.result(60)
    batcher.stop()
    assert runner.calls == [[1.0]]  # the model never saw the expired request's row


def test_a_request_within_its_deadline_is_answered(batched):
    runner, _, port = batched
    runner.gate.set()
    assert predict(port, 3.0) == (200, {"outputs": [6.0]})
