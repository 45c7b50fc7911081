"""Every failed request gets one log line naming the API and method, the model and the status,
alike over gRPC and REST (one helper, :mod:`serving.core.error_log`), and a flood of them is
rate-limited: at most the bucket's lines, then one line counting the rest."""

import logging
import socket
import time
import urllib.error
import urllib.request

import grpc
import pytest
from tensorflow_serving.apis import predict_pb2

from serving.core.error_log import ErrorLog

LOGGER = "serving.server"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def lines(caplog, level=None):
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and (level is None or r.levelno == level)]


def test_a_flood_writes_the_burst_then_one_line_counting_the_rest(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = Clock()
    errors = ErrorLog(logging.getLogger(LOGGER), burst=3, per_second=1.0, report_every_s=10,
                      clock=clock, timer=False)
    written = [errors.request_failed("gRPC Predict", "babi", "INVALID_ARGUMENT", "bad")
               for _ in range(1000)]
    assert written == [True] * 3 + [False] * 997
    errors.request_failed("REST predict", "x", "NOT_FOUND", "gone", http_status=404)
    assert lines(caplog) == ["gRPC Predict, model 'babi': INVALID_ARGUMENT: bad"] * 3
    errors.flush()
    report = lines(caplog, logging.WARNING)
    assert len(report) == 1 and report[0].startswith(
        "998 similar request-error line(s) suppressed in the last 0 s (at most 3 at once, "
        "then 1 a second, are written): gRPC Predict, model 'babi', INVALID_ARGUMENT: 997; "
        "REST predict, model 'x', NOT_FOUND: 1"), report
    errors.flush()  # nothing more to say
    assert len(lines(caplog)) == 4
    # The bucket refills at per_second: 2 s later, two lines again.
    clock.now += 2
    assert [errors.request_failed("gRPC Predict", "babi", "INTERNAL", "x", level=logging.ERROR)
            for _ in range(3)] == [True, True, False]
    assert lines(caplog, logging.ERROR) == ["gRPC Predict, model 'babi': INTERNAL: x"] * 2
    # A line written report_every_s after the first suppressed one comes after its count.
    clock.now += 10
    caplog.clear()
    errors.request_failed("REST status", None, "NOT_FOUND", "no", http_status=404)
    assert lines(caplog) == [
        lines(caplog)[0], "REST status, no model: NOT_FOUND (HTTP 404): no"]
    assert lines(caplog)[0].startswith("1 similar request-error line(s) suppressed in the "
                                       "last 10 s")
    assert (errors.written, errors.dropped) == (6, 999)


def test_the_count_comes_from_a_timer_when_the_flood_stops(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    errors = ErrorLog(logging.getLogger(LOGGER), burst=1, report_every_s=0.2)
    for _ in range(5):
        errors.request_failed("gRPC Predict", "babi", "NOT_FOUND", "x")
    deadline = time.monotonic() + 10
    while not lines(caplog, logging.WARNING) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [line.split(" (")[0] for line in lines(caplog, logging.WARNING)] == [
        "4 similar request-error line(s) suppressed in the last 0 s"]
    errors.close()
    assert len(lines(caplog)) == 2


def test_what_the_client_sent_stays_on_one_clipped_line(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    errors = ErrorLog(logging.getLogger(LOGGER), timer=False)
    errors.request_failed("gRPC Predict", "evil\nINFO fake line", "NOT_FOUND",
                          "a\nb " + "x" * 5000)
    (line,) = lines(caplog)
    assert "\n" not in line and line.startswith(
        "gRPC Predict, model 'evil\\\\nINFO fake line': NOT_FOUND: a b xxx")
    assert len(line) < 500 and line.endswith("...")


@pytest.fixture
def error_log(server, caplog, monkeypatch):
    """The module's server with an error log of 5 lines and no refill (the shared server's
    own bucket is spent by the other tests)."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    log = ErrorLog(logging.getLogger(LOGGER), burst=5, per_second=1e-9, timer=False)
    monkeypatch.setattr(server._stats, "error_log", log)
    return log


def predict(port, model="babi", story="Mary went to the kitchen."):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model or ""
    for key, value in (("story", story), ("question", "Where is Mary?")):
        request.inputs[key].dtype = 7  # DT_STRING
        request.inputs[key].tensor_shape.dim.add(size=1)
        request.inputs[key].string_val.append(value.encode())
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                   request_serializer=lambda r: r if isinstance(r, bytes)
                                   else r.SerializeToString())
        with pytest.raises(grpc.RpcError) as caught:
            call(request if model is not None else b"\xff\xff not a request", timeout=30)
    return caught.value


def rest(port, path, body=b'{"instances": [{"story": "s", "question": "q"}]}'):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    return caught.value.code


def test_each_failed_request_gets_one_line_naming_method_model_and_status(server, error_log,
                                                                          caplog):
    error = predict(server.port, "nope")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert lines(caplog) == [f"gRPC Predict, model 'nope': NOT_FOUND: {error.details()}"]
    caplog.clear()
    assert predict(server.port, None).code() == grpc.StatusCode.INVALID_ARGUMENT
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        with pytest.raises(grpc.RpcError) as caught:
            channel.unary_unary("/tensorflow.serving.PredictionService/Nope")(b"", timeout=30)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert rest(server.rest_api_port, "/v1/models/nope:predict") == 404
    logged = lines(caplog)
    assert logged[0].startswith("gRPC Predict, no model: INVALID_ARGUMENT: Could not parse "
                                "the request bytes as a PredictRequest")
    assert logged[1:] == [
        "gRPC unknown method, no model: UNIMPLEMENTED: Method not found: "
        "/tensorflow.serving.PredictionService/Nope",
        "REST predict, model 'nope': NOT_FOUND (HTTP 404): Servable not found for request: "
        "model 'nope' is not served (models: ['babi'])"], logged


def test_the_http_layers_own_errors_are_logged_too(server, error_log, caplog):
    """A body over the limit is refused from its Content-Length, before it is read (413)."""
    with socket.create_connection(("127.0.0.1", server.rest_api_port), timeout=30) as s:
        s.sendall(b"POST /v1/models/babi:predict HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 999999999999\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.0 413")
    assert lines(caplog) == [
        "REST predict, model 'babi': RESOURCE_EXHAUSTED (HTTP 413): request body of "
        "999999999999 bytes exceeds the limit of 67108864 bytes (the server's "
        "--max_message_bytes)"]


def test_a_flood_of_bad_requests_over_both_apis_is_one_bucket(server, error_log, caplog):
    before = server.stats()["errors"].get("NOT_FOUND", 0)
    for _ in range(40):
        predict(server.port, "nope")
    for _ in range(5):
        rest(server.rest_api_port, "/v1/models/nope:predict")
    assert server.stats()["errors"]["NOT_FOUND"] - before == 45  # every one counted
    assert len(lines(caplog)) == 5  # the burst
    error_log.flush()
    assert len(lines(caplog)) == 6
    assert lines(caplog)[-1].startswith("40 similar request-error line(s) suppressed")
    assert lines(caplog)[-1].endswith("gRPC Predict, model 'nope', NOT_FOUND: 35; REST "
                                      "predict, model 'nope', NOT_FOUND: 5")
