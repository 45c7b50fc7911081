"""gRPC over TLS (``--ssl_config_file``) and the gRPC health service
(``--enable_grpc_healthcheck_service``): a self-signed certificate made with the openssl
command, the official stubs over a secure channel, a plaintext client refused, and
start-up errors that name the file and the field."""

import os
import shutil
import subprocess

import grpc
import numpy as np
import pytest
import tensorflow as tf
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tensorflow_serving.apis import (
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from serving.core.manager import ModelManager
from serving.model_server.config_protos import ConfigError
from serving.model_server.server import ModelServer
from serving.model_server.tls import read_ssl_config

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """(key, cert) PEM text of a self-signed certificate for localhost/127.0.0.1."""
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return (d / "key.pem").read_text(), (d / "cert.pem").read_text()


def ssl_file(tmp_path, key, cert, extra=""):
    path = tmp_path / "ssl.config"
    path.write_text(f"server_key: {key!r}\nserver_cert: {cert!r}\n{extra}".replace("'", '"'))
    return str(path)


def predict_request():
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "babi"
    for name, text in (("story", "mary went to the kitchen ."), ("question", "where is mary ?")):
        request.inputs[name].CopyFrom(
            tf.make_tensor_proto(np.array([text.encode()], dtype=object), dtype=tf.string))
    return request


@pytest.fixture(scope="module")
def tls_server(export_base, pem, tmp_path_factory, make_model_config):
    config = read_ssl_config(ssl_file(tmp_path_factory.mktemp("cfg"), *pem))
    manager = ModelManager([make_model_config("babi", os.path.join(export_base, "babi"))])
    server = ModelServer(manager, port=0, ssl_config=config, health=True).start()
    yield server
    server.stop(grace=1)


def test_predict_and_status_over_tls_and_plaintext_is_refused(tls_server, pem):
    credentials = grpc.ssl_channel_credentials(root_certificates=pem[1].encode())
    with grpc.secure_channel(f"localhost:{tls_server.port}", credentials) as channel:
        response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(
            predict_request(), timeout=60)
        assert response.outputs["answer"].string_val
        status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(
            get_model_status_pb2.GetModelStatusRequest(model_spec={"name": "babi"}),
            timeout=30)
        assert status.model_version_status[0].state == (
            get_model_status_pb2.ModelVersionStatus.State.AVAILABLE)
    with grpc.insecure_channel(f"127.0.0.1:{tls_server.port}") as channel:
        with pytest.raises(grpc.RpcError) as err:
            prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(
                predict_request(), timeout=10)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def check(port, service, credentials=None):
    target = f"localhost:{port}"
    channel = (grpc.secure_channel(target, credentials) if credentials
               else grpc.insecure_channel(target))
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status


def test_health_serving_after_load_not_found_for_unknown(tls_server, pem):
    credentials = grpc.ssl_channel_credentials(root_certificates=pem[1].encode())
    for service in ("", "tensorflow.serving.PredictionService"):
        assert check(tls_server.port, service, credentials) == (
            health_pb2.HealthCheckResponse.SERVING)
    with pytest.raises(grpc.RpcError) as err:
        check(tls_server.port, "no.such.Service", credentials)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_not_serving_before_a_version_loads_and_while_draining(export_base, tmp_path,
                                                                     make_model_config):
    model_config = make_model_config
    empty = tmp_path / "empty"
    empty.mkdir()
    manager = ModelManager([model_config("babi", os.path.join(export_base, "babi")),
                            model_config("later", empty)])
    server = ModelServer(manager, port=0, health=True).start()
    try:
        assert check(server.port, "") == health_pb2.HealthCheckResponse.NOT_SERVING
        manager.reload_config([model_config("babi", os.path.join(export_base, "babi"))])
        assert server.health.update()
        assert check(server.port, "") == health_pb2.HealthCheckResponse.SERVING
        server.health.drain()  # what stop() does first
        assert check(server.port, "") == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        server.stop(grace=1)


@pytest.mark.parametrize("extra,field", [("", None), ("client_verify: true", "custom_ca")])
def test_ssl_config_errors_name_the_file_and_field(tmp_path, pem, extra, field):
    key, cert = pem
    # a key that is not PEM
    with pytest.raises(ConfigError, match=r"ssl\.config: server_key is not PEM"):
        read_ssl_config(ssl_file(tmp_path, "not a key", cert, extra))
    # a certificate whose body is damaged
    broken = cert.replace(cert.splitlines()[3], "A" * 64)
    with pytest.raises(ConfigError, match=r"ssl\.config: server_cert and server_key"):
        read_ssl_config(ssl_file(tmp_path, key, broken))
    if field:
        with pytest.raises(ConfigError, match=field):
            read_ssl_config(ssl_file(tmp_path, key, cert, extra))
    (tmp_path / "bad.config").write_text("server_keys: 'x'")
    with pytest.raises(ConfigError, match=r"bad\.config: .*server_keys"):
        read_ssl_config(str(tmp_path / "bad.config"))
