"""serving.core.runners and serving.core.deadline: a request's deadline is the TensorFlow
run's timeout, so a run still going at the deadline is cancelled and no work continues.

The model counts its own loop iterations in a variable (its ``count`` signature reads it):
if the count no longer moves after DEADLINE_EXCEEDED, the run stopped; if it ends below
the iterations asked for, it stopped early.
"""

import time

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

from serving.core import deadline as deadline_module
from serving.core.batching import BatchingParameters
from serving.core.deadline import deadline_after
from serving.core.manager import ModelManager
from serving.core.runners import SessionRunner
from serving.core.servable import Servable
from serving.core.status import ServingError
from serving.model_server.server import ModelServer

#: Far more iterations than a test waits for: tens of seconds of work, so that without
#: cancellation a test fails on its timing instead of hanging.
LONG = 5_000_000


class Counter(tf.Module):
    """``serving_default(n)``: runs a loop of ``n[0]`` small matmuls, adding 1 to ``count``
    in each iteration, and answers the count for every row; ``count()`` reads it."""

    def __init__(self):
        super().__init__()
        self.count = tf.Variable(0, dtype=tf.int64)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64, name="n")])
    def serve(self, n):
        def body(i, x):
            self.count.assign_add(1)
            return i + 1, tf.linalg.matmul(x, x) / 32.0

        tf.while_loop(lambda i, x: i < n[0], body,
                      (tf.constant(0, tf.int64), tf.ones([32, 32])))
        return {"count": tf.fill(tf.shape(n), self.count.read_value())}

    @tf.function(input_signature=[])
    def read(self):
        return {"count": self.count.read_value()}


@pytest.fixture(scope="module")
def counter_base(tmp_path_factory):
    base = tmp_path_factory.mktemp("counter")
    module = Counter()
    tf.saved_model.save(module, str(base / "1"),
                        signatures={"serving_default": module.serve, "count": module.read})
    return base


def count(servable):
    return int(servable.signature("count").run({})["count"])


def assert_stopped(read, below):
    """The count stops moving (nothing runs any more) and is below ``below``. TensorFlow
    cancels the step when the run's timeout fires, which can come a little after the client
    stopped waiting: the count gets 2 s to settle (an uncancelled run moves for tens of seconds)."""
    time.sleep(2.0)
    first = read()
    time.sleep(0.5)
    assert read() == first
    assert 0 < first < below


@pytest.mark.parametrize("path", ["TF_SessionRun", "Session.run"])
def test_a_run_past_its_deadline_is_cancelled(counter_base, path):
    """Both of SessionRunner's paths: its own, and Session.run where TensorFlow lacks the
    binding it uses."""
    servable = Servable("counter", 1, str(counter_base / "1"))
    try:
        sig = servable.signature("")
        assert isinstance(sig.runner, SessionRunner)
        # This TensorFlow has the binding: the fast path is the one that runs.
        assert sig.runner._run_raw is not None
        if path == "Session.run":
            sig.runner._run_raw = None
        started = time.monotonic()
        with pytest.raises(ServingError) as err:
            sig.run({"n": np.array([LONG])}, deadline=deadline_after(0.3))
        assert err.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "cancelled" in err.value.message
        assert time.monotonic() - started < 10  # answered at the deadline, not after the run
        assert_stopped(lambda: count(servable), LONG)
        # A run that fits in its deadline (or has none) runs to its end.
        before = count(servable)
        out = sig.run({"n": np.array([500, 0])}, deadline=deadline_after(60))
        assert out["count"].tolist() == [before + 500] * 2
        assert sig.run({"n": np.array([7])})["count"].tolist() == [before + 507]
    finally:
        servable.close()


def test_grpc_deadline_cancels_a_batched_run_and_the_server_keeps_serving(counter_base):
    """Over gRPC with batching on: the client's deadline becomes the batch's run timeout."""
    config = model_server_config_pb2.ModelConfig(name="counter", base_path=str(counter_base),
                                                 model_platform="tensorflow")
    manager = ModelManager([config], batching=BatchingParameters(max_batch_size=8))
    try:
        servable = manager.servable("counter")

        def predict(n, timeout):
            req = predict_pb2.PredictRequest()
            req.model_spec.name = "counter"
            req.inputs["n"].CopyFrom(tf.make_tensor_proto(np.array([n], np.int64)))
            return stub.Predict(req, timeout=timeout)

        with ModelServer(manager, port=0) as server, \
                grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as err:
                predict(LONG, timeout=0.5)
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert time.monotonic() - started < 10
            assert_stopped(lambda: count(servable), LONG)
            before = count(servable)
            reply = predict(3, timeout=30)
            assert tf.make_ndarray(reply.outputs["count"]).tolist() == [before + 3]
    finally:
        manager.stop()


def test_a_batch_runs_until_the_latest_deadline_of_its_requests():
    assert deadline_module.latest([3.0, 5.0, 4.0]) == 5.0
    assert deadline_module.latest([3.0, None]) is None  # one request without a deadline
    assert deadline_module.timeout_ms(None) is None
    assert 1900 <= deadline_module.timeout_ms(deadline_after(2.0)) <= 2000
    with pytest.raises(ServingError) as err:
        deadline_module.timeout_ms(time.monotonic() - 0.001)
    assert err.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
