"""How a signature runs: in a ``tf.compat.v1.Session`` or a TF2 signature function, and in
chunks of at most ``rows`` rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2

from serving.core._tf import tf
from serving.core.deadline import call, check, exceeded, timeout_ms
from serving.core.signature import Runner
from serving.core.status import invalid

try:  # TF_SessionRun's Python binding: not public API, so optional (else Session.run)
    from tensorflow.python.client import pywrap_tf_session as tf_session
except ImportError:  # pragma: no cover - depends on the TensorFlow build
    tf_session = None

#: Rows per signature call for batchable signatures (``ChunkedRunner``): a bAbI batch of 128
#: stories padded to 70 sentences costs about 50 MB in the model (results/serving.md).
DEFAULT_MAX_ROWS = 128


class SessionRunner:
    """Runs one SignatureDef in a ``tf.compat.v1.Session``, as ``tensorflow_model_server`` does.

    Feeds and fetches are the SignatureDef's tensors, resolved once; a call hands the arrays
    straight to ``TF_SessionRun`` (the step ``Session.run`` ends in, without its per-call
    parsing of feeds and fetches), with ``RunOptions.timeout_in_ms`` set to the time left
    when the call has a ``deadline``, as TF Serving runs it: TensorFlow cancels the step at
    the deadline (a ``while`` loop stops between iterations) and the call answers
    DEADLINE_EXCEEDED. One path for calls with and without a deadline, so they share the
    session's executor per set of outputs, and a warm-up warms both.
    """

    takes_deadline = True

    def __init__(self, session: tf.compat.v1.Session, sdef: meta_graph_pb2.SignatureDef) -> None:
        self._session = session
        self._input_names = sorted(sdef.inputs)
        self._feeds = [sdef.inputs[k].name for k in self._input_names]
        self._output_tensor = {k: v.name for k, v in sdef.outputs.items()}
        # TF_SessionRun on the graph tensors' C handles (TF_Output), as Session.run calls
        # it; where this TensorFlow lacks any of it, Session.run itself (None).
        self._run_raw = None
        try:
            graph = session.graph
            self._raw_feeds = [graph.get_tensor_by_name(n)._as_tf_output() for n in self._feeds]
            self._raw_fetch = {k: graph.get_tensor_by_name(n)._as_tf_output()
                               for k, n in self._output_tensor.items()}
            if tf_session is not None:
                self._run_raw = session._call_tf_sessionrun
        except AttributeError:
            pass

    def __call__(self, inputs: Mapping[str, np.ndarray], outputs: tuple[str, ...],
                 deadline: float | None = None) -> dict[str, np.ndarray]:
        timeout = timeout_ms(deadline)
        options = None if timeout is None else config_pb2.RunOptions(timeout_in_ms=timeout)
        arrays = [inputs[k] for k in self._input_names]
        try:
            if self._run_raw is None:  # the public, slower path
                values = self._session.run([self._output_tensor[k] for k in outputs],
                                           dict(zip(self._feeds, arrays)), options=options)
            else:
                values = self._run(arrays, outputs, options)
        except tf.errors.DeadlineExceededError:
            raise exceeded("while the model ran (the run was cancelled)") from None
        return dict(zip(outputs, values))

    def _run(self, arrays: list[np.ndarray], outputs: tuple[str, ...],
             options: config_pb2.RunOptions | None) -> list[np.ndarray]:
        buffer = (None if options is None
                  else tf_session.TF_NewBufferFromString(options.SerializeToString()))
        try:
            return self._run_raw(buffer, dict(zip(self._raw_feeds, arrays)),
                                 [self._raw_fetch[k] for k in outputs], [], None)
        finally:
            if buffer is not None:
                tf_session.TF_DeleteBuffer(buffer)


class FunctionRunner:
    """Runs one signature through ``tf.saved_model.load``'s TF2 signature function."""

    def __init__(self, fn: Callable[..., Mapping[str, tf.Tensor]]) -> None:
        self._fn = fn

    def __call__(self, inputs: Mapping[str, np.ndarray],
                 outputs: tuple[str, ...]) -> dict[str, np.ndarray]:
        try:
            result = self._fn(**inputs)
        except (TypeError, ValueError) as exc:  # the function's input signature refused them
            raise invalid(str(exc)) from None
        return {k: result[k].numpy() for k in outputs}


class ChunkedRunner:
    """Runs a batchable signature on at most ``rows`` rows at a time and concatenates the
    outputs, so that the model's own memory per call is bounded whatever the request's
    batch (TF Serving's ``enable_large_batch_splitting`` / ``max_execution_batch_size``).

    A model that pads its batch (a bAbI export pads every story to the longest one) would
    otherwise turn one long story and a million empty ones, a few MB on the wire, into a
    million padded stories in one call. If the outputs of two chunks cannot be
    concatenated (a dimension other than the batch varies with the chunk's content), the
    request runs whole. A ``deadline`` that passes stops the chunks: no chunk starts after it,
    and each chunk runs under it.
    """

    takes_deadline = True

    def __init__(self, runner: Runner, rows: int) -> None:
        self._runner = runner
        self._rows = rows

    def __call__(self, inputs: Mapping[str, np.ndarray], outputs: tuple[str, ...],
                 deadline: float | None = None) -> dict[str, np.ndarray]:
        sizes = {v.shape[0] if v.ndim else -1 for v in inputs.values()}
        n = sizes.pop() if len(sizes) == 1 else -1
        if n <= self._rows:
            return call(self._runner, inputs, outputs, deadline)
        parts = []
        for i in range(0, n, self._rows):
            check(deadline, f"after {i} of {n} rows had run")
            parts.append(call(self._runner, {k: v[i:i + self._rows] for k, v in inputs.items()},
                              outputs, deadline))
        try:
            return {k: np.concatenate([part[k] for part in parts]) for k in outputs}
        except ValueError:
            return call(self._runner, inputs, outputs, deadline)
