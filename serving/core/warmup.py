"""Replaying a version's warm-up requests before it serves (TF Serving's
``saved_model_warmup.cc``): ``--enable_model_warmup`` turns it off, and
``--num_request_iterations_for_warmup`` runs each request that many times. Predict,
Classify, Regress and MultiInference logs are replayed; other kinds are skipped."""

from __future__ import annotations

import functools
import os

from tensorflow_serving.apis import prediction_log_pb2

from serving.core import inference
from serving.core._tf import tf
from serving.core.layout import WARMUP_PATH
from serving.core.servable import Servable
from serving.core.tensors import check_batch, dtype_enum, tensor_proto_to_array, validate_inputs


def warm_up(servable: Servable, iterations: int = 1) -> int:
    """Replays TF Serving's warm-up file (PredictionLog TFRecords; reference:
    tensorflow_serving/servables/tensorflow/saved_model_warmup.cc), if the export has one,
    each request ``iterations`` times (at least once); returns the model calls made."""
    path = os.path.join(servable.path, WARMUP_PATH)
    if not os.path.exists(path):
        return 0
    count = 0
    for record in tf.data.TFRecordDataset(path).take(1000):
        entry = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        kind = entry.WhichOneof("log_type")
        if kind == "predict_log":
            request = entry.predict_log.request
            sig = servable.signature(request.model_spec.signature_name)
            inputs = {k: tensor_proto_to_array(k, v) for k, v in request.inputs.items()}
            validate_inputs(servable.name, sig, inputs,
                            {k: dtype_enum(v) for k, v in inputs.items()})
            check_batch(sig, inputs)
            run = functools.partial(sig.run, inputs)
        elif kind in _INFERENCE:
            log = getattr(entry, kind)
            run = functools.partial(_INFERENCE[kind], servable, log.request)
        else:
            continue
        for _ in range(max(1, iterations)):
            run()
            count += 1
    return count


#: PredictionLog kinds replayed besides Predict, as saved_model_warmup.cc replays them.
_INFERENCE = {"classify_log": inference.classify, "regress_log": inference.regress,
              "multi_inference_log": inference.multi_inference}
