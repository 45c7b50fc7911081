"""Giving an unloaded version's memory back, so a server's RSS stays flat under churn.

A closed version's session is deleted with its :class:`~serving.core.servable.Servable`,
but its ``tf.Graph`` (the imported MetaGraph and its function library: most of a version's
footprint) is held in reference cycles, so it lives until Python's cyclic garbage
collector next runs a full collection; in a serving process that can be many versions
later. The same holds for a version whose load failed after its graph was built (missing
variables or assets). Once freed, glibc's ``malloc`` keeps the pages in its heap rather than
returning them to the system.

So :class:`~serving.core.manager.ModelManager` calls :func:`release_unloaded` after each
poll: when a version was closed or a load failed since the last call, it runs one full
collection (the unloaded graphs are freed then) and ``malloc_trim(0)`` (glibc only: the
freed pages go back to the system). It runs in the polling thread, never in a request's: a
version whose last request returns after the unload is released at the next poll.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import threading
import time

log = logging.getLogger("serving.server")

_lock = threading.Lock()
_dropped = 0  # versions closed or failed to load since the process started
_released = 0  # the value of _dropped at the last release


def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


_MALLOC_TRIM = _malloc_trim()


def version_dropped() -> None:
    """Notes that a version closed its session or failed to load (its graph is garbage)."""
    global _dropped
    with _lock:
        _dropped += 1


def release_unloaded() -> bool:
    """Frees what versions dropped since the last call left behind: one full garbage
    collection, then ``malloc_trim(0)``. Returns whether there was anything to release."""
    global _released
    with _lock:
        if _dropped == _released:
            return False
        _released = _dropped
    started = time.perf_counter()
    collected = gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    log.debug("released unloaded versions: %d objects collected, %.3f s", collected,
              time.perf_counter() - started)
    return True
