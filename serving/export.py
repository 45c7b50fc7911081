"""Publish exports in TF Serving's layout; export a trained bAbI model into it.

Layout (TF Serving's)::

    <export_dir>/<model_name>/<version>/saved_model.pb
                                        variables/
                                        assets/vocab.txt
                                        assets.extra/tf_serving_warmup_requests
                                        assets.extra/export_info.json

Versions are positive integers; a new export takes the next number. The version folder is
written under a hidden temporary name and renamed into place, so a server polling the
folder never sees half an export.

The SavedModel itself, its signatures (``serving_default``: story and question strings
in; answer, scores, candidates and unknown_words out; ``tokenize``) and its in-graph
tokenizer are the bAbI exporter's, :mod:`tpr_keras.models.babi`; this module puts it
into a version folder with its warm-up request and ``export_info.json``
(:func:`publish_version`, shared by the math and entailment exporters).

``python -m serving.export --model model.keras --vocab vocab.txt --export_dir DIR`` exports
a saved ``.keras`` model.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from serving.layout import EXTRA_ASSETS_DIR, WARMUP_PATH
from tpr_keras.data.babi.truncation import DEFAULT_MAX_STORY_SENTENCES
from tpr_keras.models.babi.babi_exporter import (
    DEFAULT_TOP_K,
    SIGNATURE_KEY,
    WARMUP_INPUTS,
    check_model,
    save_babi_servable,
    vocabulary_tokens,
)

__all__ = [
    "EXPORT_INFO_FILE",
    "export_babi_model",
    "next_version",
    "publish_version",
    "read_export_info",
    "write_warmup_requests",
]

EXPORT_INFO_FILE = "export_info.json"


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


def write_warmup_requests(path: str, model_name: str, inputs: dict[str, Sequence[str]],
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


def export_babi_model(
    model: Any,
    vocabulary: Any,
    export_dir: str | os.PathLike,
    model_name: str = "babi",
    *,
    version: int | None = None,
    max_story_sentences: int | None = DEFAULT_MAX_STORY_SENTENCES,
    top_k: int = DEFAULT_TOP_K,
) -> str:
    """Exports ``model`` to ``<export_dir>/<model_name>/<version>/`` for TF Serving.

    Args:
        model: A Keras model taking ``{"story": int32[B, S, W], "question": int32[B, W]}``
            and returning logits ``[B, len(vocabulary)]``, with a ``max_words`` (W)
            attribute (``tpr_keras.models.TPRRNN`` or ``MemN2N``).
        vocabulary: A ``tpr_keras.data.babi.Vocabulary``, its tokens in id order, or the
            path of its ``vocab.txt``.
        export_dir: Base folder; the model goes to ``<export_dir>/<model_name>/<version>``.
        model_name: The served model's name.
        version: Version number; default: one more than the largest existing version.
        max_story_sentences: Keep the last N sentences of a story (the loader's
            truncation, 70 by default; 130 for task 3); None keeps all.
        top_k: Number of scored candidate answers returned.

    Returns:
        The version folder written.

    Raises:
        ValueError: Inconsistent model and vocabulary, or bad arguments.
        FileExistsError: ``version`` is given and already exists.
    """
    check_model(model, vocabulary_tokens(vocabulary))  # fail before making any folder

    def write(tmp: str) -> dict[str, Any]:
        info = save_babi_servable(model, vocabulary, tmp,
                                  max_story_sentences=max_story_sentences, top_k=top_k)
        write_warmup_requests(os.path.join(tmp, WARMUP_PATH), model_name, WARMUP_INPUTS)
        return info

    return publish_version(export_dir, model_name, version, write)


def publish_version(export_dir, model_name: str, version: int | None, write) -> str:
    """Writes one servable version atomically; returns ``<export_dir>/<model_name>/<v>``.

    ``write(tmp)`` saves the SavedModel into ``tmp`` (a hidden, non-numeric folder
    that servers ignore) and returns a dict for ``assets.extra/export_info.json``.
    The folder is then renamed to the next free integer version (or ``version``),
    so a polling server never sees half an export.

    Raises:
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
    tmp = tempfile.mkdtemp(prefix=".export-tmp-", dir=base)
    try:
        extra = os.path.join(tmp, EXTRA_ASSETS_DIR)
        os.makedirs(extra, exist_ok=True)
        info = write(tmp)
        info.update(model_name=model_name, tensorflow=tf.__version__, created_unix=time.time())
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700.
        for attempt in range(100):
            v = version if version is not None else next_version(base)
            info["version"] = v
            with open(os.path.join(extra, EXPORT_INFO_FILE), "w", encoding="utf-8") as f:
                json.dump(info, f, indent=1)
            target = os.path.join(base, str(v))
            try:
                if os.path.exists(target):
                    raise FileExistsError(target)
                os.rename(tmp, target)  # atomic on one file system
                return target
            except OSError:
                if version is not None or attempt == 99:
                    raise
        raise AssertionError("unreachable")
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m serving.export``: export a saved ``.keras`` model."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m serving.export",
        description="Export a .keras bAbI model to <export_dir>/<model_name>/<version>/.")
    parser.add_argument("--model", required=True, help="model.keras written by train.babi")
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: next to --model)")
    parser.add_argument("--export_dir", required=True, help="TF Serving base folder")
    parser.add_argument("--model_name", default="babi")
    parser.add_argument("--version", type=int, default=None, help="default: next free number")
    parser.add_argument("--max_story_sentences", type=int, default=DEFAULT_MAX_STORY_SENTENCES,
                        help="keep the last N sentences (70; use 130 for task 3; 0 = all)")
    parser.add_argument("--top_k", type=int, default=DEFAULT_TOP_K)
    args = parser.parse_args(argv)

    import keras

    import tpr_keras.models  # noqa: F401  (registers the classes for load_model)

    model = keras.models.load_model(args.model)
    vocab = args.vocab or os.path.join(os.path.dirname(os.path.abspath(args.model)), "vocab.txt")
    path = export_babi_model(model, vocab, args.export_dir, args.model_name,
                             version=args.version,
                             max_story_sentences=args.max_story_sentences or None,
                             top_k=args.top_k)
    print(f"Exported {args.model} to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
