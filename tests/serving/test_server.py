"""serving.server end to end over loopback with the official tensorflow-serving-api stubs.

Versions and model configs are in test_server_versions.py, batching in
test_server_batching.py."""

import json
import os
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
)

from serving.client import BabiClient
from serving.core.manager import ModelManager
from tests.serving.server_requests import (
    AVAILABLE,
    answers,
    assert_status,
    model_config,
    request,
    scores,
    string_tensor,
)


# --------------------------------------------------------------------------------------
# Predict, metadata, status
# --------------------------------------------------------------------------------------


def test_predict_real_test_stories_equal_in_process_model(stub, task1, keras_answers):
    want, logits = keras_answers
    probs = tf.nn.softmax(logits).numpy()
    n = min(300, len(task1.samples))
    response = stub.Predict(request(task1.stories[:n], task1.questions[:n]), timeout=60)
    assert answers(response) == list(want[:n])
    np.testing.assert_allclose(scores(response)[:, 0], probs[:n].max(-1), rtol=1e-4, atol=1e-6)
    assert response.model_spec.version.value == 1
    assert response.model_spec.signature_name == "serving_default"
    for i in range(0, n, 37):  # one at a time: same answers as in the batch
        single = stub.Predict(request([task1.stories[i]], [task1.questions[i]]), timeout=30)
        assert answers(single) == [want[i]]
        candidates = [c.decode() for c in single.outputs["candidates"].string_val]
        order = np.argsort(-logits[i], kind="stable")[:5]
        assert candidates == [task1.vocab.tokens[j] for j in order]


def test_output_filter_and_explicit_version(stub, task1):
    req = request(task1.stories[:2], task1.questions[:2], version=1,
                  signature="serving_default")
    req.output_filter.append("answer")
    response = stub.Predict(req, timeout=30)
    assert list(response.outputs) == ["answer"]
    req.output_filter.append("logits")
    assert_status(lambda: stub.Predict(req, timeout=30), grpc.StatusCode.INVALID_ARGUMENT,
                  "'logits'", "answer", "candidates", "scores")


def test_tokenize_signature_is_served(stub, task1):
    response = stub.Predict(request(task1.stories[:3], task1.questions[:3],
                                    signature="tokenize"), timeout=30)
    np.testing.assert_array_equal(tf.make_ndarray(response.outputs["story_ids"]),
                                  task1.story_ids(range(3)))


def test_get_model_metadata(stub):
    req = get_model_metadata_pb2.GetModelMetadataRequest()
    req.model_spec.name = "babi"
    req.metadata_field.append("signature_def")
    response = stub.GetModelMetadata(req, timeout=30)
    sigs = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(sigs)
    sig = sigs.signature_def["serving_default"]
    assert sorted(sig.inputs) == ["question", "story"]
    assert sig.outputs["scores"].dtype == tf.float32.as_datatype_enum
    assert response.model_spec.version.value == 1
    req.ClearField("metadata_field")
    assert_status(lambda: stub.GetModelMetadata(req, timeout=30),
                  grpc.StatusCode.INVALID_ARGUMENT, "metadata_field")


