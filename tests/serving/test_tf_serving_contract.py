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
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    input_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from serving.core._tf import tf
from serving.core.batching import BatchingParameters
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


# ---- Classify, Regress, MultiInference -------------------------------------------------


def examples(*xs, key="x", context=None):
    """An ``Input`` of tf.Examples with one float feature each (and a context)."""
    request_input = input_pb2.Input()
    listed = (request_input.example_list if context is None
              else request_input.example_list_with_context)
    if context is not None:
        for name, value in context.items():
            listed.context.features.feature[name].float_list.value.append(value)
    for x in xs:
        example = listed.examples.add()
        if x is not None:
            example.features.feature[key].float_list.value.append(x)
    return request_input


def classify(stub, model, signature, request_input):
    request = classification_pb2.ClassificationRequest(input=request_input)
    request.model_spec.name, request.model_spec.signature_name = model, signature
    return stub.Classify(request, timeout=30)


def regress(stub, model, signature, request_input):
    request = regression_pb2.RegressionRequest(input=request_input)
    request.model_spec.name, request.model_spec.signature_name = model, signature
    return stub.Regress(request, timeout=30)


def grpc_error(call):
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


@pytest.mark.parametrize("model", ["half_plus_two", "half_plus_two_tf2"])
def test_grpc_classify_and_regress_over_tf_examples(predictions, model):
    response = classify(predictions, model, "classify_x_to_y", examples(1.0, 2.0))
    assert [[(c.label, c.score) for c in row.classes]
            for row in response.result.classifications] == [[("", 2.5)], [("", 3.0)]]
    assert (response.model_spec.name, response.model_spec.version.value,
            response.model_spec.signature_name) == (model, 123, "classify_x_to_y")
    response = regress(predictions, model, "regress_x_to_y", examples(1.0, 2.0, 5.0))
    assert [r.value for r in response.result.regressions] == [2.5, 3.0, 4.5]
    response = regress(predictions, model, "regress_x_to_y2", examples(1.0))
    assert [r.value for r in response.result.regressions] == [3.5]
    # A context is merged into every example; an example's own feature wins over it.
    response = regress(predictions, model, "regress_x_to_y",
                       examples(None, 1.0, context={"x": 4.0}))
    assert [r.value for r in response.result.regressions] == [4.0, 2.5]


def test_grpc_classify_regress_errors_are_tf_servings(predictions, hp_server):
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    cases = [
        (lambda: classify(predictions, "half_plus_two", "", examples(1.0)),
         "No classification inputs found in SignatureDef"),  # a predict signature
        (lambda: classify(predictions, "half_plus_two", "regress_x_to_y", examples(1.0)),
         'Expected classification signature outputs to contain at least one of "classes" or '
         '"scores"'),
        (lambda: regress(predictions, "half_plus_two", "classify_x_to_y", examples(1.0)),
         "No regression outputs found in SignatureDef"),
        (lambda: regress(predictions, "half_plus_two", "nope", examples(1.0)),
         "No signature was found with the name: nope"),
        (lambda: regress(predictions, "half_plus_two", "regress_x_to_y", examples()),
         "Input is empty."),
        (lambda: regress(predictions, "half_plus_two", "regress_x2_to_y3", examples(1.0)),
         "to be DT_STRING"),  # x2 is a float input
    ]
    for call, fragment in cases:
        code, details = grpc_error(call)
        assert code == invalid and fragment in details, details
    wrong = examples()
    wrong.example_list.examples.add().features.feature["x"].int64_list.value.append(1)
    code, details = grpc_error(lambda: regress(predictions, "half_plus_two", "regress_x_to_y",
                                               wrong))  # the graph's parse_example refuses it
    assert code == invalid and "x" in details, details
    code, _ = grpc_error(lambda: regress(predictions, "nope", "regress_x_to_y", examples(1.0)))
    assert code == grpc.StatusCode.NOT_FOUND
    # still serving
    assert regress(predictions, "half_plus_two", "regress_x_to_y", examples(0.0)
                   ).result.regressions[0].value == 2.0


