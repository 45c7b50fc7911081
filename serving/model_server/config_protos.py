"""TF Serving's ``MonitoringConfig`` and ``SSLConfig`` messages, and reading text-proto
config files with one start-up error that names the file and the field.

``tensorflow-serving-api`` 2.21 ships ``model_server_config_pb2`` but not
``monitoring_config_pb2`` or ``ssl_config_pb2``, so the two messages are declared here
with the same package, names, field numbers and types as
``tensorflow_serving/config/monitoring_config.proto`` and ``ssl_config.proto``, in a
private descriptor pool (no clash should a later release ship them).
"""

from __future__ import annotations

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_format,
)

_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="tpr_keras/serving_configs.proto",
                                           package="tensorflow.serving", syntax="proto3")

    def message(name: str, *fields: tuple[str, int, int, str]) -> None:
        m = f.message_type.add(name=name)
        for field, number, kind, type_name in fields:
            fd = m.field.add(name=field, number=number, type=kind, label=_F.LABEL_OPTIONAL)
            if type_name:
                fd.type_name = type_name

    message("PrometheusConfig", ("enable", 1, _F.TYPE_BOOL, ""),
            ("path", 2, _F.TYPE_STRING, ""))
    message("MonitoringConfig",
            ("prometheus_config", 1, _F.TYPE_MESSAGE, ".tensorflow.serving.PrometheusConfig"))
    message("SSLConfig", ("server_key", 1, _F.TYPE_STRING, ""),
            ("server_cert", 2, _F.TYPE_STRING, ""), ("custom_ca", 3, _F.TYPE_STRING, ""),
            ("client_verify", 4, _F.TYPE_BOOL, ""))
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
MonitoringConfig = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("tensorflow.serving.MonitoringConfig"))
SSLConfig = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("tensorflow.serving.SSLConfig"))


class ConfigError(ValueError):
    """A config file the server cannot start with; the message names the file (and the
    field, where one is at fault)."""


def read_text_proto(path: str, message_class, flag: str):
    """The text proto in ``path`` as a ``message_class``; :class:`ConfigError` naming
    ``flag``, the file and the parser's line/field if it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--{flag}={path}: cannot read the file: {exc}") from None
    message = message_class()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise ConfigError(f"--{flag}={path}: not a text {message.DESCRIPTOR.full_name}: "
                          f"{exc}") from None
    return message