def test_get_model_status(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        req = get_model_status_pb2.GetModelStatusRequest()
        req.model_spec.name = "babi"
        (status,) = models.GetModelStatus(req, timeout=30).model_version_status
        assert (status.version, status.state, status.status.error_code) == (1, AVAILABLE, 0)
        req.model_spec.version.value = 5
        assert_status(lambda: models.GetModelStatus(req, timeout=30), grpc.StatusCode.NOT_FOUND,
                      "version 5")
        req.model_spec.name = "nope"
        assert_status(lambda: models.GetModelStatus(req, timeout=30), grpc.StatusCode.NOT_FOUND)


def test_client_api_grpc_and_rest(server, task1, keras_answers):
    want = keras_answers[0]
    with BabiClient(f"localhost:{server.port}", "babi") as client:
        reply = client.ask(task1.stories[0], task1.questions[0])
        assert reply.answer == want[0] and reply.version == 1
        assert len(reply.candidates) == 5 and reply.candidates[0][0] == want[0]
        assert [r.answer for r in client.ask_batch(task1.stories[:4], task1.questions[:4])] \
            == list(want[:4])
    rest = BabiClient(f"127.0.0.1:{server.rest_api_port}", "babi", rest=True)
    reply_rest = rest.ask(task1.stories[0], task1.questions[0])
    assert reply_rest.answer == reply.answer
    np.testing.assert_allclose([s for _, s in reply_rest.candidates],
                               [s for _, s in reply.candidates], rtol=1e-6)


# --------------------------------------------------------------------------------------
# Bad input: the right status, a clear message, and the server keeps serving
# --------------------------------------------------------------------------------------


def test_edge_inputs_that_are_answered(stub, task1):
    cases = {
        "empty strings": request([""], [""]),
        "non-UTF-8": request([b"Mary \xff\xfe went to the \xc3kitchen."], [b"where \x80 is?"]),
        "batch of 0": request([], []),
    }
    for name, req in cases.items():
        response = stub.Predict(req, timeout=30)
        n = req.inputs["story"].tensor_shape.dim[0].size
        assert len(answers(response)) == n, name
        assert scores(response).shape == (n, 5), name
    thousand = stub.Predict(request(task1.stories[:10] * 100, task1.questions[:10] * 100),
                            timeout=120)
    assert answers(thousand) == answers(stub.Predict(
        request(task1.stories[:10], task1.questions[:10]), timeout=30)) * 100


def test_story_of_10000_sentences_keeps_the_last_70(stub, task1):
    sentences = [" ".join(s) for s in task1.samples[0].story] or ["mary went to the office ."]
    long_story = "\n".join(sentences[i % len(sentences)] for i in range(10_000))
    tail = "\n".join(long_story.split("\n")[-70:])
    question = task1.questions[0]
    long_reply = stub.Predict(request([long_story], [question]), timeout=120)
    tail_reply = stub.Predict(request([tail], [question]), timeout=30)
    assert answers(long_reply) == answers(tail_reply)
    np.testing.assert_allclose(scores(long_reply), scores(tail_reply), rtol=1e-5)


def test_invalid_requests(stub, task1):
    story, question = task1.stories[:2], task1.questions[:2]
    ints = tf.make_tensor_proto(np.zeros((2,), np.int32))
    rank2 = tf.make_tensor_proto(np.array([[b"a"], [b"b"]], dtype=object), dtype=tf.string)
    bad_count = string_tensor(story)
    bad_count.tensor_shape.dim[0].size = 1  # says 1 string, holds 2
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    cases = [
        ("missing input", request(story, None), invalid,
         ["missing input(s) ['question']", "Expected inputs: question (DT_STRING [-1])"]),
        ("extra input", request(story, question, extra=ints), invalid,
         ["unexpected input(s) ['extra']", "story (DT_STRING [-1])"]),
        ("wrong dtype", request(None, question, story=ints), invalid,
         ["input 'story': expected dtype DT_STRING, got DT_INT32"]),
        # Not checked against the signature (TF Serving feeds it): the graph's own error.
        ("wrong rank", request(None, question, story=rank2), invalid,
         ["must be a vector, got shape: [2,1]"]),
        ("malformed tensor", request(None, question, story=bad_count), invalid,
         ["input 'story': 2 values for shape [1]"]),
        ("batch mismatch", request(story, question[:1]), invalid, []),
        ("unknown model", request(story, question, name="nope"), grpc.StatusCode.NOT_FOUND,
         ["'nope'", "babi"]),
        ("unknown version", request(story, question, version=42), grpc.StatusCode.NOT_FOUND,
         ["Specific(babi, 42)", "loaded versions: [1]"]),
        ("unknown signature", request(story, question, signature="classify_me"),
         grpc.StatusCode.FAILED_PRECONDITION, ['"classify_me"', "serving_default"]),
    ]
    for name, req, code, fragments in cases:
        details = assert_status(lambda req=req: stub.Predict(req, timeout=30), code, *fragments)
        assert details, name
    # Classify is served (tests/serving/test_tf_serving_contract.py): an empty request
    # names no model.
    assert_status(lambda: stub.Classify(classification_pb2.ClassificationRequest(), timeout=30),
                  grpc.StatusCode.NOT_FOUND, "model '' is not served")
    # Still serving.
    assert len(answers(stub.Predict(request(story, question), timeout=30))) == 2


def test_garbage_bytes_on_the_wire(server, stub, task1):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        raw = channel.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                  request_serializer=None, response_deserializer=None)
        for garbage in (b"\xff" * 64, b"\x0a\x05abc", os.urandom(4096) + b"\xff\xff\xff\xff"):
            with pytest.raises(grpc.RpcError) as info:
                raw(garbage, timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "Could not parse the request bytes as a PredictRequest" in \
                info.value.details()
    assert len(answers(stub.Predict(request(task1.stories[:1], task1.questions[:1]),
                                    timeout=30))) == 1


# --------------------------------------------------------------------------------------
# REST
# --------------------------------------------------------------------------------------


def http(server, method, path, body=None):
    url = f"http://127.0.0.1:{server.rest_api_port}{path}"
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_rest_status_metadata_predict(server, task1, keras_answers):
    want = keras_answers[0]
    assert http(server, "GET", "/v1/models/babi") == (200, {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK",
                                                          "error_message": ""}}]})
    assert http(server, "GET", "/v1/models/babi/versions/1")[0] == 200
    status, meta = http(server, "GET", "/v1/models/babi/metadata")
    assert status == 200 and meta["model_spec"] == {"name": "babi", "signature_name": "",
                                                    "version": "1"}
    sig = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["story"]["dtype"] == "DT_STRING"

    instances = [{"story": s, "question": q} for s, q in zip(task1.stories[:3],
                                                             task1.questions[:3])]
    status, doc = http(server, "POST", "/v1/models/babi:predict", {"instances": instances})
    assert status == 200 and [p["answer"] for p in doc["predictions"]] == list(want[:3])
    assert len(doc["predictions"][0]["scores"]) == 5
    columnar = {"inputs": {"story": task1.stories[:3], "question": task1.questions[:3]}}
    status, doc = http(server, "POST", "/v1/models/babi/versions/1:predict", columnar)
    assert status == 200 and doc["outputs"]["answer"] == list(want[:3])
    b64 = {"instances": [{"story": {"b64": "TWFyeSB3ZW50IGhvbWUu"}, "question": "where?"}]}
    assert http(server, "POST", "/v1/models/babi:predict", b64)[0] == 200


