"""A signature of a loaded version: its SignatureDef, its inputs and outputs, its runner.

Its own module so that :mod:`serving.core.tensors` (which checks requests against a
signature) and :mod:`serving.core.servable` (which builds signatures) both import it and
not each other.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence

import grpc
import numpy as np
from tensorflow.core.protobuf import meta_graph_pb2

from serving.core import deadline as deadline_module
from serving.core._tf import tf
from serving.core.status import (
    CODE_BY_VALUE,
    ServingError,
    dtype_name,
    model_error_message,
    shape_str,
)

#: "serving_default": TensorFlow's own constant, the one definition the exporters in
#: tpr_keras.export use too (the server imports no model code from tpr_keras).
DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY

#: Maps input arrays and the requested output names to output arrays. Runners with a true
#: ``takes_deadline`` attribute (``SessionRunner``, ``Batcher``, ``ChunkedRunner``) also take
#: a ``deadline=`` keyword (:mod:`serving.core.deadline`), which :meth:`Signature.run` passes.
Runner = Callable[[Mapping[str, np.ndarray], tuple[str, ...]], dict[str, np.ndarray]]


@dataclasses.dataclass(frozen=True)
class TensorSpecInfo:
    """One signature input or output: its dtype enum and shape (-1 unknown; None rank)."""

    dtype: int
    shape: tuple[int, ...] | None

    @classmethod
    def from_tensor_info(cls, info: meta_graph_pb2.TensorInfo) -> TensorSpecInfo:
        if info.tensor_shape.unknown_rank:
            return cls(info.dtype, None)
        return cls(info.dtype, tuple(int(d.size) for d in info.tensor_shape.dim))

    def describe(self) -> str:
        return f"{dtype_name(self.dtype)} {shape_str(self.shape)}"


@dataclasses.dataclass(frozen=True)
class Signature:
    """A signature of a loaded version: its runner (batched or not) and its SignatureDef."""

    name: str
    runner: Runner
    signature_def: meta_graph_pb2.SignatureDef
    inputs: dict[str, TensorSpecInfo]
    outputs: dict[str, TensorSpecInfo]

    def run(self, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] = (),
            deadline: float | None = None) -> dict[str, np.ndarray]:
        """Maps input arrays to output arrays (all outputs, or the names asked for); a
        TensorFlow error keeps its code (TF and gRPC codes are equal).

        ``deadline`` (``time.monotonic()``; None: none): DEADLINE_EXCEEDED without running
        the model if it has passed before the model call starts (in the batch queue too);
        an error the graph raises keeps TensorFlow's code (INVALID_ARGUMENT for a kernel
        refusing its input) with the problem alone as its message
        (:func:`~serving.core.status.model_error_message`: no node or graph dump);
        a session run still going at the deadline is cancelled (``SessionRunner``), and
        any other call that ends after it answers DEADLINE_EXCEEDED instead of its outputs.
        """
        names = tuple(outputs) or tuple(self.outputs)
        deadline_module.check(deadline, "before the model ran")
        try:
            result = deadline_module.call(self.runner, inputs, names, deadline)
        except tf.errors.OpError as exc:  # the code TF gave, the message without its dump
            raise ServingError(CODE_BY_VALUE.get(exc.error_code, grpc.StatusCode.INTERNAL),
                               model_error_message(exc.message)) from None
        deadline_module.check(deadline, "while the model ran")
        return result

    def expected_inputs(self) -> str:
        return ", ".join(f"{k} ({v.describe()})" for k, v in sorted(self.inputs.items()))

    @functools.cached_property
    def batchable(self) -> bool:
        """All inputs and outputs have a leading batch dimension of unknown size."""
        specs = list(self.inputs.values()) + list(self.outputs.values())
        return bool(self.inputs) and all(s.shape and s.shape[0] == -1 for s in specs)
