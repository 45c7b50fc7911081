"""Classify, Regress and MultiInference over serialized ``tf.Example`` input.

The reference is TF Serving's ``tensorflow_serving/servables/tensorflow/classifier.cc``,
``regressor.cc``, ``multi_inference.cc`` and ``util.cc``: the request's ``Input`` (an
example list, or an example list with a context) becomes one DT_STRING vector of serialized
examples (with a context, each is the context's bytes followed by the example's, which
parse as the two merged), fed to the signature's single input ``inputs``. A
classification signature has the output ``classes`` (DT_STRING ``[batch, k]``), ``scores``
(DT_FLOAT ``[batch, k]``) or both; a regression signature the output ``outputs`` (DT_FLOAT
``[batch]`` or ``[batch, 1]``). As ``tensorflow_model_server`` without
``--enable_signature_method_name_check`` (``method_check``), a signature qualifies by these
inputs and outputs, whatever its ``method_name`` (TF2 exports name every signature
"predict"); with it, the ``method_name`` must be ``tensorflow/serving/classify`` or
``.../regress`` too. A signature that does not qualify is INVALID_ARGUMENT with TF Serving's
message. The signature runs like a Predict
signature: batched when batching is on, cancelled at the request's deadline.
"""

from __future__ import annotations

import grpc
import numpy as np
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    input_pb2,
    regression_pb2,
)

from serving.core.servable import Servable
from serving.core.signature import DEFAULT_SIGNATURE, Signature
from serving.core.status import ServingError, invalid

CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"
INPUTS, CLASSES, SCORES, OUTPUTS = "inputs", "classes", "scores", "outputs"


def examples_tensor(request_input: input_pb2.Input) -> np.ndarray:
    """The serialized examples of an ``Input`` as a DT_STRING vector (util.cc's
    ``InputToSerializedExampleTensor``); INVALID_ARGUMENT "Input is empty." for none."""
    kind = request_input.WhichOneof("kind")
    if kind == "example_list":
        rows = [e.SerializeToString() for e in request_input.example_list.examples]
    elif kind == "example_list_with_context":
        listed = request_input.example_list_with_context
        context = listed.context.SerializeToString()
        rows = [context + e.SerializeToString() for e in listed.examples]
    else:
        rows = []
    if not rows:
        raise invalid("Input is empty.")
    out = np.empty(len(rows), dtype=object)
    out[:] = rows
    return out


def _signature(servable: Servable, name: str) -> Signature:
    key = name or DEFAULT_SIGNATURE
    sig = servable.signatures.get(key)
    if sig is None:
        raise invalid(f"No signature was found with the name: {key}")
    return sig


def _describe(sig: Signature) -> str:
    return (f"signature '{sig.name}' (method_name {sig.signature_def.method_name!r}; inputs "
            f"{sorted(sig.inputs)}, outputs {sorted(sig.outputs)})")


def _single_string_input(sig: Signature, kind: str) -> None:
    if len(sig.inputs) != 1:
        raise invalid("Expected one input Tensor.")
    if INPUTS not in sig.inputs:
        raise invalid(f"No {kind} inputs found in SignatureDef: {_describe(sig)}")
    if sig.inputs[INPUTS].dtype != types_pb2.DT_STRING:
        raise invalid(f"Expected the {kind} input '{INPUTS}' of {_describe(sig)} to be "
                      "DT_STRING (serialized tf.Example)")


def _check_method(sig: Signature, kind: str, method: str, method_check: bool) -> None:
    if method_check and sig.signature_def.method_name != method:
        raise invalid(f"Expected {kind} signature method_name to be {method}. Was: "
                      f"{sig.signature_def.method_name}")


def classification_outputs(sig: Signature, method_check: bool = False) -> list[str]:
    """``classes`` and/or ``scores``: checks a classification signature (classifier.cc's
    ``PreProcessClassification``)."""
    _check_method(sig, "classification", CLASSIFY_METHOD, method_check)
    _single_string_input(sig, "classification")
    if len(sig.outputs) not in (1, 2):
        raise invalid(f"Expected one or two output Tensors, found {len(sig.outputs)}")
    names = [k for k in (CLASSES, SCORES) if k in sig.outputs]
    if not names:
        raise invalid(f'Expected classification signature outputs to contain at least one of '
                      f'"{CLASSES}" or "{SCORES}". Signature was: {_describe(sig)}')
    return names


def regression_outputs(sig: Signature, method_check: bool = False) -> list[str]:
    """``outputs``: checks a regression signature (regressor.cc's ``PreProcessRegression``)."""
    _check_method(sig, "regression", REGRESS_METHOD, method_check)
    _single_string_input(sig, "regression")
    if len(sig.outputs) != 1:
        raise invalid("Expected one output Tensor.")
    if OUTPUTS not in sig.outputs:
        raise invalid(f"No regression outputs found in SignatureDef: {_describe(sig)}")
    return [OUTPUTS]


