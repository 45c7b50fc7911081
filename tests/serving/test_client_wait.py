"""``python -m serving.client`` as a user meets it, against a stand-in gRPC server (no
TensorFlow): it waits for a server that opens its ports late and for a model still loading,
saying on stderr what it waits for and why; when it gives up it says how long it waited, the
last error and what to do; a reader that closes the pipe early ends it quietly."""

import os
import pathlib
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc
import pytest

from serving.client import ServerNotReady, ServingClient, protos

REPO = pathlib.Path(__file__).resolve().parents[2]
ASK = ["--story", "Mary went to the kitchen.", "--question", "Where is Mary?"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandIn:
    """A gRPC server answering Predict as a bAbI model does; its first ``loading`` Predict
    calls are NOT_FOUND while GetModelStatus says version 1 is LOADING."""

    def __init__(self, port, loading=0, candidates=3):
        self.loading, self.candidates, self.calls = loading, candidates, 0
        handlers = {"Predict": grpc.unary_unary_rpc_method_handler(
            self.predict, protos.PredictRequest.FromString,
            protos.PredictResponse.SerializeToString)}
        status = {"GetModelStatus": grpc.unary_unary_rpc_method_handler(
            self.status, protos.GetModelStatusRequest.FromString,
            protos.GetModelStatusResponse.SerializeToString)}
        self.server = grpc.server(futures.ThreadPoolExecutor(2))
        self.server.add_generic_rpc_handlers([
            grpc.method_handlers_generic_handler("tensorflow.serving.PredictionService",
                                                 handlers),
            grpc.method_handlers_generic_handler("tensorflow.serving.ModelService", status)])
        self.server.add_insecure_port(f"127.0.0.1:{port}")

    def status(self, request, context):
        if request.model_spec.name != "babi":
            context.abort(grpc.StatusCode.NOT_FOUND, "Could not find any versions of model")
        response = protos.GetModelStatusResponse()
        response.model_version_status.add(version=1, state=20 if self.calls <= self.loading
                                          else 30)
        return response

    def predict(self, request, context):
        self.calls += 1
        if request.model_spec.name != "babi" or self.calls <= self.loading:
            context.abort(grpc.StatusCode.NOT_FOUND, "Servable not found for request")
        response = protos.PredictResponse()
        words = [f"word{i}".encode() for i in range(self.candidates)]
        for name, values in (("answer", words[:1]), ("candidates", words)):
            out = response.outputs[name]
            out.dtype = protos.DT_STRING
            out.tensor_shape.dim.add(size=1)
            if name == "candidates":
                out.tensor_shape.dim.add(size=len(values))
            out.string_val.extend(values)
        scores = response.outputs["scores"]
        scores.dtype = protos.DT_FLOAT
        scores.tensor_shape.dim.add(size=1)
        scores.tensor_shape.dim.add(size=self.candidates)
        scores.float_val.extend([1.0 / self.candidates] * self.candidates)
        response.model_spec.version.value = 1
        return response


def client_command(port, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "serving.client",
                             f"--server=127.0.0.1:{port}", *ASK, *args],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_waits_for_a_server_that_opens_its_ports_late_and_says_why():
    port = free_port()
    proc = client_command(port, "--wait_seconds=60")
    time.sleep(3)  # the client is refused meanwhile, as by a server still loading its models
    server = StandIn(port)
    server.server.start()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        server.server.stop(0)
    assert proc.returncode == 0, err
    assert out.splitlines()[0] == "word0", out
    waits = [line for line in err.splitlines() if line.startswith("waiting for model 'babi'")]
    assert waits and "connection refused" in waits[0] and "still loading" in waits[0], err
    assert "of --wait_seconds 60" in waits[0], err


def test_gives_up_saying_how_long_the_last_error_and_what_to_do():
    port = free_port()  # nothing listens there
    started = time.monotonic()
    proc = client_command(port, "--wait_seconds=2")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == "", (out, err)
    assert time.monotonic() - started >= 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: gave up after waiting 2 s (--wait_seconds 2)"), last
    assert "Connection refused" in last and "larger --wait_seconds" in last, last


def test_waits_while_the_model_is_loading_and_not_for_an_unknown_model():
    port = free_port()
    server = StandIn(port, loading=3)
    server.server.start()
    messages = []
    try:
        with ServingClient(f"127.0.0.1:{port}", "babi", wait_seconds=30,
                           on_wait=messages.append) as client:
            outputs, version = client.predict({"story": ["s"], "question": ["q"]})
        assert outputs["answer"] == ["word0"] and version == 1
        assert server.calls == 4
        assert messages and "the model is loading (version 1: LOADING)" in messages[0], messages
        # a model the server does not know: NOT_FOUND at once, no waiting
        started = time.monotonic()
        with ServingClient(f"127.0.0.1:{port}", "nosuch", wait_seconds=30) as client:
            with pytest.raises(grpc.RpcError) as error:
                client.predict({"story": ["s"], "question": ["q"]})
        assert error.value.code() == grpc.StatusCode.NOT_FOUND
        assert time.monotonic() - started < 10
        # a model that stays loading: ServerNotReady names the loading version
        server.loading = 1000
        with ServingClient(f"127.0.0.1:{port}", "babi", wait_seconds=1.5) as client:
            with pytest.raises(ServerNotReady) as gave_up:
                client.predict({"story": ["s"], "question": ["q"]})
        assert "version 1: LOADING" in str(gave_up.value) and gave_up.value.waited_s >= 1.5
    finally:
        server.server.stop(0)


def test_a_reader_that_closes_the_pipe_early_ends_the_client_quietly():
    """``python -m serving.client ... | head -1``: the reply meets a closed pipe."""
    port = free_port()
    server = StandIn(port, candidates=5000)  # more than a pipe buffer of output
    server.server.start()
    try:
        proc = client_command(port, "--wait_seconds=30")
        first = proc.stdout.readline()  # what `head -1` reads, then it exits
        proc.stdout.close()
        err = proc.stderr.read()
        status = proc.wait(timeout=60)
    finally:
        server.server.stop(0)
    assert first == "word0\n"
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert status == 141, (status, err)


def test_help_into_a_closed_pipe_is_quiet_too():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "serving.client", "--help"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # before the command writes anything
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == "", err
