"""serving.core.servable and serving.core.batching on their own: a version's signatures, the
batcher that wraps a runner when the version loads, and an explicit, deterministic close."""

import concurrent.futures
import dataclasses
import shutil
import threading

import numpy as np
import pytest

from serving.core._tf import tf
from serving.core.batching import Batcher, BatchingParameters
from serving.core.runners import ChunkedRunner
from serving.core.servable import Servable
from serving.core.status import ServingError
from serving.core.warmup import warm_up


def inputs(task1, indices):
    return {"story": np.array([task1.stories[i].encode() for i in indices], dtype=object),
            "question": np.array([task1.questions[i].encode() for i in indices], dtype=object)}


def batch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("batch-babi-")]


def test_batcher_wraps_the_runner_at_load_and_close_stops_it(version_dir, task1):
    plain = Servable("babi", 1, version_dir)
    batched = Servable("babi", 1, version_dir,
                       batching=BatchingParameters(max_batch_size=8, batch_timeout_micros=2000,
                                                   num_batch_threads=2))
    sig = batched.signature("")
    assert isinstance(sig.runner, Batcher) and not isinstance(plain.signature("").runner,
                                                             Batcher)
    assert len(batch_threads()) >= 2
    want = plain.signature("").run(inputs(task1, range(12)))["answer"]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda i: sig.run(inputs(task1, [i]), ["answer"])["answer"][0],
                            range(12)))
    assert got == list(want)
    batched.close()
    plain.close()
    assert batched.closed and batched.session._closed and plain.session._closed
    assert not batch_threads()


def test_close_waits_for_the_last_lease(version_dir, task1):
    servable = Servable("babi", 1, version_dir)
    assert servable.acquire() and servable.acquire()
    servable.close()
    assert not servable.closed and not servable.acquire()  # retired: no new requests
    assert servable.signature("").run(inputs(task1, [0]))["answer"].shape == (1,)
    servable.release()
    assert not servable.closed
    servable.release()
    assert servable.closed and servable.session._closed
    servable.close()  # idempotent


def test_function_runtime_closes_too(version_dir, task1):
    servable = Servable("babi", 1, version_dir, runtime="function")
    assert servable.signature("").run(inputs(task1, [0, 1]))["answer"].shape == (2,)
    servable.close()
    assert servable.closed


def test_the_server_replays_the_warmup_request_the_exporter_wrote(version_dir):
    """Exporter and server name the warm-up file once (serving.core.layout); a second spelling
    would make warm_up find nothing and return 0."""
    servable = Servable("babi", 1, version_dir)
    try:
        assert warm_up(servable) == 1
    finally:
        servable.close()


def test_warm_up_runs_each_request_the_iterations_asked_for(version_dir):
    """--num_request_iterations_for_warmup: each warm-up request runs that many times."""
    servable = Servable("babi", 1, version_dir)
    try:
        sig = servable.signature("")
        calls = []

        def counting(inputs, outputs):
            calls.append(len(next(iter(inputs.values()))))
            return sig.runner(inputs, outputs)

        servable.signatures[sig.name] = dataclasses.replace(sig, runner=counting)
        assert warm_up(servable, iterations=3) == 3 and calls == [1, 1, 1]
    finally:
        servable.close()


def test_server_and_exporters_name_the_same_files():
    """The server reads the file names the exporters write: ``serving.core.layout`` hands on
    the objects of ``tpr_keras.export.layout``, their one definition
    (tests/serving/test_layout_of_package.py), and both sides take TensorFlow's default
    signature name."""
    from serving.core import layout
    from serving.core.signature import DEFAULT_SIGNATURE
    from tpr_keras.export import layout as export_layout
    from tpr_keras.export import versions

    assert layout.__all__ == ["EXPORT_INFO_FILE", "EXTRA_ASSETS_DIR", "WARMUP_FILE",
                              "WARMUP_PATH"]
    for name in layout.__all__:
        assert getattr(layout, name) is getattr(export_layout, name), name
    assert layout.WARMUP_PATH == "assets.extra/tf_serving_warmup_requests"
    assert versions.SIGNATURE_KEY == DEFAULT_SIGNATURE == "serving_default"


