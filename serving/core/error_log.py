"""The one log line of a failed request, for both front ends, rate-limited.

Every request the server answers with an error, over gRPC or REST, gets one line naming the
API and method, the model asked for, the status and the start of the message::

    gRPC Predict, model 'babi': INVALID_ARGUMENT: input 'story' has dtype DT_INT32 ...
    REST predict, model 'nope': NOT_FOUND (HTTP 404): Servable not found for request: ...

A client that sends nothing but bad requests must not fill the disk, so the lines go through
a token bucket: up to ``burst`` lines at once, then ``per_second`` lines a second. Lines past
that are not written but counted, and one WARNING line says how many were dropped and of
which kinds, ``report_every_s`` seconds after the first one dropped (from a timer, or before
the next line written then), and at :meth:`ErrorLog.flush` (the server calls it when it
stops)::

    1980 similar request-error lines suppressed in the last 10 s (at most 20 at once, then 1
    a second, are written): gRPC Predict, model 'babi', INVALID_ARGUMENT: 1975; ...

With the defaults a flood writes at most about 95,000 lines (under 50 MB) a day; the counts
per status code are in the shutdown line and ``ModelServer.stats()`` whatever was written.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

#: Defaults: lines written at once, then per second, and seconds between suppression lines.
BURST = 20
PER_SECOND = 1.0
REPORT_EVERY_S = 10.0
#: Longest message and model name quoted in a line (both can come from the client).
MESSAGE_CHARS = 300
NAME_CHARS = 100
#: Kinds of suppressed lines tracked one by one (beyond: counted together as "other").
_KINDS = 64


def one_line(text: object, limit: int) -> str:
    """``text`` on one line, control characters escaped, cut to ``limit`` characters: a
    value from a request cannot start a log line of its own."""
    text = str(text)
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text) if not text.isprintable() else text
    return text if len(text) <= limit else text[:limit] + "..."


class ErrorLog:
    """Rate-limited request-error lines (see the module's doc).

    Args:
        logger: Where the lines go.
        burst: Lines written at once before the rate applies (the bucket's size).
        per_second: Lines written per second once the burst is spent.
        report_every_s: Seconds from the first suppressed line to the line that counts them.
        clock: Seconds, monotonic (tests pass their own).
        timer: Write the suppression line from a timer thread when no request comes to
            write it (tests that drive ``clock`` themselves turn it off and call
            :meth:`flush`).
    """

    def __init__(self, logger: logging.Logger, burst: int = BURST,
                 per_second: float = PER_SECOND, report_every_s: float = REPORT_EVERY_S,
                 clock: Callable[[], float] = time.monotonic, timer: bool = True) -> None:
        if burst < 1 or per_second <= 0:
            raise ValueError(f"burst must be >= 1 and per_second > 0, got {burst}, "
                             f"{per_second}")
        self.logger = logger
        self.burst = int(burst)
        self.per_second = float(per_second)
        self.report_every_s = float(report_every_s)
        self._clock = clock
        self._use_timer = timer
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._refilled = clock()
        self._suppressed: collections.Counter[str] = collections.Counter()
        self._since: float | None = None  # when the first suppressed line came
        self._timer: threading.Timer | None = None
        #: Lines written and suppressed so far (request lines; not the suppression lines).
        self.written = 0
        self.dropped = 0

    def request_failed(self, api: str, model: str | None, code: str, message: str = "",
                       http_status: int | None = None, level: int = logging.INFO) -> bool:
        """One failed request: ``api`` (``"gRPC Predict"``, ``"REST predict"``), the model
        it asked for (None or ``""``: none could be read from it), its status code name,
        the HTTP status a REST client got, and the error message. Returns whether the
        line was written (False: suppressed, and counted)."""
        model_text = "no model" if not model else f"model {one_line(model, NAME_CHARS)!r}"
        status = code if http_status is None else f"{code} (HTTP {http_status})"
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst),
                               self._tokens + (now - self._refilled) * self.per_second)
            self._refilled = now
            if self._tokens < 1.0:
                kind = f"{api}, {model_text}, {code}"
                if kind not in self._suppressed and len(self._suppressed) >= _KINDS:
                    kind = "other"
                self._suppressed[kind] += 1
                self.dropped += 1
                if self._since is None:
                    self._since = now
                    self._arm_timer()
                return False
            self._tokens -= 1.0
            self.written += 1
            due = self._since is not None and now - self._since >= self.report_every_s
            pending = self._take_report(now) if due else ""
        if pending:
            self.logger.warning("%s", pending)
        text = " ".join(str(message).split())
        self.logger.log(level, "%s, %s: %s%s", api, model_text, status,
                        f": {one_line(text, MESSAGE_CHARS)}" if text else "")
        return True

    def flush(self) -> None:
        """Writes the suppression line now, if any line was suppressed since the last one."""
        with self._lock:
            pending = self._take_report(self._clock())
        if pending:
            self.logger.warning("%s", pending)

    def close(self) -> None:
        """:meth:`flush`, and no timer left running."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self.flush()

    # ------------------------------------------------------------------------ internals
    def _take_report(self, now: float) -> str:
        """The suppression line for what was counted so far (``""``: nothing), reset.
        Called with the lock held."""
        if not self._suppressed:
            return ""
        total = sum(self._suppressed.values())
        kinds = self._suppressed.most_common()
        shown = "; ".join(f"{kind}: {n}" for kind, n in kinds[:3])
        if len(kinds) > 3:
            shown += f"; {len(kinds) - 3} other kind(s): {sum(n for _, n in kinds[3:])}"
        seconds = now - (self._since if self._since is not None else now)
        self._suppressed.clear()
        self._since = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return (f"{total} similar request-error line(s) suppressed in the last "
                f"{max(seconds, 0.0):.0f} s (at most {self.burst} at once, then "
                f"{self.per_second:g} a second, are written): {shown}")

    def _arm_timer(self) -> None:
        """A timer that writes the suppression line ``report_every_s`` from now, so that a
        flood that stops is still reported. Called with the lock held."""
        if not self._use_timer or self._timer is not None:
            return
        self._timer = threading.Timer(self.report_every_s, self._on_timer)
        self._timer.daemon = True
        self._timer.name = "error-log"
        self._timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
            pending = self._take_report(self._clock())
        if pending:
            self.logger.warning("%s", pending)
