"""The batch threads: one pool shared by every batched signature, as TF Serving's
``SharedBatchScheduler`` (``tensorflow/core/kernels/batching_util/shared_batch_scheduler.h``).

With ``--enable_batching``, ``tensorflow_model_server`` makes one scheduler of
``num_batch_threads`` threads (named by ``thread_pool_name``) and gives each batched signature
of each model version its own queue in it; a free thread takes the next due batch from the
queues in turn. So two models do not get twice the threads, and a busy model cannot starve
another of them. A :class:`~serving.core.batching.Batcher` is such a queue.
"""

from __future__ import annotations

import threading
from typing import Protocol


class BatchQueue(Protocol):
    """What the scheduler asks of a queue (holding :attr:`BatchScheduler.cond`)."""

    def due_in(self) -> float | None:
        """Seconds until the queue's first batch is due (<= 0: now), None if it is empty."""

    def pop(self) -> object:
        """Removes and returns the first batch (called only when it is due)."""

    def execute(self, batch: object) -> None:
        """Runs a popped batch (called without the lock)."""


class BatchScheduler:
    """``num_threads`` threads running the due batches of every registered queue in turn.

    The queues share :attr:`cond` (their lock and wake-up): a queue notifies it when a
    request arrives or it is stopped. :meth:`stop` ends the threads once they are idle.

    Args:
        num_threads: The batch threads (``num_batch_threads``).
        name: Their names' prefix (``thread_pool_name``).
    """

    def __init__(self, num_threads: int, name: str = "batch_threads") -> None:
        if num_threads < 1:
            raise ValueError(f"num_threads must be at least 1, got {num_threads}")
        self.name = name
        self.cond = threading.Condition()
        self._queues: list[BatchQueue] = []
        self._turn = 0
        self._stopped = False
        self._threads = [threading.Thread(target=self._loop, daemon=True, name=f"{name}-{i}")
                         for i in range(num_threads)]
        for t in self._threads:
            t.start()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def add(self, queue: BatchQueue) -> None:
        with self.cond:
            if self._stopped:
                raise RuntimeError(f"batch scheduler {self.name!r} is stopped")
            self._queues.append(queue)

    def remove(self, queue: BatchQueue) -> None:
        with self.cond:
            if queue in self._queues:
                self._queues.remove(queue)

    def _next(self) -> tuple[BatchQueue, object] | None:
        """The next due batch, the queues taken in turn (holding the lock; waits). Once
        stopped every waiting batch is due; None when stopped and none is left."""
        while True:
            soonest = None
            n = len(self._queues)
            for i in range(n):
                queue = self._queues[(self._turn + i) % n]
                wait = queue.due_in()
                if wait is None:
                    continue
                if wait <= 0 or self._stopped:
                    self._turn = (self._turn + i + 1) % n
                    return queue, queue.pop()
                soonest = wait if soonest is None else min(soonest, wait)
            if self._stopped:
                return None
            self.cond.wait(soonest)

    def _loop(self) -> None:
        while True:
            with self.cond:
                item = self._next()
            if item is None:
                return
            queue, batch = item
            queue.execute(batch)

    def stop(self) -> None:
        """Runs every batch still waiting, then ends the threads; a queue sees
        :attr:`stopped` and runs later requests unbatched."""
        with self.cond:
            self._stopped = True
            self.cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=30)
