"""Writing one servable version in TF Serving's layout (:mod:`tpr_keras.export.layout`):
the next version number, the warm-up file, ``export_info.json``, an atomic publish.

Every exporter of this package (:mod:`tpr_keras.export.babi`,
:mod:`tpr_keras.export.entailment`, :mod:`tpr_keras.export.tp_transformer`) writes its
SavedModel through :func:`export_version`. Versions are positive integers; a new export
takes the next number. The version folder is written under a hidden temporary name
(``.export-tmp-*``), synced and renamed into place (:mod:`tpr_keras.atomic_files`), so a
server polling the folder never sees half an export (:func:`publish_version`), and a
process killed mid-export leaves only the temporary.

Why in the library and not in ``serving/``: the training commands (``train.*``) export at
the end of a run, and ``train`` must not import ``serving``. The server imports of this
package only the file names (:mod:`tpr_keras.export.layout`, which imports no TensorFlow).

The signature name is TensorFlow's ``tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY``
(``serving_default``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from tpr_keras.atomic_files import commit_folder, temporary_folder
from tpr_keras.export.layout import EXPORT_INFO_FILE, EXTRA_ASSETS_DIR, WARMUP_PATH

#: TensorFlow's name of the default signature ("serving_default"), the one every
#: exporter here uses and the server looks up.
SIGNATURE_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
#: The classification signature of an export (one DT_STRING input ``inputs`` of serialized
#: ``tf.Example``; outputs ``classes`` and ``scores``), for TF Serving's Classify API.
CLASSIFY_SIGNATURE_KEY = "classify"


def traced_once(fn: Callable[..., Any], input_signature: Sequence[tf.TensorSpec],
                autograph: bool = False) -> Any:
    """``fn`` traced for ``input_signature``: the concrete function an exporter keeps as an
    attribute of the module it saves and passes as its signature. A ``tf.function``
    attribute would be traced again by ``tf.saved_model.save``, which traces in a context of
    its own (a cache key of its own): the export took twice the tracing, and the SavedModel
    held every function twice, loading twice as many. No autograph by default: the
    exporters' control flow is graph ops already (``keras.ops.while_loop``, ``tf.cond``),
    so converting every function the trace reaches (the model's layers included) is work
    for nothing."""
    return tf.function(fn, input_signature=input_signature,
                       autograph=autograph).get_concrete_function()


def save_servable(module: tf.Module, path: str | os.PathLike,
                  signatures: Mapping[str, Any]) -> None:
    """``tf.saved_model.save(module, path, signatures=...)`` without the gradients of the
    ops that define their own (``SaveOptions(experimental_custom_gradients=False)``).

    A served SavedModel is only ever run forward: TF Serving and every reader here call its
    signatures and never differentiate them. TensorFlow's default traces a gradient
    function for each such op of every saved function and stores it; for a routed math
    export (five decoders, greedy and beam decoding) that was a quarter of the export's time
    (``tp_transformer_math_everyday``: 13.3-13.9 s with them, 10.0-10.5 without, alternated
    runs on one core). What is given up: differentiating a loaded export through those ops,
    which nothing here does."""
    tf.saved_model.save(module, os.fspath(path), signatures=dict(signatures),
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))


def next_version(model_base_path: str | os.PathLike) -> int:
    """1 + the largest integer version folder under ``model_base_path`` (1 if none)."""
    try:
        names = os.listdir(model_base_path)
    except FileNotFoundError:
        return 1
    versions = [int(n) for n in names
                if n.isdigit() and os.path.isdir(os.path.join(model_base_path, n))]
    return max(versions, default=0) + 1


def read_export_info(version_dir: str | os.PathLike) -> dict[str, Any]:
    """The ``assets.extra/export_info.json`` of an export."""
    path = os.path.join(version_dir, EXTRA_ASSETS_DIR, EXPORT_INFO_FILE)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_warmup_requests(path: str, model_name: str, inputs: Mapping[str, Sequence[str]],
                          signature_name: str = SIGNATURE_KEY) -> None:
    """Writes one Predict request of string ``inputs`` as TF Serving's warm-up file.

    TF Serving (and ``serving.server``) replays it before the version serves, so the
    first real request does not pay for building the graph's kernels.
    """
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    request = predict_pb2.PredictRequest(
        model_spec=model_pb2.ModelSpec(name=model_name, signature_name=signature_name))
    for name, values in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto([v.encode() for v in values]))
    log = prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(log.SerializeToString())


def publish_version(export_dir: str | os.PathLike, model_name: str, version: int | None,
                    write: Callable[[str], dict[str, Any]]) -> str:
    """Writes one servable version atomically; returns ``<export_dir>/<model_name>/<v>``.

    ``write(tmp)`` saves the SavedModel into ``tmp`` (a hidden, non-numeric folder
    that servers ignore) and returns a dict for ``assets.extra/export_info.json``.
    The folder is then renamed to the next free integer version (or ``version``),
    so a polling server never sees half an export.

    Raises:
        ValueError: ``version`` is not positive or ``model_name`` is not a folder name.
        FileExistsError: ``version`` is given and already exists.
    """
    if version is not None and version < 1:
        raise ValueError(f"version must be a positive integer, got {version}")
    if not model_name or os.sep in model_name:
        raise ValueError(f"invalid model name {model_name!r}")
    base = os.path.join(os.fspath(export_dir), model_name)
    os.makedirs(base, exist_ok=True)
    if version is not None and os.path.exists(os.path.join(base, str(version))):
        raise FileExistsError(f"{os.path.join(base, str(version))} already exists")
    tmp = temporary_folder(base, "export")
    try:
        extra = os.path.join(tmp, EXTRA_ASSETS_DIR)
        os.makedirs(extra, exist_ok=True)
        info = write(tmp)
        info.update(model_name=model_name, tensorflow=tf.__version__, created_unix=time.time())
        for attempt in range(100):
            v = version if version is not None else next_version(base)
            info["version"] = v
            with open(os.path.join(extra, EXPORT_INFO_FILE), "w", encoding="utf-8") as f:
                json.dump(info, f, indent=1)
            target = os.path.join(base, str(v))
            try:
                return commit_folder(tmp, target, "export")  # synced, then one rename
            except OSError:
                if version is not None or attempt == 99:
                    raise
        raise AssertionError("unreachable")
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def export_version(export_dir: str | os.PathLike, model_name: str, version: int | None,
                   save: Callable[[str], dict[str, Any]],
                   warmup_inputs: Mapping[str, Sequence[str]]) -> str:
    """:func:`publish_version` of ``save(tmp)`` (the SavedModel, returning its
    ``export_info``) with one warm-up request of ``warmup_inputs``; returns the folder."""

    def write(tmp):
        info = save(tmp)
        write_warmup_requests(os.path.join(tmp, WARMUP_PATH), model_name, warmup_inputs)
        return info

    return publish_version(export_dir, model_name, version, write)
