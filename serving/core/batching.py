"""Server-side batching, like ``tensorflow_model_server --enable_batching``.

A :class:`Batcher` wraps a signature's runner when its version loads (TF Serving's
``BatchingSession`` wraps the session the same way, in
``tensorflow_serving/batching/batching_session.cc``): concurrent calls are merged along the
batch axis, run once and split. It is stopped by the servable's ``close()``.
"""

from __future__ import annotations

import dataclasses
import queue
import re
import threading
import time
from collections.abc import Callable, Mapping

import grpc
import numpy as np

from serving.core.status import ServingError, invalid

Runner = Callable[[Mapping[str, np.ndarray], tuple[str, ...]], dict[str, np.ndarray]]


@dataclasses.dataclass
class BatchingParameters:
    """The fields of TF Serving's BatchingParameters this server uses."""

    max_batch_size: int = 128
    batch_timeout_micros: int = 0  # 0: batch what queued while the previous batch ran
    num_batch_threads: int = 1
    max_enqueued_batches: int = 100

    @classmethod
    def parse(cls, text: str) -> BatchingParameters:
        """Reads TF Serving's text format (``max_batch_size { value: 32 }`` ...)."""
        params = cls()
        for field in dataclasses.fields(cls):
            m = re.search(rf"\b{field.name}\s*\{{\s*value\s*:\s*(\d+)\s*\}}", text)
            if m:
                setattr(params, field.name, int(m.group(1)))
        return params


class _Task:
    __slots__ = ("inputs", "size", "done", "result", "error")

    def __init__(self, inputs: Mapping[str, np.ndarray], size: int) -> None:
        self.inputs = inputs
        self.size = size
        self.done = threading.Event()
        self.result: dict[str, np.ndarray] | None = None
        self.error: BaseException | None = None


_STOP = object()


class Batcher:
    """A runner that merges concurrent calls along the batch axis.

    A batch thread takes the first waiting request, waits up to ``batch_timeout_micros``
    for more (up to ``max_batch_size`` rows), concatenates the inputs, calls the wrapped
    runner once (all outputs) and splits the outputs. Requests larger than
    ``max_batch_size`` run alone. If a merged call fails, its requests are retried one by
    one, so one bad request cannot fail its neighbours. A full queue is RESOURCE_EXHAUSTED.
    """

    def __init__(self, runner: Runner, outputs: tuple[str, ...], params: BatchingParameters,
                 name: str = "") -> None:
        self._runner = runner
        self._outputs = outputs
        self._params = params
        self._queue: queue.Queue = queue.Queue(
            maxsize=params.max_enqueued_batches * params.max_batch_size)
        self._stopped = False
        self._lock = threading.Lock()  # no put after stop(): the threads drain the queue
        self._threads = [threading.Thread(target=self._loop, daemon=True,
                                          name=f"batch-{name}-{i}")
                         for i in range(max(1, params.num_batch_threads))]
        for t in self._threads:
            t.start()

    def _call(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._runner(inputs, self._outputs)

    def __call__(self, inputs: Mapping[str, np.ndarray],
                 outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
        result = self._batched(inputs)
        return {k: result[k] for k in outputs}

    def _batched(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        sizes = {v.shape[0] if v.ndim else None for v in inputs.values()}
        if len(sizes) != 1 or None in sizes:
            raise invalid("with batching, all inputs need the same batch size (dim 0); got "
                          f"{({k: v.shape[0] if v.ndim else None for k, v in inputs.items()})}")
        size = sizes.pop()
        if size > self._params.max_batch_size or size == 0:
            return self._call(inputs)
        task = _Task(inputs, size)
        with self._lock:
            if self._stopped:
                return self._call(inputs)
            try:
                self._queue.put_nowait(task)
            except queue.Full:
                raise ServingError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   "the batching queue is full") from None
        task.done.wait()
        if task.error is not None:
            raise task.error
        assert task.result is not None
        return task.result

    def _loop(self) -> None:
        carry: _Task | None = None
        while True:
            if carry is not None:
                first, carry = carry, None
            else:
                first = self._queue.get()
                if first is _STOP:
                    return
            tasks, rows = [first], first.size
            deadline = time.perf_counter() + self._params.batch_timeout_micros / 1e6
            stop = False
            while rows < self._params.max_batch_size:
                try:
                    left = deadline - time.perf_counter()
                    task = self._queue.get_nowait() if left <= 0 else self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if task is _STOP:
                    stop = True
                    break
                if rows + task.size > self._params.max_batch_size:
                    carry = task
                    break
                tasks.append(task)
                rows += task.size
            self._execute(tasks)
            if stop:
                if carry is not None:
                    self._execute_one(carry)
                return

    def _execute(self, tasks: list[_Task]) -> None:
        if len(tasks) == 1:
            self._execute_one(tasks[0])
            return
        try:
            merged = {k: np.concatenate([t.inputs[k] for t in tasks]) for k in tasks[0].inputs}
            out = self._call(merged)
            start = 0
            for t in tasks:
                t.result = {k: v[start:start + t.size] for k, v in out.items()}
                start += t.size
                t.done.set()
        except Exception:  # noqa: BLE001 - retry one by one, each gets its own error
            for t in tasks:
                if not t.done.is_set():
                    self._execute_one(t)

    def _execute_one(self, task: _Task) -> None:
        try:
            task.result = self._call(task.inputs)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
            task.error = exc
        task.done.set()

    def stop(self) -> None:
        """Runs what is queued, then ends the batch threads; later calls run unbatched."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        for _ in self._threads:
            self._queue.put(_STOP)  # after every queued task (FIFO)
        for t in self._threads:
            t.join(timeout=30)
