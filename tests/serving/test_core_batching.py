"""serving.core.batching and batching_config with a fake runner that counts its calls and
records the shapes it was given: TF Serving's BatchingParameters text format, allowed batch
sizes, large-batch splitting, the queue bounded in batches, and deadlines."""

import concurrent.futures
import threading
import time

import grpc
import numpy as np
import pytest

from serving.core.batching import Batcher, merge_inputs
from serving.core.batching_config import BatchingParameters
from serving.core.deadline import deadline_after
from serving.core.status import ServingError


class FakeRunner:
    """Doubles ``x``; records every call's batch size. ``gate`` (an Event) holds each call
    until it is set; ``started`` is set when a call begins."""

    def __init__(self, gate=None):
        self.sizes = []
        self.gate = gate
        self.started = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, inputs, outputs):
        with self.lock:
            self.sizes.append(len(inputs["x"]))
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        return {"y": inputs["x"] * 2, "n": np.full(len(inputs["x"]), len(inputs["x"]))}


def rows(*values):
    return {"x": np.array(values, dtype=np.float32)}


def batcher(runner, **params):
    return Batcher(runner, ("y", "n"), BatchingParameters(**params), "test")


def code_of(call):
    with pytest.raises(ServingError) as info:
        call()
    return info.value.code, info.value.message


# ---- the text format --------------------------------------------------------------------


def test_parses_tf_servings_text_format_with_wrapper_values():
    params = BatchingParameters.parse("""
        max_batch_size { value: 32 }
        batch_timeout_micros { value: 1000 }
        max_enqueued_batches { value: 7 }
        num_batch_threads { value: 2 }
        thread_pool_name { value: "pool" }
        allowed_batch_sizes: 8
        allowed_batch_sizes: 16
        allowed_batch_sizes: 32
        pad_variable_length_inputs: true
    """)
    assert params == BatchingParameters(
        max_batch_size=32, batch_timeout_micros=1000, max_enqueued_batches=7,
        num_batch_threads=2, thread_pool_name="pool", allowed_batch_sizes=(8, 16, 32),
        pad_variable_length_inputs=True)
    split = BatchingParameters.parse("max_batch_size { value: 1000 } "
                                     "enable_large_batch_splitting { value: true } "
                                     "max_execution_batch_size { value: 64 }")
    assert split.execution_batch_size == 64 and split.max_batch_size == 1000
    assert BatchingParameters.parse("") == BatchingParameters()


def test_unknown_fields_and_bad_values_name_the_file_and_field(tmp_path):
    path = tmp_path / "batching.txt"
    path.write_text("max_batch_size { value: 32 }\nmax_batch_sise { value: 8 }\n")
    with pytest.raises(ValueError, match=r"batching\.txt.*max_batch_sise"):
        BatchingParameters.from_file(str(path))
    path.write_text("max_batch_size: 32\n")  # not wrapped, as TF Serving does not take it
    with pytest.raises(ValueError, match=r"batching\.txt"):
        BatchingParameters.from_file(str(path))
    path.write_text("max_batch_size { value: 32 } allowed_batch_sizes: 8 "
                    "allowed_batch_sizes: 16")
    with pytest.raises(ValueError, match=r"batching\.txt.*allowed_batch_sizes \(16\) must "
                                         r"equal max_batch_size \(32\)"):
        BatchingParameters.from_file(str(path))
    for bad in ("allowed_batch_sizes: 8 allowed_batch_sizes: 4 "
                "max_batch_size { value: 4 }", "num_batch_threads { value: 0 }",
                "max_execution_batch_size { value: 8 }"):
        with pytest.raises(ValueError):
            BatchingParameters.parse(bad)


# ---- allowed batch sizes, splitting, queue -------------------------------------------------


def test_allowed_batch_sizes_pad_the_batch_and_slice_the_outputs_back():
    runner = FakeRunner()
    b = batcher(runner, max_batch_size=8, allowed_batch_sizes=(2, 4, 8))
    try:
        out = b(rows(1, 2, 3), ("y", "n"))
        assert runner.sizes == [4]  # 3 rows padded to 4
        np.testing.assert_array_equal(out["y"], [2, 4, 6])
        assert out["n"].tolist() == [4, 4, 4]
        assert b(rows(5), ("y",))["y"].tolist() == [10] and runner.sizes[-1] == 2
        assert b(rows(*range(8)), ("y",))["y"].shape == (8,) and runner.sizes[-1] == 8
    finally:
        b.stop()


def test_without_splitting_a_request_over_max_batch_size_is_invalid():
    runner = FakeRunner()
    b = batcher(runner, max_batch_size=4)
    try:
        code, message = code_of(lambda: b(rows(*range(5)), ("y",)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "larger than the maximum" in message
        assert runner.sizes == []
    finally:
        b.stop()


def test_large_batch_splitting_spreads_a_request_over_batches():
    runner = FakeRunner()
    b = batcher(runner, max_batch_size=100, enable_large_batch_splitting=True,
                max_execution_batch_size=4, allowed_batch_sizes=(2, 4))
    try:
        out = b(rows(*range(11)), ("y",))
        np.testing.assert_array_equal(out["y"], np.arange(11) * 2)
        assert runner.sizes == [4, 4, 4]  # 4 + 4 + 3 padded to 4
        assert code_of(lambda: b(rows(*range(101)), ("y",)))[0] == \
            grpc.StatusCode.INVALID_ARGUMENT
    finally:
        b.stop()


def test_concurrent_requests_merge_and_each_gets_its_rows():
    runner = FakeRunner()
    b = batcher(runner, max_batch_size=8, batch_timeout_micros=50_000)
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda i: b(rows(i, i), ("y",))["y"].tolist(), range(8)))
        assert got == [[2 * i, 2 * i] for i in range(8)]
        assert sum(runner.sizes) == 16 and max(runner.sizes) <= 8 and len(runner.sizes) < 8
    finally:
        b.stop()


