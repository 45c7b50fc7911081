"""serving.core.tensors and serving.core.json_tensor on their own: request tensors are checked
the way TensorFlow's Tensor::FromProto, TF Serving's predict_util.cc and util/json_tensor.cc
check them, and decoded into arrays whose size follows the request's bytes."""

import sys

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2, types_pb2

from serving.core import json_tensor, tensors
from serving.core.status import MAX_MESSAGE_CHARS, ServingError


def strings(values, dims=None):
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING)
    proto.string_val.extend(values)
    for d in [len(values)] if dims is None else dims:
        proto.tensor_shape.dim.add(size=d)
    return proto


def invalid(fn, *fragments):
    with pytest.raises(ServingError) as info:
        fn()
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT, info.value.message
    for fragment in fragments:
        assert fragment in info.value.message, info.value.message
    return info.value.message


# ---- TensorProto (tensorflow/core/framework/tensor.cc, Tensor::FromProto) ------------------


def test_proto_round_trip_for_every_value_field():
    for arr in (np.array([[1.5, -2.0]], np.float32), np.arange(6, dtype=np.int64).reshape(2, 3),
                np.array([True, False]), np.array([7], np.uint8), np.zeros((0, 3), np.int32),
                np.array([1 + 2j], np.complex64), np.array([0.5], np.float16)):
        proto = tensors.array_to_tensor_proto(arr)
        np.testing.assert_array_equal(tensors.tensor_proto_to_array("x", proto), arr)
        # The same values as tensor_content (tf.make_tensor_proto's encoding).
        out = tensors.tensor_proto_to_array("x", tf.make_tensor_proto(arr))
        np.testing.assert_array_equal(out, arr)
        assert out.dtype == arr.dtype and out.shape == arr.shape


def test_strings_become_object_arrays_of_bytes():
    out = tensors.tensor_proto_to_array("s", strings([b"a" * 100_000] + [b""] * 999))
    assert out.dtype == object and out.shape == (1000,) and len(out[0]) == 100_000
    # Memory follows the bytes sent: no fixed-width copy of the longest string per element.
    assert sum(sys.getsizeof(x) for x in out) < 200_000


def test_fewer_values_fill_with_the_last_one_up_to_a_bound():
    """Tensor::FromProto repeats the last value; allowed here for small tensors only."""
    np.testing.assert_array_equal(
        tensors.tensor_proto_to_array("s", strings([b"a", b"b"], [4])),
        np.array([b"a", b"b", b"b", b"b"], dtype=object))
    floats = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[2.0])
    floats.tensor_shape.dim.add(size=3)
    np.testing.assert_array_equal(tensors.tensor_proto_to_array("f", floats), [2.0, 2.0, 2.0])
    invalid(lambda: tensors.tensor_proto_to_array("s", strings([b"a"], [1 << 40])),
            "input 's'", "send one value per element")
    invalid(lambda: tensors.tensor_proto_to_array("s", strings([b"a"], [2**31, 2**31])))


def test_malformed_protos_are_invalid_argument():
    invalid(lambda: tensors.tensor_proto_to_array("s", strings([b"a", b"b"], [1])),
            "2 values for shape [1]")
    invalid(lambda: tensors.tensor_proto_to_array("s", strings([b"a"], [-1])),
            "negative dimension size")
    unknown = strings([b"a"])
    unknown.tensor_shape.unknown_rank = True
    invalid(lambda: tensors.tensor_proto_to_array("s", unknown),
            "unknown_rank set together with dims")
    content = strings([b"a"])
    content.tensor_content = b"\x01\x02"
    invalid(lambda: tensors.tensor_proto_to_array("s", content), "not tensor_content")
    short = tf.make_tensor_proto(np.zeros(4, np.float32))
    short.tensor_content = short.tensor_content[:-1]
    invalid(lambda: tensors.tensor_proto_to_array("f", short), "holds 15 bytes", "needs 16")
    for dtype in (types_pb2.DT_INVALID, types_pb2.DT_RESOURCE, types_pb2.DT_VARIANT, 999):
        invalid(lambda dtype=dtype: tensors.tensor_proto_to_array(
            "x", tensor_pb2.TensorProto(dtype=dtype)), "cannot be sent in a request")


def test_output_filter_duplicates_and_unknown_names():
    """predict_util.cc: a repeated or unknown output alias is INVALID_ARGUMENT."""
    class Sig:
        name = "serving_default"
        outputs = {"answer": None, "scores": None}

    assert tensors.check_output_filter(Sig, []) == ["answer", "scores"]
    assert tensors.check_output_filter(Sig, ["scores"]) == ["scores"]
    invalid(lambda: tensors.check_output_filter(Sig, ["answer", "answer"]),
            "duplicate output tensor alias 'answer'")
    invalid(lambda: tensors.check_output_filter(Sig, ["answer", "nope"]), "['nope']")