def multi(tasks, request_input):
    request = inference_pb2.MultiInferenceRequest(input=request_input)
    for model, signature, method in tasks:
        task = request.tasks.add(method_name=method)
        task.model_spec.name, task.model_spec.signature_name = model, signature
    return request


def test_grpc_multi_inference(predictions):
    response = predictions.MultiInference(multi(
        [("half_plus_two", "classify_x_to_y", "tensorflow/serving/classify"),
         ("half_plus_two", "regress_x_to_y2", "tensorflow/serving/regress")],
        examples(1.0, 3.0)), timeout=30)
    first, second = response.results
    assert [[c.score for c in row.classes] for row in
            first.classification_result.classifications] == [[2.5], [3.5]]
    assert [r.value for r in second.regression_result.regressions] == [3.5, 4.5]
    assert (second.model_spec.signature_name, second.model_spec.version.value) == (
        "regress_x_to_y2", 123)
    cases = [
        ([("half_plus_two", "regress_x_to_y", "tensorflow/serving/regress"),
          ("half_plus_three", "tensorflow/serving/regress", "tensorflow/serving/regress")],
         grpc.StatusCode.INVALID_ARGUMENT, "must access the same model name"),
        ([("half_plus_two", "regress_x_to_y", "tensorflow/serving/regress")] * 2,
         grpc.StatusCode.INVALID_ARGUMENT, "Duplicate evaluation of signature: regress_x_to_y"),
        ([("half_plus_two", "", "tensorflow/serving/predict")],
         grpc.StatusCode.UNIMPLEMENTED, "Unsupported signature method_name"),
        ([("half_plus_two", "nope", "tensorflow/serving/regress")],
         grpc.StatusCode.INVALID_ARGUMENT, "Requested signature not found in model graph"),
    ]
    for tasks, code, fragment in cases:
        got, details = grpc_error(lambda tasks=tasks: predictions.MultiInference(
            multi(tasks, examples(1.0)), timeout=30))
        assert got == code and fragment in details, details


def test_rest_classify_and_regress_examples_of_the_docs(hp_server):
    body = (b'{"signature_name": "tensorflow/serving/regress", "examples": [{"x": 1.0}, '
            b'{"x": 2.0}]}')
    assert rest(hp_server, "/v1/models/half_plus_three:regress", body) == (
        200, {"results": [3.5, 4.0]})
    for model in ("half_plus_two", "half_plus_two_tf2"):
        assert rest(hp_server, f"/v1/models/{model}/versions/123:classify", {
            "signature_name": "classify_x_to_y", "examples": [{"x": 1.0}, {"x": [2.0]}]}) == (
            200, {"results": [[["", 2.5]], [["", 3.0]]]})
        assert rest(hp_server, f"/v1/models/{model}:regress", {
            "signature_name": "regress_x_to_y", "context": {"x": 4.0},
            "examples": [{}, {"x": 0.0}]}) == (200, {"results": [4.0, 2.0]})
    cases = [
        ({"signature_name": "regress_x_to_y"}, "key 'examples' is expected"),
        ({"signature_name": "regress_x_to_y", "examples": []}, "empty array"),
        ({"signature_name": "regress_x_to_y", "examples": {"x": 1.0}}, "list/array"),
        ({"signature_name": "regress_x_to_y", "examples": [{"x": [1.0, "a"]}]},
         "Unexpected element type in feature: x"),
        ({"signature_name": "regress_x_to_y", "examples": [{"x": None}]},
         "unexpected JSON type: null"),
        ({"signature_name": "regress_x_to_y", "examples": [3]}, "Example must be JSON object"),
        ({"examples": [{"x": 1.0}]}, "No regression inputs found"),
    ]
    for body, fragment in cases:
        status, doc = rest(hp_server, "/v1/models/half_plus_two:regress", body)
        assert status == 400 and fragment in doc["error"], doc
    status, doc = rest(hp_server, "/v1/models/half_plus_two:classify", b"{not json")
    assert status == 400 and "JSON Parse error" in doc["error"]


