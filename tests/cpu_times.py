"""A pytest plugin that records where each test's time goes: its wall time, the CPU time of
the test process, and that of the subprocesses it waited for.

A suite on two xdist workers whose workers' CPU time equals their wall time is CPU-bound:
more workers or another file order cannot shorten it, only less work can; a test whose
CPU time is far below its wall time waits (for a lock, a server, a shared fixture another
worker is making). From the repository root::

    PYTEST_ADDOPTS="--durations=0 -p tests.cpu_times --cpu_times_dir DIR" CI=true bash .ci/run

Each test process appends one JSON line per test to ``DIR/<pid>.jsonl``: ``id`` (the
test's node id), ``start`` (seconds since the epoch), ``wall``, ``cpu`` (the process's
user + system seconds) and ``children_cpu`` (those of the child processes that ended and
were waited for during the test: a server a fixture keeps running counts at its end, a
process killed with ``-9`` and never waited for not at all). Without ``--cpu_times_dir``
the plugin records nothing.
"""

import json
import os
import resource
import time

import pytest


def pytest_addoption(parser):
    parser.addoption("--cpu_times_dir", default=None,
                     help="write each test's wall and CPU seconds to DIR/<pid>.jsonl")


def cpu_seconds():
    """``(this process's CPU seconds, its waited-for children's)``, user + system."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = item.config.getoption("cpu_times_dir")
    if folder is None:
        yield
        return
    start, (cpu, children) = time.time(), cpu_seconds()
    yield
    end, (cpu_end, children_end) = time.time(), cpu_seconds()
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps({"id": item.nodeid, "start": start, "wall": end - start,
                            "cpu": cpu_end - cpu, "children_cpu": children_end - children})
                + "\n")
