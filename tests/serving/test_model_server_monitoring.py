"""Prometheus metrics on the REST port (``--monitoring_config_file``) in TF Serving's
names, labels and text format (tensorflow_serving/util/prometheus_exporter.cc)."""

import json
import os
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from serving.core.manager import ModelManager
from serving.model_server.config_protos import ConfigError
from serving.model_server.monitoring import (
    BUCKETS_US,
    DEFAULT_PATH,
    Metrics,
    read_monitoring_config,
)
from serving.model_server.server import ModelServer

PATH = "/monitoring/prometheus/metrics"


def test_page_format_is_tf_servings():
    metrics = Metrics()
    metrics.request("m", "OK", "Predict", "GRPC", 20e-6)
    metrics.request("m", "NOT_FOUND", "Predict", "GRPC", 1.0)  # no latency: not OK
    metrics.begin("m", "Predict")
    metrics.signature_call(5e-6)
    page = metrics.page().decode()
    assert "# HELP" not in page
    lines = page.splitlines()
    assert lines[:3] == ["# TYPE :tensorflow:serving:request_count counter",
                         ':tensorflow:serving:request_count{model_name="m",status="NOT_FOUND"} 1',
                         ':tensorflow:serving:request_count{model_name="m",status="OK"} 1']
    assert "# TYPE :tensorflow:serving:request_latency histogram" in lines
    labels = 'model_name="m",API="Predict",entrypoint="GRPC"'
    assert f':tensorflow:serving:request_latency_bucket{{{labels},le="10"}} 0' in lines
    assert f':tensorflow:serving:request_latency_bucket{{{labels},le="18"}} 0' in lines
    assert f':tensorflow:serving:request_latency_bucket{{{labels},le="+Inf"}} 1' in lines
    assert f":tensorflow:serving:request_latency_count{{{labels}}} 1" in lines
    assert ':tensorflow:serving:runtime_latency_bucket{model_name="m",API="Predict",' \
           'runtime="TF1",le="10"} 1' in lines
    assert len(BUCKETS_US) == 33 and BUCKETS_US[0] == 10


def test_monitoring_config_file(tmp_path):
    path = tmp_path / "monitoring.config"
    path.write_text('prometheus_config { enable: true path: "/metrics/here" }')
    assert read_monitoring_config(str(path)) == "/metrics/here"
    path.write_text("prometheus_config { enable: true }")
    assert read_monitoring_config(str(path)) == DEFAULT_PATH
    path.write_text("prometheus_config { enable: false }")
    assert read_monitoring_config(str(path)) is None
    path.write_text("prometheus_config { enable: true paht: '/x' }")
    with pytest.raises(ConfigError, match=r"monitoring\.config: .*paht"):
        read_monitoring_config(str(path))


@pytest.fixture(scope="module")
def monitored(babi_server):
    """A server of its own: the counts below start from zero."""
    return babi_server(metrics_path=PATH)


def scrape(server):
    url = f"http://127.0.0.1:{server.rest_api_port}{PATH}"
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return response.read().decode().splitlines()


def count(lines, labels):
    prefix = f":tensorflow:serving:request_count{{{labels}}} "
    return sum(int(line[len(prefix):]) for line in lines if line.startswith(prefix))


def test_requests_are_counted_by_model_status_api_and_entrypoint(monitored):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "babi"
    for name, text in (("story", "mary went to the kitchen ."), ("question", "where is mary ?")):
        request.inputs[name].CopyFrom(
            tf.make_tensor_proto(np.array([text.encode()], dtype=object), dtype=tf.string))
    before = scrape(monitored)
    with grpc.insecure_channel(f"127.0.0.1:{monitored.port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        stub.Predict(request, timeout=60)
        request.model_spec.name = "nope"
        with pytest.raises(grpc.RpcError):
            stub.Predict(request, timeout=60)
    body = json.dumps({"instances": [{"story": "Mary went home.",
                                      "question": "Where is Mary?"}]}).encode()
    url = f"http://127.0.0.1:{monitored.rest_api_port}/v1/models/babi:predict"
    urllib.request.urlopen(urllib.request.Request(url, body), timeout=60).read()
    with pytest.raises(urllib.error.HTTPError):  # INVALID_ARGUMENT: counted, no latency
        urllib.request.urlopen(urllib.request.Request(url, b"{"), timeout=60)
    after = scrape(monitored)
    ok, bad = 'model_name="babi",status="OK"', 'model_name="babi",status="INVALID_ARGUMENT"'
    assert count(after, ok) - count(before, ok) == 2
    assert count(after, bad) - count(before, bad) == 1
    assert count(after, 'model_name="nope",status="NOT_FOUND"') == 1
    grpc_labels = 'model_name="babi",API="Predict",entrypoint="GRPC"'
    rest_labels = 'model_name="babi",API="predict",entrypoint="REST"'
    assert f":tensorflow:serving:request_latency_count{{{grpc_labels}}} 1" in after
    assert f":tensorflow:serving:request_latency_count{{{rest_labels}}} 1" in after
    for api in ("Predict", "predict"):
        assert any(line.startswith(":tensorflow:serving:runtime_latency_count{model_name="
                                   f'"babi",API="{api}",runtime="TF1"}}') for line in after)
    assert ':serving:model_version_available{model_name="babi",version="1"} 1' in after
    # The server's own statistics still count every request.
    assert monitored.stats()["requests"]["gRPC Predict"] >= 2


def test_saved_model_loads_are_counted_as_tensorflow_counts_them(export_base, make_model_config):
    """TensorFlow's loader metrics (tensorflow/cc/saved_model/loader.cc), fed by the
    manager's on_load: attempts by version folder and outcome, microseconds of successes."""
    metrics = Metrics()
    manager = ModelManager([make_model_config("babi", os.path.join(export_base, "babi"))],
                           on_load=metrics.saved_model_load)
    server = ModelServer(manager, port=0, rest_api_port=0, metrics_path=PATH,
                         metrics=metrics).start()
    try:
        lines = scrape(server)
    finally:
        server.stop(grace=1)
    version = os.path.join(export_base, "babi", "1")
    assert "# TYPE :tensorflow:cc:saved_model:load_attempt_count counter" in lines
    assert "# TYPE :tensorflow:cc:saved_model:load_latency counter" in lines
    assert (f':tensorflow:cc:saved_model:load_attempt_count{{model_path="{version}",'
            'status="success"} 1') in lines
    latency = [line for line in lines if line.startswith(
        f':tensorflow:cc:saved_model:load_latency{{model_path="{version}"}} ')]
    assert len(latency) == 1 and int(latency[0].split()[-1]) > 0
    assert ':serving:model_version_available{model_name="babi",version="1"} 1' in lines
    metrics.saved_model_load("m", 2, "/nope/2", False, 0.5)
    page = metrics.page().decode().splitlines()
    assert ':tensorflow:cc:saved_model:load_attempt_count{model_path="/nope/2",' \
           'status="fail"} 1' in page
    assert not any('load_latency{model_path="/nope/2"' in line for line in page)
