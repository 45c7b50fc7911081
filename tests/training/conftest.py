"""Helpers for the tests that run ``python -m train.babi`` as subprocesses."""

import os
import pathlib
import socket
import subprocess

import pytest

from tests import preloaded_python

REPO = pathlib.Path(__file__).resolve().parents[2]




@pytest.fixture
def make_babi(tmp_path_factory, babi_task1_writer):
    """``make_babi(train_stories) -> data_dir`` with a tiny task 1 (20 test stories)."""

    def make(train_stories):
        root = tmp_path_factory.mktemp("babi")
        (root / "en-10k").mkdir()
        babi_task1_writer(root / "en-10k" / "qa1_single-supporting-fact_train.txt", train_stories, 0)
        babi_task1_writer(root / "en-10k" / "qa1_single-supporting-fact_test.txt", 20, 1)
        return root

    return make


@pytest.fixture
def babi_process():
    """``start(args, log_path, **env) -> preloaded_python.Process`` of ``python -m
    train.babi`` (forked from a Python that has imported TensorFlow).

    Output goes to ``log_path``; every process still running when the test
    ends is killed (by its pid).
    """
    started = []

    def start(args, log_path, **env):
        base = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
        env = dict(base, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", **env)
        process = preloaded_python.spawn(["-m", "train.babi", *args], cwd=log_path.parent,
                                         env=env, stdout=log_path, stderr=subprocess.STDOUT)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def free_ports(count):
    """Ports on 127.0.0.1 that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@pytest.fixture
def ports():
    return free_ports
