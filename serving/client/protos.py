"""TF Serving's Predict messages without TensorFlow: ``python -m serving.client`` starts fast.

``tensorflow_serving.apis.predict_pb2`` imports ``tensorflow.core.framework.tensor_pb2``,
and importing anything under ``tensorflow`` runs TensorFlow's package ``__init__``
(slow). The client only needs the wire format, so this module declares the few
messages it sends and reads, with the field numbers of ``tensorflow/core/framework/
tensor.proto``, ``tensor_shape.proto`` and ``tensorflow_serving/apis/{model,predict,
get_model_status}.proto``, in a descriptor pool of its own (nothing clashes with the real
definitions when TensorFlow is loaded too). Fields the client never uses are left out;
protobuf skips them when parsing. ``tests/serving/test_protos.py`` checks the bytes against
the official classes.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_STRING", "DT_INT64", "DT_BOOL",
           "ModelSpec", "PredictRequest", "PredictResponse", "TensorProto", "PREDICT_METHOD",
           "GetModelStatusRequest", "GetModelStatusResponse", "MODEL_STATUS_METHOD",
           "LOADING_STATES"]

#: ``tensorflow.DataType`` values used here.
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64, DT_BOOL = 1, 2, 3, 7, 9, 10
PREDICT_METHOD = "/tensorflow.serving.PredictionService/Predict"
MODEL_STATUS_METHOD = "/tensorflow.serving.ModelService/GetModelStatus"
#: ``ModelVersionStatus.State`` values of a version on its way to AVAILABLE (START, LOADING).
LOADING_STATES = {10: "START", 20: "LOADING"}

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tpr_keras_light"


def _field(message, name, number, kind, label=_F.LABEL_OPTIONAL, type_name=None):
    field = message.field.add(name=name, number=number, type=kind, label=label)
    if type_name:
        field.type_name = f".{_PACKAGE}.{type_name}"
    return field


def _map_entry(message, name, value_type):
    entry = message.nested_type.add(name=name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    return f"{message.name}.{name}"


def _build():
    file = descriptor_pb2.FileDescriptorProto(name="tpr_keras_light_predict.proto",
                                              package=_PACKAGE, syntax="proto3")
    rep = _F.LABEL_REPEATED

    dim = file.message_type.add(name="Dim")  # TensorShapeProto.Dim
    _field(dim, "size", 1, _F.TYPE_INT64)
    _field(dim, "name", 2, _F.TYPE_STRING)
    shape = file.message_type.add(name="TensorShapeProto")
    _field(shape, "dim", 2, _F.TYPE_MESSAGE, rep, "Dim")
    _field(shape, "unknown_rank", 3, _F.TYPE_BOOL)

    tensor = file.message_type.add(name="TensorProto")
    _field(tensor, "dtype", 1, _F.TYPE_INT32)  # an enum on the wire is a varint too
    _field(tensor, "tensor_shape", 2, _F.TYPE_MESSAGE, type_name="TensorShapeProto")
    _field(tensor, "version_number", 3, _F.TYPE_INT32)
    _field(tensor, "tensor_content", 4, _F.TYPE_BYTES)
    _field(tensor, "float_val", 5, _F.TYPE_FLOAT, rep)
    _field(tensor, "double_val", 6, _F.TYPE_DOUBLE, rep)
    _field(tensor, "int_val", 7, _F.TYPE_INT32, rep)
    _field(tensor, "string_val", 8, _F.TYPE_BYTES, rep)
    _field(tensor, "int64_val", 10, _F.TYPE_INT64, rep)
    _field(tensor, "bool_val", 11, _F.TYPE_BOOL, rep)

    int64_value = file.message_type.add(name="Int64Value")  # google.protobuf.Int64Value
    _field(int64_value, "value", 1, _F.TYPE_INT64)
    spec = file.message_type.add(name="ModelSpec")
    _field(spec, "name", 1, _F.TYPE_STRING)
    _field(spec, "version", 2, _F.TYPE_MESSAGE, type_name="Int64Value")
    _field(spec, "signature_name", 3, _F.TYPE_STRING)
    _field(spec, "version_label", 4, _F.TYPE_STRING)

    request = file.message_type.add(name="PredictRequest")
    _field(request, "model_spec", 1, _F.TYPE_MESSAGE, type_name="ModelSpec")
    entry = _map_entry(request, "InputsEntry", "TensorProto")
    _field(request, "inputs", 2, _F.TYPE_MESSAGE, rep, entry)
    _field(request, "output_filter", 3, _F.TYPE_STRING, rep)

    response = file.message_type.add(name="PredictResponse")
    entry = _map_entry(response, "OutputsEntry", "TensorProto")
    _field(response, "outputs", 1, _F.TYPE_MESSAGE, rep, entry)
    _field(response, "model_spec", 2, _F.TYPE_MESSAGE, type_name="ModelSpec")

    # get_model_status.proto (the client reads a version's state only; StatusProto skipped)
    status_request = file.message_type.add(name="GetModelStatusRequest")
    _field(status_request, "model_spec", 1, _F.TYPE_MESSAGE, type_name="ModelSpec")
    version_status = file.message_type.add(name="ModelVersionStatus")
    _field(version_status, "version", 1, _F.TYPE_INT64)
    _field(version_status, "state", 2, _F.TYPE_INT32)  # enum State, a varint on the wire
    status_response = file.message_type.add(name="GetModelStatusResponse")
    _field(status_response, "model_version_status", 1, _F.TYPE_MESSAGE, rep,
           "ModelVersionStatus")

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file.SerializeToString())
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{_PACKAGE}.{name}")) for name in ("TensorProto", "ModelSpec", "PredictRequest",
                                             "PredictResponse", "GetModelStatusRequest",
                                             "GetModelStatusResponse")}


_CLASSES = _build()
TensorProto = _CLASSES["TensorProto"]
ModelSpec = _CLASSES["ModelSpec"]
PredictRequest = _CLASSES["PredictRequest"]
PredictResponse = _CLASSES["PredictResponse"]
GetModelStatusRequest = _CLASSES["GetModelStatusRequest"]
GetModelStatusResponse = _CLASSES["GetModelStatusResponse"]
