"""TF Serving's contract with its own test models: ``half_plus_two`` and ``half_plus_three``
(y = 0.5 * x + 2 or 3; built in code as its testdata has them, in version folder
00000123) asked with the examples of TF Serving's documentation, over the official gRPC
stubs and REST, with the answers ``tensorflow_model_server`` gives."""

import json
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest
from tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from serving.core._tf import tf
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer

MODELS = ("half_plus_two", "half_plus_three", "half_plus_two_tf2")


@pytest.fixture(scope="module")
def hp_server(half_plus_base, make_model_config):
    manager = ModelManager([make_model_config(n, half_plus_base / n) for n in MODELS])
    srv = ModelServer(manager, port=0, rest_api_port=0).start()
    yield srv
    srv.stop(grace=2)


@pytest.fixture(scope="module")
def channel(hp_server):
    with grpc.insecure_channel(f"127.0.0.1:{hp_server.port}") as ch:
        yield ch


@pytest.fixture(scope="module")
def predictions(channel):
    return prediction_service_pb2_grpc.PredictionServiceStub(channel)


def rest(server, path, body=None):
    data = None if body is None else (body if isinstance(body, bytes) else
                                      json.dumps(body).encode())
    req = urllib.request.Request(f"http://127.0.0.1:{server.rest_api_port}{path}", data=data,
                                 method="GET" if data is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


# ---- Predict ----------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_rest_predict_examples_of_the_docs(hp_server, model):
    b = 3.0 if model == "half_plus_three" else 2.0
    status, doc = rest(hp_server, f"/v1/models/{model}:predict",
                       b'{"instances": [1.0, 2.0, 5.0]}')
    assert (status, doc) == (200, {"predictions": [0.5 + b, 1.0 + b, 2.5 + b]})
    status, doc = rest(hp_server, f"/v1/models/{model}:predict", {"inputs": [2.0, 3.0, 4.0]})
    assert (status, doc) == (200, {"outputs": [1.0 + b, 1.5 + b, 2.0 + b]})
    status, doc = rest(hp_server, f"/v1/models/{model}/versions/123:predict",
                       {"instances": [[1.0], [2.0]]})
    assert (status, doc) == (200, {"predictions": [[0.5 + b], [1.0 + b]]})


@pytest.mark.parametrize("model", ["half_plus_two", "half_plus_two_tf2"])
def test_grpc_predict_feeds_the_tensor_as_sent(predictions, model):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0, 2.0, 5.0], tf.float32))
    response = predictions.Predict(request, timeout=30)
    assert response.model_spec.version.value == 123
    assert response.outputs["y"].float_val == [2.5, 3.0, 4.5]
    assert [d.size for d in response.outputs["y"].tensor_shape.dim] == [3]
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([[1.0], [3.0]], tf.float32))
    np.testing.assert_array_equal(tf.make_ndarray(predictions.Predict(request, timeout=30)
                                                  .outputs["y"]), [[2.5], [3.5]])


def test_a_tensor_the_graph_cannot_run_is_invalid_argument(predictions, hp_server):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half_plus_two"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0, 2.0], tf.float64))
    with pytest.raises(grpc.RpcError) as info:  # dtype: still checked up front
        predictions.Predict(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expected dtype DT_FLOAT, got DT_DOUBLE" in info.value.details()
    # a graph that needs a shape: the regression input x2 of half_plus_two is [-1, 1] and
    # multiplies by a scalar; a string input fed to parse_example must be a vector
    status, doc = rest(hp_server, "/v1/models/half_plus_two:predict",
                       {"signature_name": "regress_x_to_y", "instances": [[["a"]]]})
    assert status == 400 and "[1,1,1]" in doc["error"], doc


def test_rest_status_and_metadata_as_tf_serving_prints_them(hp_server):
    assert rest(hp_server, "/v1/models/half_plus_three") == (200, {"model_version_status": [
        {"version": "123", "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}}]})
    status, doc = rest(hp_server, "/v1/models/half_plus_two/metadata")
    assert status == 200
    assert doc["model_spec"] == {"name": "half_plus_two", "signature_name": "",
                                 "version": "123"}
    defs = doc["metadata"]["signature_def"]["signature_def"]
    assert sorted(defs) == ["classify_x_to_y", "regress_x2_to_y3", "regress_x_to_y",
                            "regress_x_to_y2", "serving_default"]
    dims = [{"size": "-1", "name": ""}, {"size": "1", "name": ""}]
    shape = {"dim": dims, "unknown_rank": False}
    assert defs["serving_default"] == {
        "inputs": {"x": {"dtype": "DT_FLOAT", "tensor_shape": shape, "name": "x:0"}},
        "outputs": {"y": {"dtype": "DT_FLOAT", "tensor_shape": shape, "name": "y:0"}},
        "method_name": "tensorflow/serving/predict", "defaults": {}}


def test_grpc_metadata_and_status_report_version_123(channel):
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = "half_plus_three"
    response = stub.GetModelMetadata(request, timeout=30)
    assert response.model_spec.version.value == 123
    status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(
        get_model_status_pb2.GetModelStatusRequest(
            model_spec={"name": "half_plus_two"}), timeout=30)
    assert [v.version for v in status.model_version_status] == [123]
