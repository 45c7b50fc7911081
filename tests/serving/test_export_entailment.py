"""The entailment SavedModel: premise/hypothesis strings in, entails/probability out."""

import os

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

from tests.serving.saved_models import load
from tpr_keras.data import entailment

PAIRS = [("(a&b)", "a"), ("a", "(a&b)"), ("(p>q)", "(~q>~p)"), ("", ""), ("( a | b )", "(b|a)"),
         ("(x&Q!)", "x")]


@pytest.fixture(scope="module")
def exported(entailment_export):
    """The untrained entailment model and its export (tests/serving/conftest.py)."""
    return entailment_export


def keras_probability(model, pairs):
    def ids(texts):
        rows = [entailment.tokenize(t) for t in texts]
        width = max(1, max(len(r) for r in rows))
        return np.array([list(r) + [0] * (width - len(r)) for r in rows], "int32")

    logits = model({"a": ids([p for p, _ in pairs]), "b": ids([h for _, h in pairs])})
    return tf.sigmoid(tf.reshape(logits, [-1])).numpy()


def test_signature_equals_keras_and_loads_in_tf1(exported):
    model, path = exported
    assert path.endswith(os.path.join("entailment", "1"))
    out = load(path).signatures["serving_default"](
        premise=tf.constant([p for p, _ in PAIRS]), hypothesis=tf.constant([h for _, h in PAIRS]))
    expected = keras_probability(model, PAIRS)
    np.testing.assert_allclose(out["probability"].numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out["entails"].numpy(), expected > 0.5)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
        sig = meta.signature_def["serving_default"]
        probability = session.run(sig.outputs["probability"].name, {
            sig.inputs["premise"].name: [p for p, _ in PAIRS],
            sig.inputs["hypothesis"].name: [h for _, h in PAIRS]})
    np.testing.assert_allclose(probability, expected, rtol=1e-5, atol=1e-6)


def test_served_and_asked_with_the_client(exported):
    from serving.client import EntailmentClient
    from serving.core.manager import ModelManager
    from serving.model_server.server import ModelServer
    from tensorflow_serving.config import model_server_config_pb2

    model, path = exported
    config = model_server_config_pb2.ModelConfig(
        name="entailment", base_path=os.path.dirname(path), model_platform="tensorflow")
    server = ModelServer(ModelManager([config]), port=0, rest_api_port=0).start()
    try:
        expected = keras_probability(model, PAIRS[:3])
        with EntailmentClient(f"127.0.0.1:{server.port}") as client:
            replies = client.entails_batch([p for p, _ in PAIRS[:3]], [h for _, h in PAIRS[:3]])
        np.testing.assert_allclose([r.probability for r in replies], expected, rtol=1e-5)
        assert [r.entails for r in replies] == list(expected > 0.5)
        rest = EntailmentClient(f"127.0.0.1:{server.rest_api_port}", rest=True)
        assert rest.entails(*PAIRS[0]).probability == pytest.approx(expected[0], rel=1e-5)
        # A stock Classify client (official stubs, tf.Example): entails / does not entail
        request = classification_pb2.ClassificationRequest()
        request.model_spec.name, request.model_spec.signature_name = "entailment", "classify"
        for premise, hypothesis in PAIRS[:3]:
            features = request.input.example_list.examples.add().features.feature
            features["premise"].bytes_list.value.append(premise.encode())
            features["hypothesis"].bytes_list.value.append(hypothesis.encode())
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Classify(
                request, timeout=60)
        rows = response.result.classifications
        assert [[c.label for c in row.classes] for row in rows] == [
            ["entails", "does not entail"]] * 3
        np.testing.assert_allclose([[c.score for c in row.classes] for row in rows],
                                   np.stack([expected, 1 - expected], axis=1), rtol=1e-5,
                                   atol=1e-6)
    finally:
        server.stop(grace=2)


def test_export_carries_a_warm_up_request_the_signature_accepts(exported):
    from tensorflow_serving.apis import prediction_log_pb2

    _, path = exported
    records = list(tf.data.TFRecordDataset(
        os.path.join(path, "assets.extra", "tf_serving_warmup_requests")))
    assert len(records) == 1
    request = prediction_log_pb2.PredictionLog.FromString(records[0].numpy()).predict_log.request
    assert set(request.inputs) == {"premise", "hypothesis"}
    inputs = {k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()}
    out = load(path).signatures["serving_default"](**inputs)
    assert out["probability"].shape == (1,)
