"""``python -m serving.server`` as a process: flags, the client CLI, graceful SIGTERM."""

import json
import os
import pathlib
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from serving import client

REPO = pathlib.Path(__file__).resolve().parents[2]


def string_tensor(values):
    return tf.make_tensor_proto(np.array([v.encode() for v in values], dtype=object),
                                dtype=tf.string)


@pytest.fixture
def server_process(export_base, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    info = tmp_path / "server.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "serving.server", "--port=0", "--rest_api_port=-1",
         "--model_name=babi", f"--model_base_path={export_base}/babi",
         "--file_system_poll_wait_seconds=0", "--shutdown_grace_seconds=60",
         # the small-model flags of the README: ops in the request's thread (negative)
         "--tensorflow_intra_op_parallelism=1", "--tensorflow_inter_op_parallelism=-1",
         f"--server_info_file={info}"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr],
                              daemon=True)
    reader.start()
    log = []
    deadline = time.monotonic() + 180
    while not info.exists() and time.monotonic() < deadline and proc.poll() is None:
        try:
            log.append(lines.get(timeout=0.5))
        except queue.Empty:
            continue
    # The ports come from the server's info file (ModelServer.ports), not from its log.
    ports = json.loads(info.read_text())["ports"] if info.exists() else {}
    proc.info_file = info
    try:
        assert ports.get("grpc") and ports.get("rest"), "".join(log)[-3000:]
        yield proc, ports, lines, log
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_server_process_client_cli_and_graceful_sigterm(server_process, task1, capsys):
    proc, ports, lines, log = server_process
    # words of both the real task-1 vocabulary and the tiny fallback data of conftest.py
    story = "Mary went to the kitchen.\nJohn went to the garden."
    assert client.main(["--server", f"localhost:{ports['grpc']}", "--model_name", "babi",
                        "--story", story, "--question", "Where is Mary?"]) == 0
    grpc_out = capsys.readouterr().out.split("\n")
    assert grpc_out[0] in task1.vocab.tokens and len(grpc_out) == 7  # answer + 5 + ""
    assert client.main(["--rest", "--server", f"127.0.0.1:{ports['rest']}", "--story", story,
                        "--question", "Where is Mary?"]) == 0
    assert capsys.readouterr().out.split("\n")[0] == grpc_out[0]
    assert client.main(["--server", f"localhost:{ports['grpc']}", "--model_name", "nope",
                        "--story", story, "--question", "?"]) == 1
    grpc_error = capsys.readouterr().err
    assert grpc_error.startswith("error: NOT_FOUND: ")
    # The REST client's errors read the same way.
    assert client.main(["--rest", "--server", f"127.0.0.1:{ports['rest']}", "--model_name",
                        "nope", "--story", story, "--question", "?"]) == 1
    assert capsys.readouterr().err.startswith("error: NOT_FOUND: ")
    # Words the model has never seen: the answer comes with a warning on stderr.
    assert client.main(["--server", f"localhost:{ports['grpc']}", "--story", story,
                        "--question", "What is the capital of France?"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split("\n")[0] in task1.vocab.tokens
    # "what", "capital", "of", "france": 4 with either vocabulary; counted, not assumed
    # (distinct words, as the warning lists them; punctuation is no word).
    from tpr_keras.data import babi

    words = babi.tokenize(story) + babi.tokenize("What is the capital of France?")
    unknown = len({w for w in words if w not in task1.vocab and w.isalnum()})
    assert unknown >= 4
    assert captured.err.startswith(f"warning: {unknown} word(s)"), captured.err
    assert "warning" not in capsys.readouterr().err
    # The command itself, in a fresh process: it answers without importing TensorFlow.
    code = ("import sys; from serving import client; rc = client.main(sys.argv[1:]); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; sys.exit(rc)")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, "--server",
                           f"localhost:{ports['grpc']}", "--story", story, "--question",
                           "Where is Mary?"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == grpc_out[0] and not done.stderr
    assert seconds < 30  # ~0.3 s on 2 idle cores; the bound only catches a TensorFlow import

    # A slow request is in flight when SIGTERM arrives: it finishes, then the server exits.
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "babi"
    long_story = "\n".join(["mary went to the kitchen ."] * 70)
    request.inputs["story"].CopyFrom(string_tensor([long_story] * 2000))
    request.inputs["question"].CopyFrom(string_tensor(["where is mary ?"] * 2000))
    with grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        future = stub.Predict.future(request, timeout=120)
        time.sleep(0.3)
        in_flight = not future.done()
        proc.send_signal(signal.SIGTERM)
        response = future.result()
    assert len(response.outputs["answer"].string_val) == 2000
    assert proc.wait(timeout=120) == 0
    time.sleep(0.2)
    while not lines.empty():
        log.append(lines.get())
    text = "".join(log)
    assert "shutting down" in text and "Shut down; served" in text, text[-2000:]
    # Every API is counted: 5 gRPC Predicts (the NOT_FOUND one too) and 2 REST ones.
    assert "served 7 Predict requests (REST predict 2, gRPC Predict 5)" in text, text[-2000:]
    # NOT_FOUND 4: the two Predicts for model "nope", and the model-status lookups (gRPC
    # GetModelStatus, REST GET /v1/models/nope) by which each client learns that no version
    # of it is loading, so that waiting will not help.
    assert "errors {'NOT_FOUND': 4}" in text, text[-2000:]
    stats = json.loads(proc.info_file.read_text())["stats"]  # ModelServer.stats()
    assert stats["requests"]["gRPC Predict"] == 5 and stats["requests"]["REST predict"] == 2
    assert stats["errors"] == {"NOT_FOUND": 4} and stats["handler_ms"]["count"] == 5
    assert in_flight, "the request was not in flight when SIGTERM arrived"


def test_client_prints_the_outputs_of_another_signature(server, capsys):
    """``--signature_name tokenize`` (no ``answer`` output): its outputs, one per line."""
    story, question = "Mary went to the kitchen.\nJohn went to the garden.", "Where is Mary?"
    for transport in ([], ["--rest"]):
        port = server.rest_api_port if transport else server.port
        assert client.main([*transport, "--server", f"127.0.0.1:{port}", "--signature_name",
                            "tokenize", "--story", story, "--question", question]) == 0
        lines = capsys.readouterr().out.strip().splitlines()
        assert [line.split(":")[0] for line in lines] == ["question_ids", "story_ids"]
        story_ids = json.loads(lines[1].split(": ", 1)[1])
        assert len(story_ids) == 1 and len(story_ids[0]) == 2  # [batch, sentences, words]
        assert all(isinstance(w, int) for w in story_ids[0][0])


def test_client_refuses_story_with_premise(capsys):
    with pytest.raises(SystemExit) as info:
        client.main(["--story", "s", "--question", "q", "--premise", "p", "--hypothesis", "h"])
    assert info.value.code == 2
    assert "give one pair" in capsys.readouterr().err


def test_client_waits_for_a_server_that_is_starting(export_base, make_model_config, capsys):
    from serving.core.manager import ModelManager
    from serving.model_server.server import ModelServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["--server", f"127.0.0.1:{port}", "--story", "Mary went home.", "--question",
            "Where is Mary?"]
    assert client.main([*argv, "--wait_seconds=0"]) == 1  # nothing listening: one line
    err = capsys.readouterr().err
    assert err.startswith("error: UNAVAILABLE: ") and err.count("\n") == 1
    started = []

    def start_later():
        time.sleep(1.0)
        manager = ModelManager([make_model_config("babi", os.path.join(export_base, "babi"))])
        started.append(ModelServer(manager, port=port).start())

    thread = threading.Thread(target=start_later)
    thread.start()
    try:
        assert client.main([*argv, "--wait_seconds=120"]) == 0, capsys.readouterr().err
        assert capsys.readouterr().out.split("\n")[0]
    finally:
        thread.join()
        for srv in started:
            srv.stop(grace=1)
