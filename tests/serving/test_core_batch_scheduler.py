"""serving.core.batch_scheduler: one pool of batch threads shared by every batched signature,
as TF Serving's SharedBatchScheduler; the queues take turns, so a busy one starves no other."""

import concurrent.futures
import os
import threading

import numpy as np
import pytest
from tensorflow_serving.config import model_server_config_pb2

from serving.core.batch_scheduler import BatchScheduler
from serving.core.batching import Batcher
from serving.core.batching_config import BatchingParameters
from serving.core.manager import ModelManager


class Recorder:
    """Runner of queue ``name``: logs (name, rows) in ``log`` and waits for ``gate``."""

    def __init__(self, name, log, gate):
        self.name, self.log, self.gate = name, log, gate
        self.started = threading.Event()

    def __call__(self, inputs, outputs):
        self.log.append((self.name, len(inputs["x"])))
        self.started.set()
        assert self.gate.wait(30)
        return {"y": inputs["x"] * 2}


def x(*values):
    return {"x": np.array(values, dtype=np.float32)}


def queue(scheduler, runner, **params):
    return Batcher(runner, ("y",), BatchingParameters(**params), runner.name, scheduler)


def test_two_signatures_share_the_threads_and_take_turns():
    """One thread, two queues: while A's batch runs, B waits for the same thread; then the
    queues alternate, so B's one batch runs before A's backlog."""
    scheduler = BatchScheduler(1, "pool")
    log, gate = [], threading.Event()
    a, b = Recorder("a", log, gate), Recorder("b", log, gate)
    qa = queue(scheduler, a, max_batch_size=1)
    qb = queue(scheduler, b, max_batch_size=1)
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            first = pool.submit(qa, x(0), ("y",))
            assert a.started.wait(30)
            backlog = [pool.submit(qa, x(i), ("y",)) for i in range(1, 5)]
            while len(qa._batches) < 4:
                threading.Event().wait(0.01)
            other = pool.submit(qb, x(9), ("y",))
            while not qb._batches:
                threading.Event().wait(0.01)
            assert not b.started.wait(0.3)  # the only thread is A's: B queues
            gate.set()
            assert other.result(30)["y"].tolist() == [18]
            assert [f.result(30)["y"].tolist() for f in [first] + backlog] == \
                [[0], [2], [4], [6], [8]]
        names = [name for name, _ in log]
        assert names[:3] == ["a", "b", "a"]  # B's turn came right after the running batch
        assert [t.name for t in threading.enumerate()].count("pool-0") == 1
    finally:
        qa.stop()
        qb.stop()
        scheduler.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("pool-")]


def test_two_threads_run_two_queues_at_once():
    scheduler = BatchScheduler(2, "pool2")
    log, gate = [], threading.Event()
    a, b = Recorder("a", log, gate), Recorder("b", log, gate)
    qa, qb = queue(scheduler, a, max_batch_size=4), queue(scheduler, b, max_batch_size=4)
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            fa, fb = pool.submit(qa, x(1), ("y",)), pool.submit(qb, x(2), ("y",))
            assert a.started.wait(30) and b.started.wait(30)  # both running together
            gate.set()
            assert fa.result(30)["y"].tolist() == [2] and fb.result(30)["y"].tolist() == [4]
    finally:
        qa.stop()
        qb.stop()
        scheduler.stop()


def test_stopping_the_scheduler_runs_what_waits_and_later_calls_run_unbatched():
    scheduler = BatchScheduler(1, "pool3")
    log, gate = [], threading.Event()
    a = Recorder("a", log, gate)
    qa = queue(scheduler, a, max_batch_size=1)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        first = pool.submit(qa, x(1), ("y",))
        assert a.started.wait(30)
        waiting = pool.submit(qa, x(2), ("y",))
        while not qa._batches:
            threading.Event().wait(0.01)
        stopper = pool.submit(scheduler.stop)
        gate.set()
        stopper.result(30)
        assert first.result(30)["y"].tolist() == [2] and waiting.result(30)["y"].tolist() == [4]
    assert qa(x(3), ("y",))["y"].tolist() == [6]  # unbatched, in this thread
    assert log == [("a", 1), ("a", 1), ("a", 1)]
    qa.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        scheduler.add(qa)
    with pytest.raises(ValueError):
        BatchScheduler(0)


def test_a_manager_runs_every_model_in_one_pool_named_by_thread_pool_name(export_base):
    """Two models (and their versions) with batching: num_batch_threads threads in all."""
    babi = os.path.join(export_base, "babi")
    configs = [model_server_config_pb2.ModelConfig(name=n, base_path=babi,
                                                   model_platform="tensorflow")
               for n in ("one", "two")]
    params = BatchingParameters(max_batch_size=8, num_batch_threads=3,
                                thread_pool_name="shared_pool")
    manager = ModelManager(configs, batching=params)
    try:
        assert manager.servable("one") and manager.servable("two")
        pool = [t.name for t in threading.enumerate() if t.name.startswith("shared_pool-")]
        assert sorted(pool) == ["shared_pool-0", "shared_pool-1", "shared_pool-2"]
        assert not [t for t in threading.enumerate() if t.name.startswith("batch-one-")]
    finally:
        manager.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("shared_pool-")]
