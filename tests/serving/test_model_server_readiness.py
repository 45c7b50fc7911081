"""``python -m serving.server`` opens its ports only once every model of the initial config
is available, as ``tensorflow_model_server`` does, and exits with TF Serving's message when
one cannot load; a busy port and a malformed config file are one start-up line each."""

import json
import os
import shutil
import signal
import socket
import threading
import time
import urllib.request

import pytest

from serving.model_server import main as server_main


def run_main(argv, during=None):
    """``main(argv)`` in this (the main) thread; ``during(done)`` runs in another thread
    (``done``: an Event set when main returns) and SIGTERM follows it if main is still
    running; pytest's signal handlers come back. Returns main's exit code and seconds."""
    done = threading.Event()
    errors = []

    def side():
        try:
            if during is not None:
                during(done)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(exc)
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGTERM)

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    thread = threading.Thread(target=side, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        rc = server_main.main(argv)
    finally:
        seconds = time.monotonic() - started
        done.set()
        thread.join(timeout=60)
        for s, handler in previous.items():
            signal.signal(s, handler)
    if errors:
        raise errors[0]
    return rc, seconds


def wait_for(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ports_open_once_the_model_is_available(half_plus_base, tmp_path):
    base = tmp_path / "half"
    base.mkdir()
    info = tmp_path / "server.json"
    rest_port = free_port()
    seen = {}

    def during(_done):
        time.sleep(1.5)  # no version yet: the server waits, its ports closed
        seen["info_before"] = info.exists()
        with socket.socket() as s:
            seen["rest_before"] = s.connect_ex(("127.0.0.1", rest_port))
        shutil.copytree(half_plus_base / "half_plus_two" / "00000123", base / "00000123")
        assert wait_for(info.exists)
        body = json.dumps({"instances": [1.0, 2.0, 5.0]}).encode()
        with urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{rest_port}/v1/models/half:predict", body),
                timeout=30) as resp:  # the first request after "port open" succeeds
            seen["answer"] = json.load(resp)

    rc, _ = run_main([f"--model_base_path={base}", "--model_name=half", "--port=0",
                      f"--rest_api_port={rest_port}", "--bind_address=127.0.0.1",
                      "--file_system_poll_wait_seconds=0", f"--server_info_file={info}"],
                     during)
    assert rc == 0
    assert seen["info_before"] is False and seen["rest_before"] != 0  # refused
    assert seen["answer"] == {"predictions": [2.5, 3.0, 4.5]}


def test_a_model_that_cannot_load_ends_the_server_with_tf_servings_message(
        half_plus_base, tmp_path, capsys):
    good, bad = tmp_path / "good", tmp_path / "bad" / "7"
    shutil.copytree(half_plus_base / "half_plus_two", good)
    bad.mkdir(parents=True)
    (bad / "saved_model.pb").write_bytes(b"not a SavedModel")
    config = tmp_path / "models.config"
    config.write_text(f'model_config_list {{ config {{ name: "good" base_path: "{good}" '
                      f'model_platform: "tensorflow" }} config {{ name: "bad" base_path: '
                      f'"{bad.parent}" model_platform: "tensorflow" }} }}')
    info = tmp_path / "server.json"
    rc, seconds = run_main([f"--model_config_file={config}", "--port=0",
                            "--bind_address=127.0.0.1", "--max_num_load_retries=2",
                            "--file_system_poll_wait_seconds=0", f"--server_info_file={info}"],
                           lambda done: done.wait(60))
    assert rc == 1 and not info.exists()
    assert seconds < 60  # it ended by itself, not by the SIGTERM
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("Failed to start server. Error: 1 model(s) did not become "
                              "available: {{{name: bad version: 7} due to error: loading failed: "), err[-1]
    assert "good" not in err[-1]


def test_a_busy_port_is_one_line_naming_the_port_and_flag(half_plus_base, tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for flags in ([f"--port={port}"], ["--port=0", f"--rest_api_port={port}"]):
            rc, _ = run_main([f"--model_base_path={half_plus_base / 'half_plus_two'}",
                              "--bind_address=127.0.0.1", "--file_system_poll_wait_seconds=0",
                              *flags], lambda done: done.wait(60))
            err = capsys.readouterr().err.strip().splitlines()
            assert rc == 1, err
            flag = flags[-1]
            assert err[-1].startswith("Failed to start server. Error: cannot bind ") and \
                flag in err[-1], err[-1]
            assert not any("Traceback" in line for line in err)


def test_malformed_model_config_file_in_tf_servings_words(tmp_path, capsys):
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "m" base_pat: "/x" } }')
    assert server_main.main([f"--model_config_file={config}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Error parsing text-format tensorflow.serving.ModelServerConfig: " \
        in err[0] and "base_pat" in err[0], err
    assert err[0].startswith("Failed to start server. Error: ")
