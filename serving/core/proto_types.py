"""Protobuf message classes declared at run time, for TF Serving config messages that the
``tensorflow-serving-api`` wheel does not ship (``BatchingParameters``, ``MonitoringConfig``,
``SSLConfig``).

Each call builds one ``.proto`` file in its own ``DescriptorPool``, so a later release that
ships the real module cannot clash with it. A field is ``(name, number, kind)`` or
``(name, number, kind, repeated)``: ``kind`` is a scalar ``FieldDescriptorProto.TYPE_*`` or,
for a message field, the message's full name with a leading dot
(``".google.protobuf.Int64Value"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

#: ``FieldDescriptorProto``: its ``TYPE_*`` constants name the scalar kinds.
FIELD = descriptor_pb2.FieldDescriptorProto

Field = tuple  # (name, number, kind[, repeated])


def message_classes(file_name: str, package: str, messages: Mapping[str, Sequence[Field]],
                    dependencies: Sequence = ()) -> dict[str, type]:
    """``{message name: class}`` for the ``messages`` of one proto3 file in ``package``;
    ``dependencies`` are the generated modules' file descriptors its fields refer to
    (``wrappers_pb2.DESCRIPTOR``)."""
    pool = descriptor_pool.DescriptorPool()
    for dependency in dependencies:
        pool.AddSerializedFile(dependency.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name=file_name, package=package, syntax="proto3",
        dependency=[d.name for d in dependencies])
    for message_name, fields in messages.items():
        message = file.message_type.add(name=message_name)
        for name, number, kind, *repeated in fields:
            field = message.field.add(name=name, number=number, label=(
                FIELD.LABEL_REPEATED if repeated and repeated[0] else FIELD.LABEL_OPTIONAL))
            if isinstance(kind, str):
                field.type, field.type_name = FIELD.TYPE_MESSAGE, kind
            else:
                field.type = kind
    pool.Add(file)
    return {name: message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{package}.{name}")) for name in messages}
