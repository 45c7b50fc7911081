"""Request deadlines: a point on ``time.monotonic()``'s clock, or None for no deadline.

TF Serving turns a gRPC deadline into the run's timeout; here a deadline bounds the wait
in the batch queue and the start of every model call: a request whose deadline has passed
before its model call starts answers DEADLINE_EXCEEDED without computing, and one whose
deadline passed during the call answers DEADLINE_EXCEEDED too (its outputs are dropped).
"""

from __future__ import annotations

import math
import time

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
