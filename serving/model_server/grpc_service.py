"""TF Serving's gRPC API: ``PredictionService`` and ``ModelService``.

The services are registered as generic handlers (not the generated ``add_*_to_server``)
so that each method decodes its own request bytes: a message that does not parse is
INVALID_ARGUMENT, as in ``tensorflow_model_server`` (its gRPC C++ layer fails the protobuf
parse before the service runs), instead of grpcio's INTERNAL "Exception deserializing
request!" and a traceback per request. Sizes are capped before decoding by the server's
``grpc.max_receive_message_length`` (RESOURCE_EXHAUSTED).

Every error a method answers gets one log line naming the method, the model the request
asked for and the status, as the REST API's do (:mod:`serving.core.error_log`, rate-limited),
and so does a call to a method this server does not have (UNIMPLEMENTED). A message over the
size limit is refused by gRPC's transport before any of this code runs, as in
``tensorflow_model_server``: the client is told (RESOURCE_EXHAUSTED, naming both sizes), the
server's log is not.

Predict follows ``tensorflow_serving/servables/tensorflow/predict_util.cc``: the model
spec picks a version (leased for the request), the signature, then inputs are checked
against the SignatureDef (names, dtypes; :mod:`serving.core.tensors`) before any value
is decoded; shapes are the graph's to check, as in TF Serving, and ``output_filter`` picks the outputs.

Deadlines: as TF Serving turns a call's gRPC deadline into the run's timeout, Predict passes
``context.time_remaining()`` down as a deadline (:mod:`serving.core.deadline`): a request
whose deadline passes while it waits (in the batch queue, for a handler) answers
DEADLINE_EXCEEDED without running the model, and a run still going at the deadline is
cancelled (``RunOptions.timeout_in_ms``) and answers DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
import grpc
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_management_pb2,
    predict_pb2,
    regression_pb2,
)

from serving.core import inference
from serving.core.deadline import check, deadline_after
from serving.core.error_log import NAME_CHARS, one_line
from serving.core.manager import ModelManager
from serving.core.stats import Stats
from serving.core.status import ServingError, clip, invalid
from serving.core.tensors import (
    array_to_tensor_proto,
    check_batch,
    check_output_filter,
    proto_shape,
    tensor_proto_to_array,
    validate_inputs,
)

log = logging.getLogger("serving.server")

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
MODEL_SERVICE = "tensorflow.serving.ModelService"


class _Unimplemented(grpc.GenericRpcHandler):
    """Registered after the services: answers a method none of them has with UNIMPLEMENTED,
    as grpcio would ("Method not found!"), plus the log line every other error gets."""

    def __init__(self, stats: Stats) -> None:
        self._stats = stats

    def service(self, handler_call_details):
        method = handler_call_details.method or ""

        def unimplemented(requests, context: grpc.ServicerContext):
            text = f"Method not found: {one_line(method, NAME_CHARS)}"
            # one name for every unknown method: a client cannot grow the counters
            self._stats.count("gRPC unknown method", "UNIMPLEMENTED", text)
            context.abort(grpc.StatusCode.UNIMPLEMENTED, text)

        # stream-stream: called at once, whatever the client sends (nothing is read)
        return grpc.stream_stream_rpc_method_handler(unimplemented)


class _Undecodable:
    """What a request deserializer returns for bytes that are not the request message."""

    def __init__(self, message: str, error: Exception) -> None:
        self.message = message
        self.error = error


def _version_of(spec) -> int | None:
    return spec.version.value if spec.HasField("version") else None


class PredictionService:
    """Predict, Classify, Regress, MultiInference (:mod:`serving.core.inference`) and
    GetModelMetadata."""

    def __init__(self, manager: ModelManager, stats: Stats, method_check: bool = False) -> None:
        self._manager = manager
        self._stats = stats
        self._method_check = method_check  # --enable_signature_method_name_check

    def predict(self, request: predict_pb2.PredictRequest,
                deadline: float | None = None) -> predict_pb2.PredictResponse:
        """``deadline``: ``time.monotonic()`` by which to answer (None: none)."""
        check(deadline, "before the request was read")
        spec = request.model_spec
        servable = self._manager.lease(spec.name, _version_of(spec), spec.version_label)
        try:
            sig = servable.signature(spec.signature_name)
            dtypes = {k: v.dtype for k, v in request.inputs.items()}
            shapes = {k: proto_shape(k, v) for k, v in request.inputs.items()}
            validate_inputs(spec.name, sig, request.inputs.keys(), dtypes)
            names = check_output_filter(sig, request.output_filter)
            inputs = {k: tensor_proto_to_array(k, v, shapes[k])
                      for k, v in request.inputs.items()}
            check_batch(sig, inputs)
            started = time.perf_counter()
            outputs = sig.run(inputs, names, deadline=deadline)
            model_time = time.perf_counter() - started
            response = predict_pb2.PredictResponse()
            response.model_spec.name = spec.name
            response.model_spec.version.value = servable.version
            response.model_spec.signature_name = sig.name
            for name in names:
                array_to_tensor_proto(outputs[name], response.outputs[name])
        finally:
            servable.release()
        self._stats.model_times.append(model_time)
        return response

    def _inference(self, run, spec, request, deadline: float | None):
        """``run(servable, request, deadline, method_check)`` on the version ``spec`` asks
        for, leased."""
        check(deadline, "before the request was read")
        servable = self._manager.lease(spec.name, _version_of(spec), spec.version_label)
        try:
            started = time.perf_counter()
            response = run(servable, request, deadline, self._method_check)
        finally:
            servable.release()
        self._stats.model_times.append(time.perf_counter() - started)
        return response

    def classify(self, request: classification_pb2.ClassificationRequest,
                 deadline: float | None = None) -> classification_pb2.ClassificationResponse:
        return self._inference(inference.classify, request.model_spec, request, deadline)

    def regress(self, request: regression_pb2.RegressionRequest,
                deadline: float | None = None) -> regression_pb2.RegressionResponse:
        return self._inference(inference.regress, request.model_spec, request, deadline)

    def multi_inference(self, request: inference_pb2.MultiInferenceRequest,
                        deadline: float | None = None) -> inference_pb2.MultiInferenceResponse:
        inference.check_tasks(request)
        return self._inference(inference.multi_inference, request.tasks[0].model_spec,
                               request, deadline)

    def metadata(self, request: get_model_metadata_pb2.GetModelMetadataRequest):
        spec = request.model_spec
        fields = list(request.metadata_field)
        if not fields:
            raise invalid("GetModelMetadataRequest must specify at least one metadata_field "
                          "(supported: signature_def)")
        unsupported = [f for f in fields if f != "signature_def"]
        if unsupported:
            raise invalid(f"Metadata field(s) {unsupported} not supported (supported: "
                          "signature_def)")
        servable = self._manager.servable(spec.name, _version_of(spec), spec.version_label)
        response = get_model_metadata_pb2.GetModelMetadataResponse()
        response.model_spec.name = spec.name
        response.model_spec.version.value = servable.version
        response.metadata["signature_def"].Pack(servable.signature_def_map)
        return response


class ModelService:
    """GetModelStatus and HandleReloadConfigRequest (``model_config_list`` only)."""

    def __init__(self, manager: ModelManager) -> None:
        self._manager = manager

    def status(self, request: get_model_status_pb2.GetModelStatusRequest):
        spec = request.model_spec
        response = get_model_status_pb2.GetModelStatusResponse()
        response.model_version_status.extend(
            self._manager.status(spec.name, _version_of(spec), spec.version_label))
        return response

    def reload(self, request: model_management_pb2.ReloadConfigRequest):
        config = request.config
        if config.WhichOneof("config") != "model_config_list":
            raise invalid("only model_config_list configs are supported")
        try:
            self._manager.reload_config(list(config.model_config_list.config))
        except ValueError as exc:
            raise invalid(str(exc)) from None
        return model_management_pb2.ReloadConfigResponse()


def _model_of(request) -> str | None:
    """The model a request asks for (MultiInference: its first task's), or None."""
    spec = getattr(request, "model_spec", None)
    if spec is None:
        tasks = getattr(request, "tasks", None)
        spec = tasks[0].model_spec if tasks else None
    return spec.name if spec is not None else None


def _method(api: str, request_cls, response_cls, fn: Callable[..., Any], stats: Stats,
            timed: bool = False) -> grpc.RpcMethodHandler:
    """A unary method: decodes its own request (INVALID_ARGUMENT if it does not parse), maps
    ServingError to its status, and anything unexpected to INTERNAL; every error gets one
    log line (``Stats.count``: the method, the model, the status and the message).
    ``timed`` (Predict, Classify, Regress, MultiInference): its handler time is recorded and
    ``fn`` gets the call's deadline."""
    message = request_cls.DESCRIPTOR.name

    def deserialize(data: bytes):
        try:
            return request_cls.FromString(data)
        except Exception as exc:  # noqa: BLE001 - DecodeError, RecursionError, ...
            return _Undecodable(message, exc)

    def handle(request, context: grpc.ServicerContext):
        started = time.perf_counter()
        try:
            if isinstance(request, _Undecodable):
                raise invalid(f"Could not parse the request bytes as a {message} "
                              f"({type(request.error).__name__}: {request.error})")
            if timed:
                response = fn(request, deadline=deadline_after(context.time_remaining()))
            else:
                response = fn(request)
        except ServingError as exc:
            stats.count(api, exc.code.name, exc.message, model=_model_of(request))
            context.abort(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - never crash a handler thread
            text = clip(f"internal error: {type(exc).__name__}: {exc}")
            stats.count(api, "INTERNAL", text, model=_model_of(request), level=logging.ERROR)
            context.abort(grpc.StatusCode.INTERNAL, text)
        stats.count(api)
        if timed:
            stats.times.append(time.perf_counter() - started)  # successes only
        return response

    return grpc.unary_unary_rpc_method_handler(
        handle, request_deserializer=deserialize,
        response_serializer=response_cls.SerializeToString)


def add_services(server: grpc.Server, manager: ModelManager, stats: Stats,
                 method_check: bool = False) -> PredictionService:
    """Registers PredictionService and ModelService on ``server`` (``method_check``:
    ``--enable_signature_method_name_check``)."""
    predictions = PredictionService(manager, stats, method_check)
    models = ModelService(manager)
    server.add_generic_rpc_handlers([
        grpc.method_handlers_generic_handler(PREDICTION_SERVICE, {
            "Predict": _method("gRPC Predict", predict_pb2.PredictRequest,
                               predict_pb2.PredictResponse, predictions.predict, stats,
                               timed=True),
            "GetModelMetadata": _method(
                "gRPC GetModelMetadata", get_model_metadata_pb2.GetModelMetadataRequest,
                get_model_metadata_pb2.GetModelMetadataResponse, predictions.metadata, stats),
            "Classify": _method("gRPC Classify", classification_pb2.ClassificationRequest,
                                classification_pb2.ClassificationResponse,
                                predictions.classify, stats, timed=True),
            "Regress": _method("gRPC Regress", regression_pb2.RegressionRequest,
                               regression_pb2.RegressionResponse, predictions.regress, stats,
                               timed=True),
            "MultiInference": _method("gRPC MultiInference",
                                      inference_pb2.MultiInferenceRequest,
                                      inference_pb2.MultiInferenceResponse,
                                      predictions.multi_inference, stats, timed=True),
        }),
        grpc.method_handlers_generic_handler(MODEL_SERVICE, {
            "GetModelStatus": _method("gRPC GetModelStatus",
                                      get_model_status_pb2.GetModelStatusRequest,
                                      get_model_status_pb2.GetModelStatusResponse,
                                      models.status, stats),
            "HandleReloadConfigRequest": _method(
                "gRPC ReloadConfig", model_management_pb2.ReloadConfigRequest,
                model_management_pb2.ReloadConfigResponse, models.reload, stats),
        }),
        _Unimplemented(stats),  # last: only what no handler before it serves
    ])
    return predictions
