"""TF Serving's ``MonitoringConfig`` and ``SSLConfig`` messages, and reading text-proto
config files with one start-up error that names the file and the field.

``tensorflow-serving-api`` 2.21 ships ``model_server_config_pb2`` but not
``monitoring_config_pb2`` or ``ssl_config_pb2``, so the two messages are declared here
with the same package, names, field numbers and types as
``tensorflow_serving/config/monitoring_config.proto`` and ``ssl_config.proto``, in a
private descriptor pool (:mod:`serving.core.proto_types`; no clash should a later release
ship them).
"""

from __future__ import annotations

from google.protobuf import text_format

from serving.core.proto_types import FIELD, message_classes

_CLASSES = message_classes("serving/model_server/config_protos.proto", "tensorflow.serving", {
    "PrometheusConfig": [("enable", 1, FIELD.TYPE_BOOL), ("path", 2, FIELD.TYPE_STRING)],
    "MonitoringConfig": [("prometheus_config", 1, ".tensorflow.serving.PrometheusConfig")],
    "SSLConfig": [("server_key", 1, FIELD.TYPE_STRING), ("server_cert", 2, FIELD.TYPE_STRING),
                  ("custom_ca", 3, FIELD.TYPE_STRING), ("client_verify", 4, FIELD.TYPE_BOOL)],
})
MonitoringConfig = _CLASSES["MonitoringConfig"]
SSLConfig = _CLASSES["SSLConfig"]


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
