"""``python -m MODULE ARGS`` for the tests, forked from an interpreter that has already
imported TensorFlow and Keras (a "preloaded" Python), so that a test's command does not
pay for that import again.

About 59 of the suite's subprocesses import TensorFlow, at 4-6 CPU-seconds each
(results/tests.md); the suite is CPU-bound, so every one of them is wall time. A test
process starts one preloaded Python per environment the first time it asks for one
(:func:`run`, :func:`spawn`); each command is then a ``fork()`` of it that takes the
request's environment, working folder, ``sys.argv`` and standard streams and runs the
module as ``__main__`` (:func:`runpy.run_module`), ending as any Python process ends
(its threads joined, ``atexit`` run, its exit status or signal reported to the test).

What is not the same as a fresh ``python -m``, and why the tests that use it do not care:

* TensorFlow and Keras were imported before the command's own code ran, under
  :func:`tpr_keras.runtime.quiet_tensorflow_start` as the commands import them, with the
  same environment (a preloaded Python serves one environment exactly; another environment
  gets its own). Nothing TensorFlow runs (no op, no device list) happens before the fork.
  Tests of the start-up itself (its log filter, which modules a command imports, ``--help``
  speed, a process without TensorFlow) and JAX processes keep using ``subprocess``.
* The child's parent is the preloaded Python, not the test: :class:`Process` waits for it
  through the preloaded Python, and ``kill`` sends a real signal to the real ``pid``.
* Python's hash seed is the preloaded Python's for all its children (random per process
  either way).

The preloaded Python itself is this file run as ``python -m tests.preloaded_python``; it
reads one JSON request per line on its standard input and answers on its standard output.
"""

import atexit
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ the test's side
class Preloaded:
    """One preloaded Python for one environment, and the requests sent to it."""

    def __init__(self, env):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.preloaded_python"], cwd=REPO, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1)
        ready = self._reply(timeout=300)
        assert ready.get("ready"), ready

    def _reply(self, timeout=None):
        if timeout is not None:
            readable, _, _ = select.select([self.process.stdout], [], [], timeout)
            if not readable:
                raise TimeoutError(f"the preloaded Python did not answer in {timeout} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the preloaded Python ended ({self.process.wait()})")
        return json.loads(line)

    def request(self, message, timeout=None):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return self._reply(timeout)

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


_PRELOADED = {}
_FOLDERS = []  # the commands' output folders, removed when the test process ends


#: Environment variables read before a command's own code runs (by Python's start, by
#: TensorFlow's, Keras' or glibc's first use, by the start-up filter): a preloaded Python
#: serves the environments that agree on all of them. The ones TensorFlow reads when its
#: runtime starts (thread counts, ``TF_CONFIG``; ``CUDA_VISIBLE_DEVICES`` when it first
#: lists devices, which the preloaded Python does not) and the project's own switches may
#: differ.
IMPORT_TIME = ("PYTHON", "KERAS_", "TF_", "XLA_", "JAX_", "LD_", "MALLOC_", "OMP_",
               "ONEDNN_", "DNNL_", "MKL_", "KMP_", "TPR_KERAS_TF_LOGS", "HOME", "PATH")
RUN_TIME = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_CONFIG")


def _import_time_key(env):
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith(IMPORT_TIME) and k not in RUN_TIME))


def _preloaded(env):
    if env.get("KERAS_BACKEND", "tensorflow") != "tensorflow":
        raise ValueError("a preloaded Python has imported TensorFlow's Keras; "
                         f"KERAS_BACKEND={env['KERAS_BACKEND']} needs a process of its own")
    key = _import_time_key(env)
    if key not in _PRELOADED or _PRELOADED[key].process.poll() is not None:
        _PRELOADED[key] = Preloaded(env)
    return _PRELOADED[key]


@atexit.register
def _close_all():
    for preloaded in _PRELOADED.values():
        preloaded.close()
    for folder in _FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)


def _module_args(args):
    args = [str(a) for a in args]
    if len(args) < 2 or args[0] != "-m":
        raise ValueError(f"a preloaded Python runs 'python -m MODULE ...', not {args}")
    return args[1], args[2:]


