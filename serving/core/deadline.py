"""Request deadlines: a point on ``time.monotonic()``'s clock, or None for no deadline.

TF Serving turns a gRPC deadline into the run's timeout (``RunOptions.timeout_in_ms``); so
does this server. A deadline bounds the wait in the batch queue, the start of every model
call and the model run itself: a request whose deadline has passed before its model call
starts answers DEADLINE_EXCEEDED without computing; in the ``session`` runtime (the default,
TF Serving's) a run still going at the deadline is cancelled by TensorFlow and answers
DEADLINE_EXCEEDED, so no work continues after it. The ``function`` runtime cannot cancel a
started ``tf.function``: its outputs are dropped instead. A batch runs until the latest
deadline of the requests in it, as TF Serving's batching session does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import grpc

from serving.core.status import ServingError

#: Longer than this is no deadline (gRPC reports "none" as a time far in the future).
_NO_DEADLINE_S = 10 * 365 * 24 * 3600.0


def deadline_after(seconds: float | None) -> float | None:
    """The deadline ``seconds`` from now (None, infinite or absurdly far: no deadline)."""
    if seconds is None or math.isinf(seconds) or seconds > _NO_DEADLINE_S:
        return None
    return time.monotonic() + max(0.0, seconds)


def remaining(deadline: float | None) -> float | None:
    """Seconds left (>= 0), or None for no deadline."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def expired(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def exceeded(when: str) -> ServingError:
    return ServingError(grpc.StatusCode.DEADLINE_EXCEEDED, f"Deadline exceeded {when}")


def check(deadline: float | None, when: str) -> None:
    """DEADLINE_EXCEEDED if ``deadline`` has passed; ``when`` says where (for the message)."""
    if expired(deadline):
        raise exceeded(when)


def timeout_ms(deadline: float | None) -> int | None:
    """``RunOptions.timeout_in_ms`` for a run that must end by ``deadline`` (None: none);
    DEADLINE_EXCEEDED if it has already passed."""
    if deadline is None:
        return None
    ms = math.ceil((deadline - time.monotonic()) * 1000)
    if ms <= 0:
        raise exceeded("before the model ran")
    return ms


def latest(deadlines: Iterable[float | None]) -> float | None:
    """The deadline of a batch: the latest of its requests' (None if any has none)."""
    deadlines = list(deadlines)
    return None if not deadlines or None in deadlines else max(deadlines)


def call(runner, inputs, outputs, deadline: float | None):
    """``runner(inputs, outputs)``, passing ``deadline=`` to runners that take it (those
    with a true ``takes_deadline`` attribute)."""
    if getattr(runner, "takes_deadline", False):
        return runner(inputs, outputs, deadline=deadline)
    return runner(inputs, outputs)
