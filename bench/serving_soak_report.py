"""The numbers of a ``bench.serving_soak`` run: the server's resident memory, open file
descriptors and threads read from ``/proc/<pid>`` every few seconds, the checks against the
soak's targets, and the report printed and written to ``--json``.

Targets (the serving section of docs/serving.md): no valid request fails and none is
answered differently from the reference; the newest good version serves at the end; after
the warm-up, the mean RSS of the last 10 % of the samples is within 5 % of the mean of the
first 10 %; descriptors and threads are flat (the median of the last 10 % is no higher than
the highest of the first 10 %: a version load briefly opens files and a thread, a leak
keeps them).
"""

import json
import os
import threading
import time

import numpy as np

#: The largest change of the mean RSS between the first and the last tenth of the samples.
RSS_TOLERANCE = 0.05


def read_proc(pid: int) -> dict:
    """RSS and its high-water mark (MiB), threads and open descriptors of process ``pid``."""
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                fields[key] = int(value.split()[0])
    return {"rss_mib": fields["VmRSS"] / 1024, "hwm_mib": fields["VmHWM"] / 1024,
            "threads": fields["Threads"], "fds": len(os.listdir(f"/proc/{pid}/fd"))}


class Sampler:
    """Reads :func:`read_proc` of ``pid`` every ``seconds`` in a daemon thread; ``samples``
    holds ``{"t": seconds since start, ...}`` rows."""

    def __init__(self, pid: int, seconds: float, started: float) -> None:
        self.samples: list[dict] = []
        self._pid, self._seconds, self._started = pid, seconds, started
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="sampler")

    def start(self) -> "Sampler":
        self._thread.start()
        return self

    def sample(self) -> dict | None:
        try:
            row = {"t": round(time.monotonic() - self._started, 2), **read_proc(self._pid)}
        except (OSError, KeyError):  # the server has exited
            return None
        self.samples.append(row)
        return row

    def _loop(self) -> None:
        while not self._stop.wait(self._seconds):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def windows(samples: list[dict], warmup_s: float) -> tuple[list[dict], list[dict]]:
    """The first and the last tenth (at least one sample each) of the samples taken after
    ``warmup_s``."""
    after = [s for s in samples if s["t"] >= warmup_s]
    n = max(1, len(after) // 10)
    return after[:n], after[-n:]


def checks(result: dict, samples: list[dict], warmup_s: float) -> dict:
    """The soak's targets as booleans, and the memory numbers they were decided on."""
    first, last = windows(samples, warmup_s)
    memory = {"samples_after_warmup": len([s for s in samples if s["t"] >= warmup_s]),
              "peak_rss_mib": max((s["hwm_mib"] for s in samples), default=float("nan"))}
    ok = bool(first)
    if first:
        for key in ("rss_mib", "fds", "threads"):
            memory[f"{key}_first"] = float(np.mean([s[key] for s in first]))
            memory[f"{key}_last"] = float(np.mean([s[key] for s in last]))
        memory["rss_change"] = memory["rss_mib_last"] / memory["rss_mib_first"] - 1
        flat = {key: float(np.median([s[key] for s in last])) <= max(s[key] for s in first)
                for key in ("fds", "threads")}
    requests = result["requests"]
    out = {
        "no_failed_valid": ok and requests["valid"] > 0 and requests["valid_failed"] == 0,
        "no_wrong_answers": requests["wrong_answers"] == 0,
        "no_unexpected_malformed": requests["malformed_unexpected"] == 0,
        "newest_good_served": (result["versions"]["served_at_end"]
                               == result["versions"]["expected_at_end"]),
        "rss_flat": ok and abs(memory["rss_change"]) <= RSS_TOLERANCE,
        "fds_flat": ok and flat["fds"],
        "threads_flat": ok and flat["threads"],
    }
    return {"memory": memory, "checks": out, "passed": all(out.values())}


def report(result: dict, path: str | None) -> None:
    """Prints the run's numbers and checks; writes ``result`` as JSON to ``path``."""
    r, v, m = result["requests"], result["versions"], result["memory"]
    print(f"{result['seconds']:.0f} s, {result['clients']} client(s): {r['valid']} valid "
          f"requests ({result['examples_per_second']:.1f} examples/s), "
          f"{r['valid_failed']} failed {r['valid_failed_by_status'] or ''}, "
          f"{r['wrong_answers']} wrong answers; {r['malformed']} malformed, "
          f"{r['malformed_unexpected']} answered unexpectedly "
          f"{r['malformed_unexpected_examples'] or ''}")
    kinds = {}
    for d in v["dropped"]:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    print(f"versions dropped {len(v['dropped'])} {kinds}, deleted {v['deleted']}; served at "
          f"the end {v['served_at_end']} (newest good {v['expected_at_end']})")
    if "rss_mib_first" in m:
        print(f"server after the {result['warmup_seconds']:.0f} s warm-up: RSS "
              f"{m['rss_mib_first']:.0f} -> {m['rss_mib_last']:.0f} MiB "
              f"({m['rss_change']:+.1%}), peak {m['peak_rss_mib']:.0f} MiB; descriptors "
              f"{m['fds_first']:.1f} -> {m['fds_last']:.1f}; threads {m['threads_first']:.1f}"
              f" -> {m['threads_last']:.1f}")
    failed = [k for k, ok in result["checks"].items() if not ok]
    print("checks: " + ("all passed" if not failed else "FAILED " + ", ".join(failed)))
    if path:
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, path)