class Process:
    """A command started by :func:`spawn`: ``pid``, ``returncode``, ``poll()``,
    ``wait(timeout)``, ``kill()``, ``terminate()``, ``send_signal(sig)``, and
    ``stdout``/``stderr``: the text it wrote so far (files it writes into)."""

    def __init__(self, preloaded, pid, stdout, stderr):
        self._preloaded, self.pid = preloaded, pid
        self._stdout, self._stderr = stdout, stderr  # paths; stderr None: into stdout
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            reply = self._preloaded.request({"op": "poll", "pid": self.pid})
            self.returncode = reply.get("returncode")
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    @property
    def stdout(self):
        return pathlib.Path(self._stdout).read_text(errors="replace")

    @property
    def stderr(self):
        return "" if self._stderr is None else pathlib.Path(self._stderr).read_text(
            errors="replace")

    def communicate(self, timeout=None):
        """``(stdout, stderr)`` once it ended (as :meth:`subprocess.Popen.communicate`)."""
        self.wait(timeout)
        return self.stdout, self.stderr


def spawn(args, cwd=None, env=None, stdout=None, stderr=None):
    """Starts ``python -m MODULE ARGS`` (``args`` as after ``python``) forked from the
    preloaded Python for ``env`` (default ``os.environ``) in ``cwd``; its standard input is
    empty, its output goes to files (:class:`Process`): ``stdout`` and ``stderr`` (paths;
    default: files of its own; ``stderr=subprocess.STDOUT``: into ``stdout``'s)."""
    module, argv = _module_args(args)
    env = dict(os.environ if env is None else env)
    preloaded = _preloaded(env)
    folder = tempfile.mkdtemp(prefix="preloaded-")
    _FOLDERS.append(folder)
    out = str(stdout or os.path.join(folder, "stdout"))
    err = None if stderr == subprocess.STDOUT else str(stderr or os.path.join(folder, "stderr"))
    for path in (out, err):  # there (empty) as soon as this returns, as with Popen
        if path is not None:
            open(path, "w").close()
    reply = preloaded.request({
        "op": "spawn", "module": module, "argv": argv, "env": env,
        "cwd": str(cwd or os.getcwd()), "stdout": out, "stderr": err})
    return Process(preloaded, reply["pid"], out, err)


def run(args, cwd=None, env=None, timeout=None):
    """:func:`subprocess.run` of ``[sys.executable, *args]`` with ``capture_output=True,
    text=True`` for ``args`` = ``["-m", MODULE, ...]``, forked from a preloaded Python:
    a :class:`subprocess.CompletedProcess` (a negative ``returncode``: killed by that
    signal); :class:`subprocess.TimeoutExpired` after ``timeout`` seconds (the command is
    killed)."""
    process = spawn(args, cwd, env)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise subprocess.TimeoutExpired([sys.executable, *map(str, args)], timeout,
                                        process.stdout, process.stderr) from None
    return subprocess.CompletedProcess([sys.executable, *map(str, args)],
                                       process.returncode, process.stdout, process.stderr)


# ------------------------------------------------------------------ the preloaded side
def _preload():
    from tpr_keras.runtime import quiet_tensorflow_start

    with quiet_tensorflow_start():
        import keras  # noqa: F401
        import tensorflow  # noqa: F401


def _returncode(status):
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _serve(requests, replies):
    """Answers requests until the test closes the pipe; returns the request in a child."""
    finished = {}

    def answer(message):
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    answer({"ready": True})
    for line in requests:
        message = json.loads(line)
        if message["op"] == "spawn":
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                return message
            answer({"pid": pid})
        elif message["op"] == "poll":
            pid = message["pid"]
            if pid not in finished:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    finished[pid] = _returncode(status)
            answer({"returncode": finished.get(pid)})
    return None


def _become(message, control):
    """The child: the request's streams, folder, environment and ``sys.argv``."""
    for stream in control:
        stream.close()
    stdin = os.open(os.devnull, os.O_RDONLY)
    stdout = os.open(message["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    stderr = os.dup(stdout) if message["stderr"] is None else os.open(
        message["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(message["cwd"])
    os.environ.clear()
    os.environ.update(message["env"])
    tempfile.tempdir = None  # found again from this environment's TMPDIR
    sys.path[0] = message["cwd"]  # as `python -m` puts its working folder first
    sys.argv = [message["module"], *message["argv"]]


def main():
    # The requests and replies move off the standard streams, which the children take.
    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    _preload()
    message = _serve(requests, replies)
    if message is None:
        return
    _become(message, (requests, replies))
    runpy_main(message["module"])


def runpy_main(module):
    import runpy

    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
