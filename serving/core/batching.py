"""Server-side batching, like ``tensorflow_model_server --enable_batching``.

A :class:`Batcher` wraps a signature's runner when its version loads (TF Serving's
``BatchingSession`` wraps the session the same way, in
``tensorflow_serving/batching/batching_session.cc``, over a ``SharedBatchScheduler`` queue):
concurrent calls are merged along the batch axis, run once and split. It is stopped by the
servable's ``close()``. Its parameters are :class:`BatchingParameters`
(:mod:`serving.core.batching_config`, ``--batching_parameters_file``).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Mapping

import grpc
import numpy as np

from serving.core.batch_scheduler import BatchScheduler
from serving.core.batching_config import BatchingParameters
from serving.core.deadline import call, check, exceeded, expired, latest, remaining
from serving.core.signature import Runner
from serving.core.status import ServingError, invalid

__all__ = ["Batcher", "BatchingParameters"]


class _Task:
    """One request, or one piece of a request split across batches."""

    __slots__ = ("inputs", "size", "deadline", "done", "result", "error")

    def __init__(self, inputs: Mapping[str, np.ndarray], size: int,
                 deadline: float | None) -> None:
        self.inputs = inputs
        self.size = size
        self.deadline = deadline
        self.done = threading.Event()
        self.result: dict[str, np.ndarray] | None = None
        self.error: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.done.set()


class _Batch:
    __slots__ = ("tasks", "rows", "opened")

    def __init__(self) -> None:
        self.tasks: list[_Task] = []
        self.rows = 0
        self.opened = time.monotonic()


def batch_size(inputs: Mapping[str, np.ndarray]) -> int:
    """The common dim 0 of ``inputs``; INVALID_ARGUMENT if they differ or one is a scalar."""
    sizes = {v.shape[0] if v.ndim else None for v in inputs.values()}
    if len(sizes) != 1 or None in sizes:
        raise invalid("with batching, all inputs need the same batch size (dim 0); got "
                      f"{({k: v.shape[0] if v.ndim else None for k, v in inputs.items()})}")
    return sizes.pop()


class Batcher:
    """A runner that merges concurrent calls along the batch axis.

    Requests queue in batches of at most ``execution_batch_size`` rows; a batch runs when it
    is full, when a newer batch has been opened behind it, or ``batch_timeout_micros`` after
    it was opened (0: as soon as a batch thread is free). At most ``max_enqueued_batches``
    batches wait (else UNAVAILABLE, as TF Serving). A request larger than ``max_batch_size``
    is INVALID_ARGUMENT; with ``enable_large_batch_splitting`` one larger than the room left
    is split across batches and its outputs joined. ``allowed_batch_sizes`` pads a merged
    batch to the next allowed size with copies of its first row; the padding rows' outputs
    are dropped. Deadlines: an expired request leaves its wait with DEADLINE_EXCEEDED, and a
    batch drops its expired requests before it runs (no model call for a batch of them).
    The batches run in the threads of ``scheduler`` (:mod:`serving.core.batch_scheduler`),
    shared with other batchers as TF Serving's pool is, or in ``num_batch_threads`` threads
    of the batcher's own when it is None.
    If a merged call fails, its requests are retried one by one, so one bad request cannot
    fail its neighbours.
    """

    takes_deadline = True

    def __init__(self, runner: Runner, outputs: tuple[str, ...], params: BatchingParameters,
                 name: str = "", scheduler: BatchScheduler | None = None) -> None:
        self._runner = runner
        self._outputs = outputs
        self._params = params
        self._limit = params.execution_batch_size
        self._batches: collections.deque[_Batch] = collections.deque()
        self._running = 0  # batches popped by a batch thread and not finished
        self._stopped = False
        # Without a shared scheduler (a ModelManager's), the batcher has threads of its own.
        self._own_scheduler = scheduler is None
        if scheduler is None:
            scheduler = BatchScheduler(params.num_batch_threads, f"batch-{name}")
        self._scheduler = scheduler
        self._cond = scheduler.cond
        scheduler.add(self)

    # ---- requests -----------------------------------------------------------------------

    def __call__(self, inputs: Mapping[str, np.ndarray], outputs: tuple[str, ...],
                 deadline: float | None = None) -> dict[str, np.ndarray]:
        size = batch_size(inputs)
        if size > self._params.max_batch_size:
            raise invalid(f"Batch size {size} of the request is larger than the maximum batch "
                          f"size {self._params.max_batch_size} (max_batch_size)")
        check(deadline, "before the request was batched")
        with self._cond:
            stopped = self._stopped or self._scheduler.stopped
            tasks = None if stopped or size == 0 else self._enqueue(inputs, size, deadline)
        if tasks is None:  # stopped (the version is closing), or nothing to batch
            return self._select(call(self._runner, inputs, self._outputs, deadline), outputs)
        parts = [self._wait(t, deadline) for t in tasks]
        if len(parts) == 1:
            return self._select(parts[0], outputs)
        try:
            return {k: np.concatenate([p[k] for p in parts]) for k in outputs}
        except ValueError:  # outputs differ beyond dim 0 between batches: run it whole
            check(deadline, "before the model ran")
            return self._select(call(self._runner, inputs, self._outputs, deadline), outputs)

    @staticmethod
    def _select(result: dict[str, np.ndarray], outputs: tuple[str, ...]):
        return {k: result[k] for k in outputs}

    @staticmethod
    def _wait(task: _Task, deadline: float | None) -> dict[str, np.ndarray]:
        if not task.done.wait(remaining(deadline)):
            raise exceeded("while waiting in the batch queue")  # the batch will drop it
        if task.error is not None:
            raise task.error
        assert task.result is not None
        return task.result

    def _plan(self, size: int) -> list[tuple[int, bool]]:
        """The pieces a request of ``size`` rows is queued as: (rows, opens a new batch)."""
        room = self._limit - self._batches[-1].rows if self._batches else 0
        if not self._params.enable_large_batch_splitting:
            return [(size, size > room)]
        plan, rest = [], size
        if room > 0:
            plan.append((min(rest, room), False))
            rest -= plan[-1][0]
        while rest > 0:
            plan.append((min(rest, self._limit), True))
            rest -= plan[-1][0]
        return plan

    def _enqueue(self, inputs: Mapping[str, np.ndarray], size: int,
                 deadline: float | None) -> list[_Task]:
        """Queues the request (holding the lock); UNAVAILABLE if the queue is full."""
        plan = self._plan(size)
        opened = sum(new for _, new in plan)
        if len(self._batches) + opened > self._params.max_enqueued_batches:
            self._drop_expired()
            plan = self._plan(size)
            opened = sum(new for _, new in plan)
            if len(self._batches) + opened > self._params.max_enqueued_batches:
                raise ServingError(
                    grpc.StatusCode.UNAVAILABLE,
                    f"The batch scheduling queue is full ({len(self._batches)} batches of up "
                    f"to {self._limit} rows wait; max_enqueued_batches "
                    f"{self._params.max_enqueued_batches})")
        tasks, start = [], 0
        for rows, new in plan:
            piece = inputs if rows == size else {k: v[start:start + rows]
                                                 for k, v in inputs.items()}
            task = _Task(piece, rows, deadline)
            if new:
                self._batches.append(_Batch())
            batch = self._batches[-1]
            batch.tasks.append(task)
            batch.rows += rows
            tasks.append(task)
            start += rows
        self._cond.notify_all()
        return tasks

    def _drop_expired(self) -> None:
        """Answers and removes the queued tasks whose deadline has passed (holding the lock)."""
        for batch in self._batches:
            for task in [t for t in batch.tasks if expired(t.deadline)]:
                task.fail(exceeded("while waiting in the batch queue"))
                batch.tasks.remove(task)
                batch.rows -= task.size
        kept = [b for b in self._batches if b.tasks]
        if len(kept) < len(self._batches):
            self._batches = collections.deque(kept)

    # ---- batch threads ------------------------------------------------------------------

    def due_in(self) -> float | None:
        """Seconds until the first batch is due (<= 0: now), None if none waits (holding
        the lock). Due: full, a newer batch opened behind it, ``batch_timeout_micros`` since
        it opened, or the batcher is stopping."""
        if not self._batches:
            return None
        first = self._batches[0]
        if first.rows >= self._limit or len(self._batches) > 1 or self._stopped:
            return 0.0
        return first.opened + self._params.batch_timeout_micros / 1e6 - time.monotonic()

    def pop(self) -> _Batch:
        """The first batch, taken by a batch thread (holding the lock)."""
        self._running += 1
        return self._batches.popleft()

    def execute(self, batch: _Batch) -> None:
        """Runs a popped batch (in a batch thread, without the lock)."""
        try:
            self._execute(batch.tasks)
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def _execute(self, tasks: list[_Task]) -> None:
        live = []
        for task in tasks:
            if expired(task.deadline):
                task.fail(exceeded("while waiting in the batch queue"))
            elif not task.done.is_set():
                live.append(task)
        if not live:
            return  # no model call for a batch of expired requests
        try:
            self._run(live)
        except Exception as exc:  # noqa: BLE001 - retry one by one, each gets its own error
            if len(live) == 1:
                live[0].fail(exc)
                return
            for task in live:
                if expired(task.deadline):
                    task.fail(exceeded("while waiting in the batch queue"))
                    continue
                try:
                    self._run([task])
                except Exception as one:  # noqa: BLE001 - handed to the waiting request
                    task.fail(one)
        except BaseException as exc:  # noqa: BLE001 - never leave a request waiting
            for task in live:
                task.fail(exc)
            raise

    def _run(self, tasks: list[_Task]) -> None:
        """One model call for ``tasks``: merged, padded to an allowed size, split back."""
        merged = merge_inputs([t.inputs for t in tasks], self._params.pad_variable_length_inputs)
        rows = sum(t.size for t in tasks)
        padded = next((s for s in self._params.allowed_batch_sizes if s >= rows), rows)
        if padded > rows:
            merged = {k: np.concatenate([v, np.repeat(v[:1], padded - rows, axis=0)])
                      for k, v in merged.items()}
        out = call(self._runner, merged, self._outputs, latest(t.deadline for t in tasks))
        start = 0
        for t in tasks:
            t.result = {k: v[start:start + t.size] for k, v in out.items()}
            start += t.size
            t.done.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Runs what is queued (the batch threads take it at once), waits up to ``timeout``
        for it, and leaves the scheduler; later calls run unbatched."""
        with self._cond:
            if self._stopped:
                return
            self._stopped = True
            self._cond.notify_all()
            end = time.monotonic() + timeout
            while ((self._batches or self._running) and time.monotonic() < end
                   and not self._scheduler.stopped):
                self._cond.wait(end - time.monotonic())
            left = list(self._batches)  # no thread will take them: run them here
            self._batches.clear()
        for batch in left:
            self._execute(batch.tasks)
        self._scheduler.remove(self)
        if self._own_scheduler:
            self._scheduler.stop()


def merge_inputs(parts: list[Mapping[str, np.ndarray]],
                 pad: bool = False) -> dict[str, np.ndarray]:
    """Concatenates each input along dim 0. With ``pad`` (``pad_variable_length_inputs``),
    inputs whose other dims differ are first padded to the largest, with copies of their
    first element; without it, such inputs cannot be merged (ValueError)."""
    if len(parts) == 1:
        return dict(parts[0])
    merged = {}
    for key in parts[0]:
        arrays = [p[key] for p in parts]
        if pad and len({a.shape[1:] for a in arrays}) > 1:
            target = np.max([a.shape[1:] for a in arrays], axis=0)
            arrays = [_pad_to(a, tuple(target)) for a in arrays]
        merged[key] = np.concatenate(arrays)
    return merged


def _pad_to(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if array.shape[1:] == shape:
        return array
    fill = array.flat[0] if array.size else np.zeros((), array.dtype)[()]
    out = np.full((array.shape[0], *shape), fill, dtype=array.dtype)
    out[(slice(None), *(slice(0, n) for n in array.shape[1:]))] = array
    return out