def test_rest_errors(server):
    one = {"story": "Mary went home.", "question": "Where is Mary?"}
    cases = [
        ("GET", "/v1/models/nope", None, 404, "'nope'"),
        ("GET", "/v1/models/babi/versions/9", None, 404, "version 9"),
        ("POST", "/v1/models/babi:predict", b"{not json", 400, "JSON Parse error"),
        ("POST", "/v1/models/babi:predict", {"instances": [{"story": "x"}]}, 400,
         "missing input(s) ['question']"),
        ("POST", "/v1/models/babi:predict", {"instances": [one], "signature_name": "x"}, 400,
         '"x" not found'),
        ("POST", "/v1/models/babi:predict", {"inputs": {"story": [1], "question": ["q"]}}, 400,
         "input 'story'"),
        ("POST", "/v1/models/babi:predict", {"instances": [one], "inputs": {}}, 400,
         "exactly one of"),
        ("POST", "/v1/models/babi:classify", {"instances": [one]}, 400,
         "key 'examples' is expected"),
        ("GET", "/v2/whatever", None, 400, "Malformed request"),
    ]
    for method, path, body, code, fragment in cases:
        status, doc = http(server, method, path, body)
        assert (status, fragment in doc.get("error", "")) == (code, True), (path, doc)


def test_outputs_use_typed_value_fields_like_tf_serving(stub, task1):
    """tensorflow_model_server fills float_val, not tensor_content: clients that read the
    typed field directly must work against both servers."""
    response = stub.Predict(request(task1.stories[:3], task1.questions[:3]), timeout=30)
    proto = response.outputs["scores"]
    assert not proto.tensor_content
    assert [d.size for d in proto.tensor_shape.dim] == [3, 5]
    np.testing.assert_array_equal(np.array(proto.float_val, np.float32).reshape(3, 5),
                                  tf.make_ndarray(proto))
    ids = stub.Predict(request(task1.stories[:2], task1.questions[:2], signature="tokenize"),
                       timeout=30).outputs["story_ids"]
    assert not ids.tensor_content and len(ids.int_val) + len(ids.int64_val) == int(
        np.prod([d.size for d in ids.tensor_shape.dim]))


def test_session_and_function_runtimes_give_the_same_outputs(export_base, task1):
    """The default runtime (a TF1 Session fed by SignatureDef tensor names, as
    tensorflow_model_server runs models) equals tf.saved_model.load's signature function,
    also with an output filter, a single example and a batch of 0."""
    base = os.path.join(export_base, "babi")
    n = min(64, len(task1.samples))
    inputs = {"story": np.array([s.encode() for s in task1.stories[:n]], dtype=object),
              "question": np.array([q.encode() for q in task1.questions[:n]], dtype=object)}
    outputs = {}
    for runtime in ("session", "function"):
        manager = ModelManager([model_config("babi", base)], runtime=runtime)
        sig = manager.servable("babi").signature("")
        outputs[runtime] = (sig.run(inputs), sig.run({k: v[:1] for k, v in inputs.items()},
                                                     ["answer"]),
                            sig.run({k: v[:0] for k, v in inputs.items()}))
        manager.stop()
    (full_s, one_s, empty_s), (full_f, one_f, empty_f) = outputs["session"], outputs["function"]
    assert sorted(full_s) == ["answer", "candidates", "dropped_sentences", "question_words",
                              "scores", "story_sentences", "trained_story_sentences",
                              "unknown_tokens", "unknown_words"]
    for key in ("unknown_words", "unknown_tokens", "story_sentences", "dropped_sentences"):
        np.testing.assert_array_equal(full_s[key], full_f[key])
    np.testing.assert_array_equal(full_s["answer"], full_f["answer"])
    np.testing.assert_array_equal(full_s["candidates"], full_f["candidates"])
    np.testing.assert_allclose(full_s["scores"], full_f["scores"], rtol=1e-5, atol=1e-7)
    assert list(one_s) == ["answer"] and one_s["answer"].tolist() == [full_f["answer"][0]]
    assert one_f["answer"].tolist() == [full_f["answer"][0]]
    assert empty_s["scores"].shape == empty_f["scores"].shape == (0, 5)
    with pytest.raises(ValueError, match="runtime must be one of"):
        ModelManager([model_config("babi", base)], runtime="tfrt")