def test_queue_bounded_in_batches_answers_unavailable_when_full():
    gate = threading.Event()
    runner = FakeRunner(gate)
    b = batcher(runner, max_batch_size=2, max_enqueued_batches=2)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        running = pool.submit(b, rows(0), ("y",))
        assert runner.started.wait(10)  # the batch thread is busy: the rest queue
        queued = [pool.submit(b, rows(i, i), ("y",)) for i in (1, 2)]  # two full batches
        time.sleep(0.2)
        code, message = code_of(lambda: b(rows(3), ("y",)))
        assert code == grpc.StatusCode.UNAVAILABLE and "queue is full" in message
        gate.set()
        assert running.result(30)["y"].tolist() == [0]
        assert [f.result(30)["y"].tolist() for f in queued] == [[2, 2], [4, 4]]
    assert runner.sizes == [1, 2, 2]
    b.stop()


def test_pad_variable_length_inputs_merges_ragged_rows():
    parts = [{"x": np.ones((1, 2), np.int32)}, {"x": np.full((2, 3), 7, np.int32)}]
    merged = merge_inputs(parts, pad=True)
    assert merged["x"].shape == (3, 3) and merged["x"][0].tolist() == [1, 1, 1]
    with pytest.raises(ValueError):
        merge_inputs(parts, pad=False)


# ---- deadlines ------------------------------------------------------------------------------


def test_expired_requests_in_the_queue_never_reach_the_runner():
    """A slow batch holds the thread; requests queued behind it with short deadlines answer
    DEADLINE_EXCEEDED when their deadline passes, and the runner is never called for them,
    not even once the thread is free."""
    gate = threading.Event()
    runner = FakeRunner(gate)
    b = batcher(runner, max_batch_size=2, max_enqueued_batches=3)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        slow = pool.submit(b, rows(0), ("y",))
        assert runner.started.wait(10)
        started = time.monotonic()
        short = [pool.submit(b, rows(i, i), ("y",), deadline_after(0.2)) for i in (1, 2, 3)]
        for f in short:
            with pytest.raises(ServingError) as info:
                f.result(30)
            assert info.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 5  # answered at the deadline, not after the run
        # The queue is full of expired tasks; a new request still gets in (they are dropped).
        later = pool.submit(b, rows(9), ("y",))
        gate.set()
        assert slow.result(30)["y"].tolist() == [0]
        assert later.result(30)["y"].tolist() == [18]
    b.stop()
    assert runner.sizes == [1, 1]  # the slow call and the later one; none for expired ones


def test_a_batch_drops_its_expired_tasks_before_running():
    gate = threading.Event()
    runner = FakeRunner(gate)
    b = batcher(runner, max_batch_size=4)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        first = pool.submit(b, rows(0), ("y",))
        assert runner.started.wait(10)
        dying = pool.submit(b, rows(1), ("y",), deadline_after(0.1))
        living = pool.submit(b, rows(2), ("y",), deadline_after(30))
        with pytest.raises(ServingError):
            dying.result(30)
        gate.set()
        assert living.result(30)["y"].tolist() == [4] and first.result(30)
    b.stop()
    assert runner.sizes == [1, 1]  # the second batch ran only the live row


def test_signature_run_checks_the_deadline_before_and_after_the_model(monkeypatch):
    from serving.core.signature import Signature, TensorSpecInfo

    calls = []

    def slow(inputs, outputs):
        calls.append(1)
        time.sleep(0.3)
        return {"y": inputs["x"]}

    spec = TensorSpecInfo(1, (-1,))
    sig = Signature("s", slow, None, {"x": spec}, {"y": spec})
    assert code_of(lambda: sig.run(rows(1), deadline=time.monotonic() - 1))[0] == \
        grpc.StatusCode.DEADLINE_EXCEEDED
    assert calls == []
    code, message = code_of(lambda: sig.run(rows(1), deadline=deadline_after(0.1)))
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and "while the model ran" in message
    assert sig.run(rows(1), deadline=deadline_after(30))["y"].tolist() == [1]
    assert deadline_after(None) is None and deadline_after(float("inf")) is None


def test_chunked_runner_starts_no_chunk_after_the_deadline():
    from serving.core.runners import ChunkedRunner

    calls = []

    def slow(inputs, outputs):
        calls.append(len(inputs["x"]))
        time.sleep(0.2)
        return {"y": inputs["x"]}

    chunked = ChunkedRunner(slow, 2)
    with pytest.raises(ServingError) as info:
        chunked(rows(*range(10)), ("y",), deadline=deadline_after(0.3))
    assert info.value.code == grpc.StatusCode.DEADLINE_EXCEEDED and len(calls) == 2
