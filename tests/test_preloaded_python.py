"""tests/preloaded_python.py: a command forked from a preloaded Python gets the request's
arguments, folder, environment and streams, ends as a Python process ends, and can be
killed and waited for like a subprocess."""

import os
import signal
import subprocess
import time

import pytest

from tests import preloaded_python

PROBE = '''\
import atexit, json, os, sys, tempfile
atexit.register(lambda: print("atexit ran", flush=True))
if sys.argv[1] == "report":
    print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "path0": sys.path[0],
                      "main": __name__, "tensorflow": "tensorflow" in sys.modules,
                      "tmp": tempfile.gettempdir(), "flavour": os.environ.get("FLAVOUR"),
                      "threads": os.environ.get("TF_NUM_INTRAOP_THREADS")}))
    print("to stderr", file=sys.stderr)
elif sys.argv[1] == "exit":
    sys.exit(sys.argv[2] if not sys.argv[2].isdigit() else int(sys.argv[2]))
elif sys.argv[1] == "raise":
    raise ValueError("bad input")
elif sys.argv[1] == "sleep":
    print("sleeping", flush=True)
    import time
    time.sleep(600)
'''


@pytest.fixture(scope="module")
def probe_env(tmp_path_factory):
    """An environment whose path holds the module ``probe`` (one preloaded Python)."""
    folder = tmp_path_factory.mktemp("modules")
    (folder / "probe.py").write_text(PROBE)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), repo]),
                TF_CPP_MIN_LOG_LEVEL="3")


def test_the_command_gets_the_requests_arguments_folder_environment_and_streams(
        probe_env, tmp_path):
    import json

    (tmp_path / "tmp").mkdir()
    env = dict(probe_env, FLAVOUR="lemon", TMPDIR=str(tmp_path / "tmp"),
               TF_NUM_INTRAOP_THREADS="1")
    done = preloaded_python.run(["-m", "probe", "report", "x y"], cwd=tmp_path, env=env,
                                timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[0])
    assert report == {"argv": ["report", "x y"], "cwd": str(tmp_path),
                      "path0": str(tmp_path), "main": "__main__", "tensorflow": True,
                      "tmp": str(tmp_path / "tmp"), "flavour": "lemon", "threads": "1"}
    assert done.stdout.splitlines()[1:] == ["atexit ran"]  # it ended as Python ends
    assert done.stderr.endswith("to stderr\n")
    # Other values of variables read after the start are served by the same preloaded
    # Python; another value of one read at the start (TF_CPP_MIN_LOG_LEVEL) is not.
    lime = dict(probe_env, FLAVOUR="lime")
    again = preloaded_python.run(["-m", "probe", "report"], cwd=tmp_path, env=lime,
                                 timeout=300)
    assert '"flavour": "lime"' in again.stdout
    assert preloaded_python._preloaded(lime) is preloaded_python._preloaded(env)
    assert preloaded_python._import_time_key(
        dict(env, TF_CPP_MIN_LOG_LEVEL="1")) != preloaded_python._import_time_key(env)


@pytest.mark.parametrize("argv,code,stderr", [
    (["exit", "3"], 3, ""), (["exit", "no data"], 1, "no data\n"),
    (["raise"], 1, "ValueError: bad input\n")])
def test_exit_status_and_errors_are_a_pythons(probe_env, tmp_path, argv, code, stderr):
    done = preloaded_python.run(["-m", "probe", *argv], cwd=tmp_path, env=probe_env,
                                timeout=300)
    assert done.returncode == code
    assert done.stderr.endswith(stderr)
    if argv == ["raise"]:
        assert done.stderr.startswith("Traceback (most recent call last):")


def test_a_spawned_command_is_killed_by_its_pid_and_reports_the_signal(probe_env, tmp_path):
    process = preloaded_python.spawn(["-m", "probe", "sleep"], cwd=tmp_path, env=probe_env)
    deadline = time.monotonic() + 120
    while "sleeping" not in process.stdout and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert process.communicate() == ("sleeping\n", "")


def test_a_timeout_kills_the_command(probe_env, tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        preloaded_python.run(["-m", "probe", "sleep"], cwd=tmp_path, env=probe_env,
                             timeout=2)


def test_only_python_dash_m_on_tensorflow(probe_env):
    with pytest.raises(ValueError, match="python -m MODULE"):
        preloaded_python.run(["-c", "pass"])
    with pytest.raises(ValueError, match="KERAS_BACKEND=jax needs a process of its own"):
        preloaded_python.run(["-m", "probe"], env=dict(probe_env, KERAS_BACKEND="jax"))