def classification_result(outputs: dict[str, np.ndarray], n: int,
                          result: classification_pb2.ClassificationResult) -> None:
    """Fills ``result`` from the outputs (classifier.cc's ``PostProcessClassificationResult``
    checks: rank 2, dtypes, batch size, equal k)."""
    classes, scores = outputs.get(CLASSES), outputs.get(SCORES)
    for name, arr, kind in ((CLASSES, classes, "S"), (SCORES, scores, "f")):
        if arr is None:
            continue
        if arr.ndim != 2:
            raise invalid(f"Expected Tensor shape: [batch_size num_classes] but got "
                          f"{list(arr.shape)}")
        if (kind == "S") != (arr.dtype == object) or (kind == "f" and arr.dtype != np.float32):
            raise invalid(f"Expected {name} Tensor of {'DT_STRING' if kind == 'S' else 'DT_FLOAT'}"
                          f". Got: {arr.dtype}")
        if arr.shape[0] != n:
            raise invalid(f"Expected {name} output batch size of {n}. Got: {arr.shape[0]}")
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise invalid(f"Tensors class and score should match in dim_size(1). Got "
                      f"{classes.shape[1]} vs. {scores.shape[1]}")
    k = (classes if classes is not None else scores).shape[1]
    for i in range(n):
        row = result.classifications.add()
        for c in range(k):
            cls = row.classes.add()
            if classes is not None:
                cls.label = classes[i, c].decode("utf-8", "replace")
            if scores is not None:
                cls.score = float(scores[i, c])


def regression_result(outputs: dict[str, np.ndarray], n: int,
                      result: regression_pb2.RegressionResult) -> None:
    """Fills ``result`` (regressor.cc's ``PostProcessRegressionResult`` checks)."""
    arr = outputs[OUTPUTS]
    if not (arr.ndim == 1 or (arr.ndim == 2 and arr.shape[1] == 1)):
        raise invalid("Expected output Tensor shape to be either [batch_size] or "
                      f"[batch_size, 1] but got {list(arr.shape)}")
    if arr.shape[0] != n:
        raise invalid(f"Input batch size did not match output batch size: {n} vs. "
                      f"{arr.shape[0]}")
    if arr.dtype != np.float32:
        raise invalid(f"Expected output Tensor of DT_FLOAT.  Got: {arr.dtype}")
    for value in arr.reshape(-1).tolist():
        result.regressions.add(value=value)


def _run_examples(servable, request, deadline, method_check, outputs_of, response,
                  fill_result):
    """Classify or Regress: the request's examples through its signature into ``response``."""
    sig = _signature(servable, request.model_spec.signature_name)
    names = outputs_of(sig, method_check)
    examples = examples_tensor(request.input)
    outputs = sig.run({INPUTS: examples}, names, deadline=deadline)
    _model_spec(response.model_spec, servable, sig)
    fill_result(outputs, len(examples), response.result)
    return response


def classify(servable: Servable, request: classification_pb2.ClassificationRequest,
             deadline: float | None = None,
             method_check: bool = False) -> classification_pb2.ClassificationResponse:
    return _run_examples(servable, request, deadline, method_check, classification_outputs,
                         classification_pb2.ClassificationResponse(), classification_result)


def regress(servable: Servable, request: regression_pb2.RegressionRequest,
            deadline: float | None = None,
            method_check: bool = False) -> regression_pb2.RegressionResponse:
    return _run_examples(servable, request, deadline, method_check, regression_outputs,
                         regression_pb2.RegressionResponse(), regression_result)


def check_tasks(request: inference_pb2.MultiInferenceRequest) -> None:
    """multi_inference.cc's checks that need no model: one model name, no signature twice."""
    if not request.tasks:
        raise invalid("MultiInferenceRequest must have at least one task")
    model_name, seen = "", set()
    for task in request.tasks:
        if not task.model_spec.name:
            raise invalid("Found ModelSpec with an empty model name.")
        if model_name and task.model_spec.name != model_name:
            raise invalid("All ModelSpecs in a MultiInferenceRequest must access the same "
                          "model name.")
        model_name = task.model_spec.name
        key = task.model_spec.signature_name or DEFAULT_SIGNATURE
        if key in seen:
            raise invalid(f"Duplicate evaluation of signature: {key}")
        seen.add(key)


def multi_inference(servable: Servable, request: inference_pb2.MultiInferenceRequest,
                    deadline: float | None = None,
                    method_check: bool = False) -> inference_pb2.MultiInferenceResponse:
    """Each task's classification or regression signature over the same examples (every
    task is checked before any runs); results in task order."""
    plan = []
    for task in request.tasks:
        key = task.model_spec.signature_name or DEFAULT_SIGNATURE
        sig = servable.signatures.get(key)
        if sig is None:
            raise invalid(f"Requested signature not found in model graph: {key}")
        if task.method_name == CLASSIFY_METHOD:
            plan.append((task, sig, classification_outputs(sig, method_check)))
        elif task.method_name == REGRESS_METHOD:
            plan.append((task, sig, regression_outputs(sig, method_check)))
        else:
            raise ServingError(grpc.StatusCode.UNIMPLEMENTED,
                               f"Unsupported signature method_name: {task.method_name}")
    examples = examples_tensor(request.input)
    response = inference_pb2.MultiInferenceResponse()
    for task, sig, names in plan:
        outputs = sig.run({INPUTS: examples}, names, deadline=deadline)
        result = response.results.add()
        _model_spec(result.model_spec, servable, sig)
        if task.method_name == CLASSIFY_METHOD:
            classification_result(outputs, len(examples), result.classification_result)
        else:
            regression_result(outputs, len(examples), result.regression_result)
    return response


def _model_spec(spec, servable: Servable, sig: Signature) -> None:
    spec.name = servable.name
    spec.version.value = servable.version
    spec.signature_name = sig.name