def test_classify_batched_and_counted(half_plus_base, make_model_config):
    manager = ModelManager([make_model_config("half_plus_two", half_plus_base / "half_plus_two")],
                           batching=BatchingParameters(max_batch_size=8, batch_timeout_micros=0))
    with ModelServer(manager, port=0, rest_api_port=0,
                     metrics_path="/monitoring/prometheus/metrics") as srv, \
            grpc.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        sig = manager.servable("half_plus_two").signatures["classify_x_to_y"]
        assert type(sig.runner).__name__ == "Batcher"
        response = classify(stub, "half_plus_two", "classify_x_to_y", examples(1.0, 2.0))
        assert [row.classes[0].score for row in response.result.classifications] == [2.5, 3.0]
        assert rest(srv, "/v1/models/half_plus_two:regress", {
            "signature_name": "regress_x_to_y", "examples": [{"x": 2.0}]})[1] == {
                "results": [3.0]}
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.rest_api_port}/monitoring/"
                                    "prometheus/metrics", timeout=30) as resp:
            page = resp.read().decode()
    assert ':tensorflow:serving:request_count{model_name="half_plus_two",status="OK"} 2' \
        in page
    assert 'API="Classify",entrypoint="GRPC"' in page and 'API="regress",entrypoint="REST"' \
        in page


def test_signature_method_name_check(half_plus_base, make_model_config):
    """--enable_signature_method_name_check: the TF1 export's classify signature has the
    classify method_name and passes; the TF2 export's (method "predict") is refused."""
    manager = ModelManager([make_model_config(n, half_plus_base / n)
                            for n in ("half_plus_two", "half_plus_two_tf2")])
    with ModelServer(manager, port=0, rest_api_port=0,
                     signature_method_name_check=True) as srv, \
            grpc.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        response = classify(stub, "half_plus_two", "classify_x_to_y", examples(1.0))
        assert response.result.classifications[0].classes[0].score == 2.5
        code, details = grpc_error(lambda: classify(stub, "half_plus_two_tf2",
                                                    "classify_x_to_y", examples(1.0)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details == (
            "Expected classification signature method_name to be tensorflow/serving/classify. "
            "Was: tensorflow/serving/predict")
        status, doc = rest(srv, "/v1/models/half_plus_two_tf2:regress", {
            "signature_name": "regress_x_to_y", "examples": [{"x": 1.0}]})
        assert status == 400 and doc["error"].startswith(
            "Expected regression signature method_name to be tensorflow/serving/regress")
        assert rest(srv, "/v1/models/half_plus_two:regress", {
            "signature_name": "regress_x_to_y", "examples": [{"x": 1.0}]}) == (
            200, {"results": [2.5]})


def test_function_runtime_refuses_what_its_signature_cannot_take(half_plus_base):
    """--servable_runtime=function runs the TF2 signature function, whose input signature
    ([-1, 1]) refuses a [3] tensor: INVALID_ARGUMENT with TensorFlow's message."""
    from serving.core.servable import Servable
    from serving.core.status import ServingError

    servable = Servable("h", 123, str(half_plus_base / "half_plus_two_tf2" / "00000123"),
                        runtime="function")
    try:
        sig = servable.signature("")
        np.testing.assert_array_equal(sig.run({"x": np.array([[1.0]], np.float32)})["y"],
                                      [[2.5]])
        with pytest.raises(ServingError) as info:
            sig.run({"x": np.array([1.0, 2.0, 5.0], np.float32)})
        assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "(3,)" in info.value.message
    finally:
        servable.close()
