"""Requests to the in-process server and checks of its replies, shared by
``tests/serving/test_server*.py``: a ModelConfig, a bAbI PredictRequest of strings, the
answers and scores of a reply, and a gRPC call expected to fail with a status and message.
"""

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2, predict_pb2
from tensorflow_serving.config import model_server_config_pb2


def model_config(name, base_path, **kwargs):
    return model_server_config_pb2.ModelConfig(name=name, base_path=str(base_path),
                                               model_platform="tensorflow", **kwargs)


def string_tensor(values):
    return tf.make_tensor_proto(np.array([v if isinstance(v, bytes) else v.encode()
                                          for v in values], dtype=object), dtype=tf.string)

AVAILABLE = get_model_status_pb2.ModelVersionStatus.AVAILABLE
END = get_model_status_pb2.ModelVersionStatus.END


def request(stories, questions, name="babi", version=None, signature="", **tensors):
    req = predict_pb2.PredictRequest()
    req.model_spec.name = name
    req.model_spec.signature_name = signature
    if version is not None:
        req.model_spec.version.value = version
    if stories is not None:
        req.inputs["story"].CopyFrom(string_tensor(stories))
    if questions is not None:
        req.inputs["question"].CopyFrom(string_tensor(questions))
    for key, value in tensors.items():
        req.inputs[key].CopyFrom(value)
    return req


def answers(response):
    return [a.decode() for a in response.outputs["answer"].string_val]


def scores(response):
    return tf.make_ndarray(response.outputs["scores"])


def assert_status(call, code, *fragments):
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code, info.value.details()
    for fragment in fragments:
        assert fragment in info.value.details(), info.value.details()
    return info.value.details()