def test_unknown_runtime_is_refused(version_dir):
    with pytest.raises(ValueError, match="runtime must be one of"):
        Servable("babi", 1, version_dir, runtime="nope")


def test_large_requests_run_in_chunks_with_the_same_answers(version_dir, task1):
    """TF Serving's large-batch splitting: the model's memory per call stays bounded."""
    whole = Servable("babi", 1, version_dir, max_rows_per_call=None)
    chunked = Servable("babi", 1, version_dir, max_rows_per_call=64)
    assert isinstance(chunked.signature("").runner, ChunkedRunner)
    rows = [i % len(task1.stories) for i in range(300)]
    want = whole.signature("").run(inputs(task1, rows))
    got = chunked.signature("").run(inputs(task1, rows))
    assert list(got["answer"]) == list(want["answer"])
    np.testing.assert_allclose(got["scores"], want["scores"], rtol=1e-5, atol=1e-6)
    # One long story among empty ones: chunks of empty stories have fewer sentences, so
    # the tokenize outputs cannot be concatenated; that signature runs whole.
    odd = inputs(task1, [0] * 200)
    odd["story"][1:] = b""
    ids = chunked.signature("tokenize").run(odd)["story_ids"]
    np.testing.assert_array_equal(ids, whole.signature("tokenize").run(odd)["story_ids"])
    whole.close()
    chunked.close()


def test_warm_up_replays_classify_and_regress_logs(half_plus_base, tmp_path):
    """saved_model_warmup.cc replays Classify, Regress and MultiInference logs too."""
    from tensorflow_serving.apis import (
        classification_pb2,
        inference_pb2,
        prediction_log_pb2,
        regression_pb2,
    )

    from serving.core.layout import WARMUP_PATH

    version = tmp_path / "00000123"
    shutil.copytree(half_plus_base / "half_plus_two" / "00000123", version)
    logs = [prediction_log_pb2.PredictionLog(classify_log=prediction_log_pb2.ClassifyLog(
                request=classification_pb2.ClassificationRequest())),
            prediction_log_pb2.PredictionLog(regress_log=prediction_log_pb2.RegressLog(
                request=regression_pb2.RegressionRequest())),
            prediction_log_pb2.PredictionLog(multi_inference_log=(
                prediction_log_pb2.MultiInferenceLog(
                    request=inference_pb2.MultiInferenceRequest())))]
    logs[0].classify_log.request.model_spec.signature_name = "classify_x_to_y"
    logs[1].regress_log.request.model_spec.signature_name = "regress_x_to_y"
    task = logs[2].multi_inference_log.request.tasks.add(
        method_name="tensorflow/serving/regress")
    task.model_spec.name, task.model_spec.signature_name = "half", "regress_x_to_y2"
    for log in logs:
        request = getattr(log, log.WhichOneof("log_type")).request
        request.input.example_list.examples.add().features.feature[
            "x"].float_list.value.append(1.0)
    (version / WARMUP_PATH).parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(version / WARMUP_PATH)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    servable = Servable("half", 123, str(version))
    try:
        calls = []
        sig = servable.signatures["regress_x_to_y2"]
        servable.signatures["regress_x_to_y2"] = dataclasses.replace(
            sig, runner=lambda inputs, outputs: calls.append(1) or sig.runner(inputs, outputs))
        assert warm_up(servable, iterations=2) == 6 and calls == [1, 1]
        # a log the model cannot answer fails the warm-up (so the version does not load)
        logs[1].regress_log.request.model_spec.signature_name = "classify_x_to_y"
        with tf.io.TFRecordWriter(str(version / WARMUP_PATH)) as writer:
            writer.write(logs[1].SerializeToString())
        with pytest.raises(ServingError, match="No regression outputs found"):
            warm_up(servable)
    finally:
        servable.close()
