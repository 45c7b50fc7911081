"""TensorProto <-> numpy, and checking a request's tensors against a SignatureDef.

The reference is TF Serving's ``tensorflow_serving/servables/tensorflow/predict_util.cc``
(input aliases, dtypes, ``output_filter``) and TensorFlow's ``Tensor::FromProto``
(``tensorflow/core/framework/tensor.cc``: a shape with negative sizes or ``unknown_rank``
is invalid; ``tensor_content`` must hold exactly the tensor's bytes). Every failure is
INVALID_ARGUMENT.

Memory stays proportional to the request's bytes: a tensor is built only from values the
request carries. ``Tensor::FromProto`` repeats the last value to fill a shape that holds
more elements than values were sent; here that is allowed only up to
``MAX_FILLED_ELEMENTS``, so a few bytes cannot ask for gigabytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from tensorflow.core.framework import tensor_pb2, types_pb2

from serving.core._tf import tf
from serving.core.signature import Signature
from serving.core.status import dtype_name, invalid, shape_str

#: A tensor may hold more elements than values were sent (the last value repeats, as in
#: ``Tensor::FromProto``) only up to this many elements.
MAX_FILLED_ELEMENTS = 65_536
#: TensorFlow's ``TensorShape::kMaxDimensions``.
MAX_RANK = 254

#: dtype -> the repeated field that carries its values, and values per element.
_VALUE_FIELDS = {
    types_pb2.DT_FLOAT: ("float_val", 1), types_pb2.DT_DOUBLE: ("double_val", 1),
    types_pb2.DT_INT32: ("int_val", 1), types_pb2.DT_INT16: ("int_val", 1),
    types_pb2.DT_INT8: ("int_val", 1), types_pb2.DT_UINT8: ("int_val", 1),
    types_pb2.DT_UINT16: ("int_val", 1), types_pb2.DT_INT64: ("int64_val", 1),
    types_pb2.DT_UINT32: ("uint32_val", 1), types_pb2.DT_UINT64: ("uint64_val", 1),
    types_pb2.DT_BOOL: ("bool_val", 1), types_pb2.DT_HALF: ("half_val", 1),
    types_pb2.DT_BFLOAT16: ("half_val", 1), types_pb2.DT_COMPLEX64: ("scomplex_val", 2),
    types_pb2.DT_COMPLEX128: ("dcomplex_val", 2), types_pb2.DT_STRING: ("string_val", 1),
}
#: Dtypes whose typed field converts with one ``np.array`` call.
_PLAIN = {types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_INT32, types_pb2.DT_INT16,
          types_pb2.DT_INT8, types_pb2.DT_UINT8, types_pb2.DT_UINT16, types_pb2.DT_INT64,
          types_pb2.DT_UINT32, types_pb2.DT_UINT64, types_pb2.DT_BOOL}


def proto_shape(name: str, proto: tensor_pb2.TensorProto) -> list[int]:
    """The dims of ``proto``, checked as ``TensorShape::IsValid`` does (tensor.cc)."""
    shape = proto.tensor_shape
    if shape.unknown_rank:
        raise invalid(f"input '{name}': tensor_shape has unknown_rank set"
                      + (" together with dims" if shape.dim else "")
                      + "; a request tensor needs a fully defined shape")
    dims = [d.size for d in shape.dim]
    if len(dims) > MAX_RANK:
        raise invalid(f"input '{name}': {len(dims)} dimensions, more than {MAX_RANK}")
    if dims and min(dims) < 0:
        raise invalid(f"input '{name}': negative dimension size in shape {shape_str(dims)}")
    return dims


def tensor_proto_to_array(name: str, proto: tensor_pb2.TensorProto,
                          dims: list[int] | None = None) -> np.ndarray:
    """TensorProto -> numpy (strings: an object array of ``bytes``); INVALID_ARGUMENT if
    the proto does not describe a tensor. ``dims``: ``proto_shape(name, proto)``, if the
    caller has it already."""
    if dims is None:
        dims = proto_shape(name, proto)
    n = math.prod(dims)
    dtype = proto.dtype
    field = _VALUE_FIELDS.get(dtype)
    if field is None:
        raise invalid(f"input '{name}': dtype {dtype_name(dtype)} cannot be sent in a request")
    field_name, per_element = field
    content = proto.tensor_content
    if dtype == types_pb2.DT_STRING:
        if content:
            raise invalid(f"input '{name}': a DT_STRING tensor carries its values in string_val, "
                          f"not tensor_content ({len(content)} bytes given)")
        values = proto.string_val
        count = len(values)
        _check_count(name, count, n, dims)
        arr = np.empty(n, dtype=object)
        if count == n:
            arr[:] = list(values)
        elif count:
            arr[:count] = list(values)
            arr[count:] = values[count - 1]
        else:
            arr[:] = b""
        return arr.reshape(dims)
    np_dtype = tf.as_dtype(dtype).as_numpy_dtype
    if content:
        itemsize = np.dtype(np_dtype).itemsize
        if len(content) != n * itemsize:
            raise invalid(f"input '{name}': tensor_content holds {len(content)} bytes, shape "
                          f"{shape_str(dims)} of {dtype_name(dtype)} needs {n * itemsize}")
        return np.frombuffer(content, dtype=np_dtype).reshape(dims).copy()
    values = getattr(proto, field_name)
    if len(values) % per_element:
        raise invalid(f"input '{name}': {field_name} holds an odd number of values")
    count = len(values) // per_element
    _check_count(name, count, n, dims)
    try:
        if dtype in _PLAIN:
            flat = np.array(values, dtype=np_dtype)
            if count != n:  # fewer values: the last one repeats (zeros if none)
                fill = flat[-1] if count else np.zeros((), np_dtype)
                flat = np.concatenate([flat, np.full(n - count, fill, dtype=np_dtype)])
            return flat.reshape(dims)
        return tf.make_ndarray(proto)  # half, bfloat16, complex: few values (checked above)
    except (ValueError, TypeError, OverflowError) as exc:
        raise invalid(f"input '{name}': values do not fit {dtype_name(dtype)} ({exc})") from None


def _check_count(name: str, count: int, n: int, dims: Sequence[int]) -> None:
    if count > n:
        raise invalid(f"input '{name}': {count} values for shape {shape_str(dims)} "
                      f"({n} elements)")
    if count < n and n > MAX_FILLED_ELEMENTS:
        raise invalid(f"input '{name}': {count} values for shape {shape_str(dims)} "
                      f"({n} elements); send one value per element")


# Typed value fields, as tensorflow_model_server fills Predict outputs (``AsProtoField``):
# clients that read ``float_val`` directly work against both servers.
_OUTPUT_FIELD = {np.dtype(k): v for k, v in (
    (np.float32, "float_val"), (np.float64, "double_val"), (np.int32, "int_val"),
    (np.int16, "int_val"), (np.int8, "int_val"), (np.uint8, "int_val"),
    (np.uint16, "int_val"), (np.int64, "int64_val"), (np.uint32, "uint32_val"),
    (np.uint64, "uint64_val"), (np.bool_, "bool_val"))}


def array_to_tensor_proto(arr: np.ndarray,
                          proto: tensor_pb2.TensorProto | None = None) -> tensor_pb2.TensorProto:
    """numpy -> TensorProto (written into ``proto`` if given, e.g. a response field)."""
    if proto is None:
        proto = tensor_pb2.TensorProto()
    if arr.dtype == object or arr.dtype.kind in "SU":
        proto.dtype = types_pb2.DT_STRING
        values = arr.ravel().tolist()
        if arr.dtype.kind == "U":
            values = [v.encode("utf-8") for v in values]
        proto.string_val.extend(values)
    else:
        field = _OUTPUT_FIELD.get(arr.dtype)
        if field is None:  # complex, half and other rare dtypes
            proto.CopyFrom(tf.make_tensor_proto(arr))
            return proto
        proto.dtype = tf.as_dtype(arr.dtype).as_datatype_enum
        getattr(proto, field).extend(arr.ravel().tolist())
    dims = proto.tensor_shape.dim
    for d in arr.shape:
        dims.add(size=d)
    return proto


def dtype_enum(arr: np.ndarray) -> int:
    if arr.dtype == object or arr.dtype.kind in "SU":
        return types_pb2.DT_STRING
    return tf.as_dtype(arr.dtype).as_datatype_enum


def validate_inputs(model: str, sig: Signature, names: Iterable[str],
                    dtypes: Mapping[str, int]) -> None:
    """Checks input names and dtypes against the SignatureDef (INVALID_ARGUMENT), as
    ``PreProcessPrediction`` in predict_util.cc does, before any value is decoded.

    Shapes are not checked: as ``tensorflow_model_server``, the tensors go to the graph as
    sent, and a shape the graph cannot run fails there (the runtime's INVALID_ARGUMENT).
    TF Serving's own ``half_plus_two`` (input ``x`` of shape [-1, 1]) answers a tensor of
    shape [3] this way."""
    names = set(names)
    extra = sorted(names - set(sig.inputs))
    missing = sorted(set(sig.inputs) - names)
    if extra or missing:
        parts = []
        if extra:
            parts.append(f"unexpected input(s) {extra}")
        if missing:
            parts.append(f"missing input(s) {missing}")
        raise invalid(f"Request inputs do not match signature '{sig.name}' of model "
                      f"'{model}': {'; '.join(parts)}. Expected inputs: {sig.expected_inputs()}")
    for name, spec in sig.inputs.items():
        dtype = dtypes.get(name)
        if dtype is not None and dtype != spec.dtype:
            raise invalid(f"input '{name}': expected dtype {dtype_name(spec.dtype)}, got "
                          f"{dtype_name(dtype)}. Expected inputs: {sig.expected_inputs()}")


def check_output_filter(sig: Signature, output_filter: Iterable[str]) -> list[str]:
    """The outputs to return: all, or ``output_filter`` (predict_util.cc: an unknown alias
    and a repeated one are INVALID_ARGUMENT)."""
    names = list(output_filter)
    if not names:
        return list(sig.outputs)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise invalid(f"duplicate output tensor alias '{name}' in output_filter")
        seen.add(name)
    unknown = sorted(seen - set(sig.outputs))
    if unknown:
        raise invalid(f"output tensor alias(es) {unknown} not found in signature "
                      f"'{sig.name}'. Outputs expected to be in the set {sorted(sig.outputs)}")
    return names


def check_batch(sig: Signature, arrays: Mapping[str, np.ndarray]) -> None:
    """Inputs of a signature whose every tensor has a leading batch dimension must agree
    on its size (otherwise the graph fails somewhere inside, with a less clear message)."""
    if len(arrays) < 2 or not sig.batchable:
        return
    if len({v.shape[0] if v.ndim else None for v in arrays.values()}) > 1:
        sizes = {k: (v.shape[0] if v.ndim else None) for k, v in arrays.items()}
        raise invalid(f"inputs of signature '{sig.name}' must have the same batch size "
                      f"(dim 0); got {sizes}")
