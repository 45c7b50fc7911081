"""The REST front end's HTTP layer (serving.model_server.rest_api) with raw sockets: every
malformed request gets a 4xx JSON answer, bodies are bounded in size and in time, and slow or
lying clients cannot starve the port. Reference: tensorflow_serving/model_servers/
http_rest_api_handler.cc (statuses) and its --rest_api_timeout_in_ms flag."""

import concurrent.futures
import json
import os
import socket
import time

import pytest
from tensorflow_serving.config import model_server_config_pb2

from tests.serving import fuzz
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer

TIMEOUT_S = 0.5
LIMIT = 1 << 20


def serve_babi(export_base, timeout_s):
    config = model_server_config_pb2.ModelConfig(
        name="babi", base_path=os.path.join(export_base, "babi"), model_platform="tensorflow")
    return ModelServer(ModelManager([config]), port=0, rest_api_port=0, rest_api_num_threads=4,
                       max_message_bytes=LIMIT, rest_api_timeout_s=timeout_s).start()


@pytest.fixture(scope="module")
def rest(export_base):
    """The server with a short REST deadline (``TIMEOUT_S``), for the tests of clients that
    send too little or too slowly."""
    server = serve_babi(export_base, TIMEOUT_S)
    yield fuzz.Target(server.ports["grpc"], server.ports["rest"])
    server.stop(grace=2)


@pytest.fixture(scope="module")
def roomy_rest(export_base):
    """The server with TF Serving's default REST deadline (30 s), for a request whose run
    takes what the machine makes it take: under ``TIMEOUT_S`` it would answer 504 on a
    loaded machine."""
    server = serve_babi(export_base, 30.0)
    yield fuzz.Target(server.ports["grpc"], server.ports["rest"])
    server.stop(grace=2)


def post(target, body, **headers):
    return fuzz.http_post(target, "/v1/models/babi:predict", body, headers)


ONE = json.dumps({"instances": [{"story": "Mary went home.", "question": "Where is Mary?"}]})


def test_valid_request(rest):
    status, doc = post(rest, ONE.encode())
    assert status == "http:200" and isinstance(doc["predictions"][0]["answer"], str)


@pytest.mark.parametrize("length", ["abc", "-1", "1.5", "", " 12x", "9" * 30])
def test_content_length_must_be_a_non_negative_integer(rest, length):
    status, doc = post(rest, ONE.encode(), **{"Content-Length": length})
    assert status == "http:400" and "Content-Length" in doc["error"]


def test_body_shorter_than_declared_gets_408_after_the_read_timeout(rest):
    started = time.perf_counter()
    status, doc = post(rest, ONE.encode(), **{"Content-Length": str(len(ONE) + 50)})
    assert status == "http:408" and "read timeout" in doc["error"]
    assert TIMEOUT_S <= time.perf_counter() - started < TIMEOUT_S + 5


def test_a_client_that_closes_early_gets_400(rest):
    with socket.create_connection(("127.0.0.1", rest.rest_port)) as sock:
        sock.sendall(b"POST /v1/models/babi:predict HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.0 400") and b"the body ended after 1 of" in reply


def test_lying_clients_cannot_starve_the_port(rest):
    """Twice as many stalled connections as handler threads; a valid request still gets
    through within a few read timeouts."""
    def stalled():
        return post(rest, b"{", **{"Content-Length": "1000"})[0]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        stalls = [pool.submit(stalled) for _ in range(8)]
        time.sleep(0.1)
        started = time.perf_counter()
        status, _ = post(rest, ONE.encode())
        waited = time.perf_counter() - started
        assert [s.result() for s in stalls] == ["http:408"] * 8
    assert status == "http:200" and waited < 4 * TIMEOUT_S + 5


def test_oversize_body_is_refused_before_reading_it(rest):
    status, doc = post(rest, b"x" * (LIMIT + 1))
    assert status == "http:413" and f"limit of {LIMIT} bytes" in doc["error"]


@pytest.mark.parametrize("raw,code", [
    (b"GARBAGE\r\n\r\n", "http:400"),
    (b"GET / HTTP/9.9\r\n\r\n", "http:400"),
    (b"BREW /v1/models/babi HTTP/1.1\r\n\r\n", "http:405"),
    (b"DELETE /v1/models/babi HTTP/1.1\r\n\r\n", "http:400"),
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", "http:414"),
    (b"POST /v1/models/babi:predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     "http:411"),
])
def test_http_level_errors_are_json_4xx(rest, raw, code):
    status, doc = fuzz.http_raw(rest, raw)
    assert status == code and isinstance(doc["error"], str), (status, doc)


@pytest.mark.parametrize("body,fragment", [
    (b"[" * 50_000 + b"]" * 50_000, "JSON Parse error"),
    (json.dumps({"instances": [], "signature_name": ["serving_default"]}).encode(),
     "'signature_name' must be a string"),
    (json.dumps({"instances": [{"story": 3.5, "question": "q"}]}).encode(),
     "not of expected type string"),
    (json.dumps({"inputs": {"story": [False], "question": ["q"]}}).encode(),
     "not of expected type string"),
    (json.dumps({"inputs": {"story": [["a"], ["b", "c"]], "question": ["q"]}}).encode(),
     "rectangular"),
    (json.dumps({"inputs": {"story": ["a", "b"], "question": ["q"]}}).encode(),
     "same batch size"),
])
def test_malformed_json_requests_are_400(rest, body, fragment):
    status, doc = post(rest, body)
    assert status == "http:400" and fragment in doc["error"], doc


def test_long_story_and_999_empty_ones(roomy_rest):
    """A 122 kB request (one 100 kB story and 999 empty ones): answered, one answer per
    story."""
    story = "mary went to the kitchen . " * 3700
    body = json.dumps({"inputs": {"story": [story] + [""] * 999,
                                  "question": ["where is mary ?"] * 1000}}).encode()
    status, doc = post(roomy_rest, body)
    assert status == "http:200" and len(doc["outputs"]["answer"]) == 1000
