"""The benches' side-by-side harness: one process per configuration, warmed up once, then
timed in windows on demand, so configurations take turns on the same cores.

A worker prints ``READY <json>`` once it is warm, then answers each ``go SECONDS`` line on
its stdin with ``RESULT <json>`` (:func:`serve_windows`); :class:`WindowWorker` drives one
from the parent.
"""

import json
import os
import subprocess
import sys
import tempfile

from tpr_keras import runtime

#: One thread for every library a worker may load.
ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
              "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def one_thread_environment(library, size_onednn_cache=False):
    """The environment of a worker that runs ``library`` (``torch``, ``tensorflow`` or
    ``jax``, its Keras backend) on one thread; ``size_onednn_cache``: oneDNN's primitive
    cache sized as ``train.math --group_multiple`` sizes it
    (:func:`tpr_keras.runtime.size_onednn_cache`; a value in the environment wins)."""
    env = dict(os.environ, **ONE_THREAD)
    if size_onednn_cache:
        env.setdefault(runtime.ONEDNN_CACHE_ENV, str(runtime.ONEDNN_CACHE_CAPACITY))
    if library != "torch":
        env["KERAS_BACKEND"] = library
    if library == "jax":
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + XLA_ONE_THREAD).strip()
    return env


def serve_windows(info, run_window):
    """The worker side: announces ``info`` and answers every ``go SECONDS`` line with
    ``dict(info, **run_window(seconds))`` until its stdin ends."""
    print("READY " + json.dumps(info), flush=True)
    for line in sys.stdin:
        print("RESULT " + json.dumps(dict(info, **run_window(float(line.split()[1])))),
              flush=True)


class WindowWorker:
    """One configuration's subprocess (``command``), warmed up once, timed in windows.

    ``info`` is its ``READY`` record; a worker that exits early raises ``SystemExit``
    with the end of its stderr.
    """

    def __init__(self, command, label, env=None):
        self.label = label
        self.stderr = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, text=True, env=env)
        self.info = self._read("READY ")

    def _read(self, prefix):
        for line in self.process.stdout:
            if line.startswith(prefix):
                return json.loads(line[len(prefix):])
        self.stderr.seek(0)
        sys.stderr.write(self.stderr.read()[-3000:])
        raise SystemExit(f"{self.label} failed (exit {self.process.wait()})")

    def window(self, seconds):
        """One timed window of ``seconds``: the worker's ``RESULT`` record."""
        self.process.stdin.write(f"go {seconds}\n")
        self.process.stdin.flush()
        return self._read("RESULT ")

    def close(self):
        self.process.stdin.close()
        self.process.wait()
