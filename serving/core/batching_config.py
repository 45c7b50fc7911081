"""``--batching_parameters_file``: TF Serving's text ``BatchingParameters`` message.

The message is ``tensorflow.serving.BatchingParameters``
(``tensorflow_serving/servables/tensorflow/session_bundle_config.proto``); the pip package
``tensorflow-serving-api`` does not ship that module, so it is declared here
(:mod:`serving.core.proto_types`; same names, types and wrapper messages) and the file is read by ``google.protobuf.text_format``:
``max_batch_size { value: 32 }``, ``allowed_batch_sizes: 8``, ``pad_variable_length_inputs:
true``. A field the message does not have is an error naming the file and the field.
"""

from __future__ import annotations

import dataclasses

from google.protobuf import text_format, wrappers_pb2

from serving.core.proto_types import FIELD, message_classes

#: (name, number, wrapper type or scalar type, repeated): the message's fields.
_FIELDS = (
    ("max_batch_size", 1, ".google.protobuf.Int64Value", False),
    ("batch_timeout_micros", 2, ".google.protobuf.Int64Value", False),
    ("max_enqueued_batches", 3, ".google.protobuf.Int64Value", False),
    ("num_batch_threads", 4, ".google.protobuf.Int64Value", False),
    ("thread_pool_name", 5, ".google.protobuf.StringValue", False),
    ("allowed_batch_sizes", 6, FIELD.TYPE_INT64, True),
    ("pad_variable_length_inputs", 7, FIELD.TYPE_BOOL, False),
    ("enable_large_batch_splitting", 8, ".google.protobuf.BoolValue", False),
    ("max_execution_batch_size", 9, ".google.protobuf.Int64Value", False),
)


def _message_class():
    try:  # the real module, where an installed tensorflow_serving has it
        from tensorflow_serving.servables.tensorflow import session_bundle_config_pb2
        return session_bundle_config_pb2.BatchingParameters
    except ImportError:
        pass
    return message_classes("serving/core/batching_parameters.proto", "tensorflow.serving",
                           {"BatchingParameters": _FIELDS},
                           [wrappers_pb2.DESCRIPTOR])["BatchingParameters"]


#: ``tensorflow.serving.BatchingParameters``.
BatchingParametersProto = _message_class()


@dataclasses.dataclass
class BatchingParameters:
    """TF Serving's BatchingParameters, with its defaults (``batching_session.h``,
    ``shared_batch_scheduler.h``) except ``max_batch_size`` 128 and ``max_enqueued_batches``
    100, this server's defaults.

    Without ``enable_large_batch_splitting``, a batch runs at most ``max_batch_size`` rows
    and a larger request is INVALID_ARGUMENT. With it, ``max_batch_size`` bounds a request
    and ``max_execution_batch_size`` a batch run: larger requests are split across batches.
    ``allowed_batch_sizes`` pads each merged batch up to the next allowed size; its last
    entry must be the largest batch run.
    """

    max_batch_size: int = 128
    batch_timeout_micros: int = 0  # 0: batch what queued while the previous batch ran
    max_enqueued_batches: int = 100
    num_batch_threads: int = 1
    thread_pool_name: str = "batch_threads"
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False
    enable_large_batch_splitting: bool = False
    max_execution_batch_size: int = 0  # 0: max_batch_size

    def __post_init__(self) -> None:
        self.allowed_batch_sizes = tuple(int(s) for s in self.allowed_batch_sizes)
        self.validate()

    @property
    def execution_batch_size(self) -> int:
        """The most rows one batch runs."""
        if self.enable_large_batch_splitting and self.max_execution_batch_size:
            return self.max_execution_batch_size
        return self.max_batch_size

    def validate(self) -> None:
        """ValueError for parameters TF Serving refuses too."""
        for name in ("max_batch_size", "max_enqueued_batches", "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"batching parameter {name} must be >= 1, got "
                                 f"{getattr(self, name)}")
        if self.batch_timeout_micros < 0 or self.max_execution_batch_size < 0:
            raise ValueError("batching parameters batch_timeout_micros and "
                             "max_execution_batch_size must be >= 0")
        if self.max_execution_batch_size and not self.enable_large_batch_splitting:
            raise ValueError("max_execution_batch_size needs enable_large_batch_splitting")
        sizes = self.allowed_batch_sizes
        if sizes:
            if any(s < 1 for s in sizes) or list(sizes) != sorted(set(sizes)):
                raise ValueError(f"allowed_batch_sizes must be positive and increasing, "
                                 f"got {list(sizes)}")
            limit = ("max_execution_batch_size" if self.enable_large_batch_splitting
                     and self.max_execution_batch_size else "max_batch_size")
            if sizes[-1] != self.execution_batch_size:
                raise ValueError(f"the last entry of allowed_batch_sizes ({sizes[-1]}) must "
                                 f"equal {limit} ({self.execution_batch_size})")

    @classmethod
    def from_proto(cls, proto) -> BatchingParameters:
        kwargs = {}
        for name, _, kind, repeated in _FIELDS:
            if repeated:
                if getattr(proto, name):
                    kwargs[name] = tuple(getattr(proto, name))
            elif isinstance(kind, str):
                if proto.HasField(name):
                    kwargs[name] = getattr(proto, name).value
            elif getattr(proto, name):
                kwargs[name] = getattr(proto, name)
        return cls(**kwargs)

    @classmethod
    def parse(cls, text: str, source: str = "batching parameters") -> BatchingParameters:
        """Reads the text format; ValueError naming ``source`` for an unknown field, a
        malformed value or parameters TF Serving refuses."""
        proto = BatchingParametersProto()
        try:
            text_format.Parse(text, proto)
        except text_format.ParseError as exc:
            raise ValueError(f"{source}: not a BatchingParameters text proto: {exc}") from None
        try:
            return cls.from_proto(proto)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None

    @classmethod
    def from_file(cls, path: str) -> BatchingParameters:
        """``--batching_parameters_file``."""
        with open(path, encoding="utf-8") as f:
            return cls.parse(f.read(), source=path)
