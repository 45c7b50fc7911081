"""serving.client.protos: the client's TensorFlow-free Predict messages equal the official ones
on the wire."""

import subprocess
import sys

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2, predict_pb2

from serving.client import protos


def test_request_bytes_parse_as_the_official_request():
    light = protos.PredictRequest()
    light.model_spec.name = "babi"
    light.model_spec.signature_name = "serving_default"
    light.model_spec.version.value = 7
    for name, values in {"story": ["Mary went to the kitchen.", "ü"],
                         "question": ["Where is Mary?", "?"]}.items():
        tensor = light.inputs[name]
        tensor.dtype = protos.DT_STRING
        tensor.tensor_shape.dim.add(size=len(values))
        tensor.string_val.extend(v.encode() for v in values)
    light.output_filter.append("answer")

    official = predict_pb2.PredictRequest.FromString(light.SerializeToString())
    assert official.model_spec.name == "babi" and official.model_spec.version.value == 7
    assert official.model_spec.signature_name == "serving_default"
    assert list(official.output_filter) == ["answer"]
    story = tf.make_ndarray(official.inputs["story"])
    assert story.dtype == object and story.tolist() == ["Mary went to the kitchen.".encode(),
                                                        "ü".encode()]
    assert tf.make_ndarray(official.inputs["question"]).shape == (2,)
    # and the other way round: the same bytes
    assert official.SerializeToString(deterministic=True) == light.SerializeToString(
        deterministic=True)


def test_official_response_parses_with_every_value_field():
    official = predict_pb2.PredictResponse()
    official.model_spec.name = "babi"
    official.model_spec.version.value = 3
    official.outputs["answer"].CopyFrom(tf.make_tensor_proto(np.array([b"office"], object)))
    official.outputs["scores"].CopyFrom(tf.make_tensor_proto(np.array([[0.75, 0.25]], np.float32)))
    official.outputs["unknown_words"].dtype = tf.int32.as_datatype_enum
    official.outputs["unknown_words"].tensor_shape.dim.add(size=2)
    official.outputs["unknown_words"].int_val.extend([0, 4])
    light = protos.PredictResponse.FromString(official.SerializeToString())
    assert light.model_spec.version.value == 3
    assert list(light.outputs["answer"].string_val) == [b"office"]
    assert [d.size for d in light.outputs["scores"].tensor_shape.dim] == [1, 2]
    scores = light.outputs["scores"]
    values = (np.frombuffer(scores.tensor_content, np.float32).tolist() if scores.tensor_content
              else list(scores.float_val))
    assert values == [0.75, 0.25]
    assert list(light.outputs["unknown_words"].int_val) == [0, 4]
    assert light.outputs["unknown_words"].dtype == protos.DT_INT32


def test_model_status_messages_match_the_official_ones():
    """What the client's wait asks (GetModelStatus) and reads (each version's state)."""
    light = protos.GetModelStatusRequest()
    light.model_spec.name = "babi"
    official = get_model_status_pb2.GetModelStatusRequest.FromString(light.SerializeToString())
    assert official.model_spec.name == "babi"
    response = get_model_status_pb2.GetModelStatusResponse()
    state = get_model_status_pb2.ModelVersionStatus.State
    response.model_version_status.add(version=3, state=state.LOADING).status.error_message = "x"
    response.model_version_status.add(version=2, state=state.AVAILABLE)
    read = protos.GetModelStatusResponse.FromString(response.SerializeToString())
    assert [(s.version, protos.LOADING_STATES.get(s.state)) for s in
            read.model_version_status] == [(3, "LOADING"), (2, None)]
    assert protos.LOADING_STATES == {state.START: "START", state.LOADING: "LOADING"}


def test_the_client_module_does_not_import_tensorflow():
    code = ("import sys; from serving import client; from serving.client import protos; "
            "c = client.BabiClient('localhost:1'); c.close(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'tensorflow_serving', 'keras')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