def test_messages_are_clipped_for_grpc_trailers():
    message = invalid(lambda: tensors.tensor_proto_to_array("x" * 10_000, strings([b"a"], [-1])))
    assert len(message) < MAX_MESSAGE_CHARS + 100


# ---- JSON (tensorflow_serving/util/json_tensor.cc) ----------------------------------------


def test_json_strings_numbers_and_b64():
    out = json_tensor.json_to_array(["ab", {"b64": "AP8="}, "ü"], types_pb2.DT_STRING, "s")
    assert out.dtype == object and out.tolist() == [b"ab", b"\x00\xff", "ü".encode()]
    np.testing.assert_array_equal(
        json_tensor.json_to_array([[1, 2.5]], types_pb2.DT_FLOAT, "f"), [[1.0, 2.5]])
    assert json_tensor.json_to_array(7, types_pb2.DT_INT32, "i").shape == ()
    assert json_tensor.json_to_array([], types_pb2.DT_STRING, "s").shape == (0,)
    assert json_tensor.json_to_array([True], types_pb2.DT_BOOL, "b").tolist() == [True]


def test_json_type_errors_are_not_coerced():
    """json_tensor.cc: a number or boolean is not a string, a float is not an int."""
    for value in (3.5, True, None, {"a": 1}):
        invalid(lambda value=value: json_tensor.json_to_array(["x", value],
                                                              types_pb2.DT_STRING, "s"),
                "is not of expected type string")
    invalid(lambda: json_tensor.json_to_array([1.5], types_pb2.DT_INT32, "i"), "an integer")
    invalid(lambda: json_tensor.json_to_array([2**31], types_pb2.DT_INT32, "i"), "out of range")
    invalid(lambda: json_tensor.json_to_array([True], types_pb2.DT_FLOAT, "f"), "a number")
    invalid(lambda: json_tensor.json_to_array(["1"], types_pb2.DT_FLOAT, "f"), "a number")
    invalid(lambda: json_tensor.json_to_array([1e300], types_pb2.DT_FLOAT, "f"), "out of range")
    invalid(lambda: json_tensor.json_to_array([1], types_pb2.DT_BOOL, "b"), "boolean")
    invalid(lambda: json_tensor.json_to_array(["\ud800"], types_pb2.DT_STRING, "s"),
            "lone surrogate")
    invalid(lambda: json_tensor.json_to_array([{"b64": "%%"}], types_pb2.DT_STRING, "s"),
            "invalid base64")


def test_json_shapes_ragged_and_deep():
    shape, leaves = json_tensor.shape_and_leaves([[1, 2], [3, 4], [5, 6]], "x")
    assert shape == [3, 2] and leaves == [1, 2, 3, 4, 5, 6]
    for ragged in ([[1], [2, 3]], [1, [2]], [[1], 2], [[[]], []]):
        invalid(lambda ragged=ragged: json_tensor.shape_and_leaves(ragged, "x"), "rectangular")
    deep = "x"
    for _ in range(300):
        deep = [deep]
    invalid(lambda: json_tensor.shape_and_leaves(deep, "x"), "more than 254 lists deep")
    invalid(lambda: json_tensor.parse_json(b"[" * 100_000 + b"]" * 100_000), "JSON Parse error")
    invalid(lambda: json_tensor.parse_json(b'{"a": "\xff"}'), "JSON Parse error")


def test_request_top_level():
    assert json_tensor.signature_name({"instances": []}) == ""
    for doc, fragment in [([], "must be an object"), ({}, "exactly one of"),
                          ({"instances": [], "inputs": {}}, "exactly one of"),
                          ({"instances": [], "signature_name": ["a"]}, "must be a string"),
                          ({"inputs": {}, "signature_name": {"a": 1}}, "must be a string")]:
        invalid(lambda doc=doc: json_tensor.signature_name(doc), fragment)
    columns, batch = json_tensor.columns_for(
        {"instances": [{"a": "x", "b": "y"}, {"a": "z", "b": "w"}]}, ["a", "b"])
    assert columns == {"a": ["x", "z"], "b": ["y", "w"]} and batch == 2
    assert json_tensor.columns_for({"instances": ["x"]}, ["a"]) == ({"a": ["x"]}, 1)
    assert json_tensor.columns_for({"inputs": {"b64": "AA=="}}, ["a"]) == (
        {"a": {"b64": "AA=="}}, None)
    invalid(lambda: json_tensor.columns_for({"instances": [{"a": 1}, 2]}, ["a", "b"]),
            "must all be objects")
    invalid(lambda: json_tensor.columns_for({"instances": [{"a": 1}, {"b": 2}]}, ["a", "b"]),
            "every instance needs the same inputs")
