"""``python -m serving.server`` as a child process, started and waited for as a supervisor
does: through ``--server_info_file``, which the server writes once every initially
configured model is available and its ports are bound (the ports it chose for ``--port=0``
and ``--rest_api_port=-1`` included). What the benchmarks and the long fuzz run start their
server with (``bench.serving_bench``, ``bench.serving_soak``,
``tests/serving/serving_fuzz.py``).

Imports the standard library only: starting a server loads no TensorFlow in the caller.

Example::

    with open("server.log", "w") as log:
        proc, info = start_server_process(
            ["--port=0", "--rest_api_port=-1", "--model_name=babi",
             "--model_base_path=/abs/export/babi"], "/tmp/server.json", log)
        grpc_port, rest_port = info["ports"]["grpc"], info["ports"]["rest"]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

#: The folder that holds the ``serving`` package: the child's ``PYTHONPATH``, so that it
#: runs this server whatever its working directory.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: How much of the end of the server's log a failure to start quotes.
LOG_TAIL_CHARS = 3000


class ServerDidNotStart(RuntimeError):
    """The server exited, or did not serve in time; the message ends with its log's end."""


def _log_tail(log: IO | None) -> str:
    if log is None:
        return "(its output was discarded)"
    log.flush()
    size = os.fstat(log.fileno()).st_size
    start = max(0, size - 4 * LOG_TAIL_CHARS)
    data = os.pread(log.fileno(), size - start, start)
    return data.decode("utf-8", "replace")[-LOG_TAIL_CHARS:]


def start_server_process(flags: Sequence[str], info_file: str | os.PathLike,
                         log: IO | None = None, *, cwd: str | os.PathLike | None = None,
                         timeout_s: float = 300.0, poll_s: float = 0.2,
                         preexec_fn: Callable[[], None] | None = None,
                         ) -> tuple[subprocess.Popen, dict[str, Any]]:
    """Starts ``python -m serving.server FLAGS --server_info_file=INFO_FILE`` and waits
    until it serves.

    Args:
        flags: The server's flags (``--server_info_file`` is added).
        info_file: Where the server writes its ``{"pid", "ports", "models"}``; a stale
            one is removed first.
        log: A file open for writing that takes the server's stdout and stderr (None:
            they are discarded).
        cwd: The server's working directory (relative paths in its flags start there).
        timeout_s: How long the models may take to load.
        poll_s: How often the info file is looked for.
        preexec_fn: Run in the child before the server (e.g. to pin it to CPUs).

    Returns:
        The process and the info file's contents.

    Raises:
        ServerDidNotStart: it exited, or wrote no info file within ``timeout_s`` (it is
            killed then); the message quotes the end of ``log``.
    """
    info_file = os.fspath(info_file)
    if os.path.exists(info_file):
        os.remove(info_file)
    argv = [sys.executable, "-m", "serving.server", *flags, f"--server_info_file={info_file}"]
    out = log if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                            env=dict(os.environ, PYTHONPATH=ROOT), preexec_fn=preexec_fn)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(info_file):  # written by a rename: never half a file
            with open(info_file, encoding="utf-8") as f:
                return proc, json.load(f)
        time.sleep(poll_s)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        why = f"not serving after {timeout_s:g} s"
    else:
        why = f"exit status {proc.returncode}"
    raise ServerDidNotStart(f"server did not start ({why}):\n{_log_tail(log)}")
