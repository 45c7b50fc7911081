"""The bAbI exporter: a :class:`BabiAnswerer` as a string-in/string-out SavedModel.

The exporter reads everything from the task model: the backbone, and the vocabulary,
``max_words`` and ``max_story_sentences`` of its :class:`BabiPreprocessor`, so the served
model and ``BabiAnswerer.predict`` are built from one object.

Signatures (the SavedModel that :func:`save_babi_servable` writes):

* ``serving_default`` (:data:`SIGNATURE_KEY`): inputs ``story`` and ``question``
  (``tf.string``, ``[batch]``); outputs ``answer`` (``tf.string``, ``[batch]``),
  ``scores`` (``float32``, ``[batch, k]``, softmax probabilities, best first),
  ``candidates`` (``tf.string``, ``[batch, k]``), and what the model did not take in
  (:data:`REPORT_OUTPUTS`, each ``[batch]``): ``unknown_words`` (``int32``) and
  ``unknown_tokens`` (``tf.string``): how many words of the story and the question are
  not in the model's vocabulary (they all read as ``<unk>``) and which (distinct, in
  order, space-separated); ``story_sentences``: the story's sentences (0: an empty
  story, answered all the same); ``dropped_sentences``: its earliest sentences the
  model did not read (it reads the last ``min(max_story_sentences, memory_size)``);
  ``question_words`` (0: an empty question); ``trained_story_sentences``: the longest
  stories it was trained on (reading more, it answers outside its training). The model
  answers with a word of its vocabulary whatever it is asked; a non-zero count says that
  it did not take in part of the request, however high the score.
* ``classify`` (:data:`~tpr_keras.export.versions.CLASSIFY_SIGNATURE_KEY`): TF
  Serving's Classify API over serialized ``tf.Example`` (input ``inputs``, features
  ``story`` and ``question``, one string each); outputs ``classes`` (the ``k`` candidate
  answers, best first) and ``scores`` (their probabilities): the answer of
  ``serving_default`` as a stock Classify client reads it.
* ``tokenize`` (:data:`TOKENIZE_SIGNATURE_KEY`): the same inputs as ``serving_default``; outputs
  ``story_ids`` (``int32[batch, S, W]``) and ``question_ids`` (``int32[batch, W]``),
  the ids the model sees.

:func:`export_babi_answerer` (what ``BabiAnswerer.export`` calls) puts that SavedModel
into TF Serving's layout (a version folder with a warm-up request and
``export_info.json``, :mod:`tpr_keras.export.versions`);
:func:`export_babi_model` does the same for a bare Keras model and its vocabulary,
through the task model it builds of them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from tpr_keras.data.babi.truncation import DEFAULT_MAX_STORY_SENTENCES
from tpr_keras.data.babi.vocabulary import Vocabulary
from tpr_keras.export.babi_tokenizer import BabiTokenizer
from tpr_keras.export.versions import (
    CLASSIFY_SIGNATURE_KEY,
    SIGNATURE_KEY,
    export_version,
    save_servable,
    traced_once,
)
from tpr_keras.models.babi.babi_answerer import DEFAULT_TOP_K, BabiAnswerer
from tpr_keras.models.babi.babi_preprocessor import BabiPreprocessor

TOKENIZE_SIGNATURE_KEY = "tokenize"
VOCAB_ASSET = "vocab.txt"
#: The outputs of ``serving_default`` beside the answer that say what the model did not
#: take in, with their dtypes (each ``[batch]``).
REPORT_OUTPUTS = {"unknown_words": "int32", "unknown_tokens": "string",
                  "story_sentences": "int32", "dropped_sentences": "int32",
                  "question_words": "int32", "trained_story_sentences": "int32"}
#: One request a fresh version answers before it serves (TF Serving's warm-up).
WARMUP_INPUTS = {"story": ["Mary moved to the bathroom.\nJohn went to the hallway."],
                 "question": ["Where is Mary?"]}


class BabiServingModule(tf.Module):
    """A :class:`BabiAnswerer` with string signatures.

    The exporter of both bAbI families (TPR-RNN and MemN2N read the same ids). The
    in-graph tokenizer takes the preprocessor's ``max_words`` and
    ``max_story_sentences``; the backbone gives the logits.

    Args:
        answerer: the task model (checked by :func:`check_answerer`).
        vocab_file: its preprocessor's vocabulary as a file (one token per line, line i =
            id i): the SavedModel's asset.
        top_k: scored candidate answers returned (at most the vocabulary's size).

    Attributes:
        serve: ``(story, question)`` -> ``{"answer", "scores", "candidates"}`` and
            :data:`REPORT_OUTPUTS` (concrete functions: :func:`traced_once`).
        tokenize: ``(story, question)`` -> ``{"story_ids", "question_ids"}``.
        classify: ``(inputs)`` (serialized ``tf.Example``) -> ``{"classes", "scores"}``.
    """

    def __init__(self, answerer: BabiAnswerer, vocab_file: str,
                 top_k: int = DEFAULT_TOP_K) -> None:
        super().__init__(name="babi_serving")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        preprocessor, model = answerer.preprocessor, answerer.backbone
        self.tokenizer = BabiTokenizer(vocab_file, preprocessor.max_words,
                                       preprocessor.max_story_sentences,
                                       keep_sentence_ends=preprocessor.keep_sentence_ends)
        self.top_k = min(int(top_k), len(preprocessor.vocabulary))
        tokenizer, k = self.tokenizer, self.top_k
        read_limit, trained = answerer.read_limit, preprocessor.trained_story_sentences or 0

        def tokenize(story, question):
            return {"story_ids": tokenizer.story_ids(story),
                    "question_ids": tokenizer.question_ids(question)}

        def serve(story, question):
            tf.debugging.assert_equal(
                tf.shape(story)[0], tf.shape(question)[0],
                message="story and question must hold the same number of strings")
            read = tokenizer.read(story, question, read_limit)
            logits = model({"story": read.pop("story_ids"),
                            "question": read.pop("question_ids")}, training=False)
            logits = tf.cast(logits, tf.float32)
            # top_k on the logits: the first candidate is exactly argmax(logits).
            top_logits, top_ids = tf.math.top_k(logits, k=k)
            log_norm = tf.math.reduce_logsumexp(logits, axis=-1, keepdims=True)
            candidates = tokenizer.decode(top_ids)
            return {"answer": candidates[:, 0], "scores": tf.exp(top_logits - log_norm),
                    "candidates": candidates, **read,
                    "trained_story_sentences": tf.fill(tf.shape(read["story_sentences"]),
                                                       trained)}

        features = {"story": tf.io.FixedLenFeature([], tf.string),
                    "question": tf.io.FixedLenFeature([], tf.string)}

        def classify(inputs):
            parsed = tf.io.parse_example(inputs, features)
            out = serve(parsed["story"], parsed["question"])
            return {"classes": out["candidates"], "scores": out["scores"]}

        specs = [tf.TensorSpec([None], tf.string, name="story"),
                 tf.TensorSpec([None], tf.string, name="question")]
        self.serve = traced_once(serve, specs)
        self.tokenize = traced_once(tokenize, specs)
        self.classify = traced_once(classify, [tf.TensorSpec([None], tf.string, name="inputs")])
        # Track the tf.Variables the traced graph reads, not the Keras model or its
        # keras.Variable wrappers: those are saved as separate copies, and the TF1 loader
        # (the path TF Serving takes) would restore the copies while the graph reads
        # uninitialised originals. Keras' own ExportArchive does the same.
        self.captured_variables = list(self.serve.variables)


def vocabulary_tokens(vocabulary: Any) -> list[str]:
    """The tokens of a ``Vocabulary``, a token list or a ``vocab.txt`` path, checked.

    Raises:
        ValueError: the tokens do not start with ``<pad>``, ``<unk>``, are empty, hold
            whitespace or repeat.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        with open(vocabulary, encoding="utf-8", newline="") as f:
            tokens = f.read().split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
    else:
        tokens = list(getattr(vocabulary, "tokens", vocabulary))
    if tokens[:2] != list(Vocabulary.SPECIALS):
        raise ValueError(f"the vocabulary must start with '<pad>', '<unk>'; got {tokens[:2]}")
    bad = [t for t in tokens if not t or any(c.isspace() for c in t)]
    if bad:
        raise ValueError(f"vocabulary tokens must be non-empty without whitespace; got {bad[:5]}")
    if len(set(tokens)) != len(tokens):
        raise ValueError("duplicate tokens in the vocabulary")
    return tokens


def check_model(model: Any, tokens: Sequence[str]) -> int:
    """``model``'s ``max_words``, after checking that it fits ``tokens``.

    Raises:
        ValueError: no ``max_words`` attribute, or a ``vocabulary_size`` other than
            ``len(tokens)``.
    """
    max_words = getattr(model, "max_words", None)
    if not max_words:
        raise ValueError("the model needs a max_words attribute (word slots per sentence)")
    model_vocab = getattr(model, "vocabulary_size", None)
    if model_vocab is not None and int(model_vocab) != len(tokens):
        raise ValueError(f"the model has vocabulary_size {model_vocab} but the vocabulary "
                         f"holds {len(tokens)} tokens")
    return int(max_words)


def check_answerer(answerer: BabiAnswerer) -> list[str]:
    """The vocabulary tokens of ``answerer``, after checking that its backbone and its
    preprocessor fit each other.

    Raises:
        ValueError: a bad vocabulary (:func:`vocabulary_tokens`), a backbone without
            ``max_words`` or of another ``vocabulary_size``, or a preprocessor whose
            ``max_words`` is not the backbone's.
    """
    tokens = vocabulary_tokens(answerer.preprocessor.vocabulary)
    max_words = check_model(answerer.backbone, tokens)
    if answerer.preprocessor.max_words != max_words:
        raise ValueError(f"the preprocessor has max_words {answerer.preprocessor.max_words} "
                         f"but the model reads {max_words}")
    return tokens


def save_babi_servable(answerer: BabiAnswerer, path: str | os.PathLike,
                       top_k: int = DEFAULT_TOP_K) -> dict[str, Any]:
    """Saves ``answerer`` as a string-signature SavedModel at ``path``.

    Args:
        answerer: the task model: its backbone (``tpr_keras.models.TPRRNN`` or
            ``MemN2N``) and its preprocessor's vocabulary and truncation.
        path: the SavedModel folder.
        top_k: number of scored candidate answers returned.

    Returns:
        The description of the export (signatures, sizes) for ``export_info.json``.

    Raises:
        ValueError: backbone and preprocessor that do not fit, or bad arguments.
    """
    tokens = check_answerer(answerer)
    model, preprocessor = answerer.backbone, answerer.preprocessor
    with tempfile.TemporaryDirectory() as vocab_dir:
        vocab_file = os.path.join(vocab_dir, VOCAB_ASSET)
        with open(vocab_file, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(t + "\n" for t in tokens))
        module = BabiServingModule(answerer, vocab_file, top_k=top_k)
        save_servable(module, path, {
            SIGNATURE_KEY: module.serve, TOKENIZE_SIGNATURE_KEY: module.tokenize,
            CLASSIFY_SIGNATURE_KEY: module.classify})
    return {
        "format": "tpr-keras/babi-serving/1",
        "signatures": {
            SIGNATURE_KEY: {"inputs": {"story": "string[batch]", "question": "string[batch]"},
                            "outputs": {"answer": "string[batch]",
                                        "scores": f"float32[batch, {module.top_k}]",
                                        "candidates": f"string[batch, {module.top_k}]",
                                        **{name: f"{kind}[batch]" for name, kind in
                                           REPORT_OUTPUTS.items()}}},
            TOKENIZE_SIGNATURE_KEY: {"outputs": {"story_ids": "int32[batch, S, W]",
                                                 "question_ids": "int32[batch, W]"}},
            CLASSIFY_SIGNATURE_KEY: {"inputs": {"inputs": "string[batch] (serialized "
                                                          "tf.Example: story, question)"},
                                     "outputs": {"classes": f"string[batch, {module.top_k}]",
                                                 "scores": f"float32[batch, {module.top_k}]"}},
        },
        "max_words": preprocessor.max_words,
        "max_story_sentences": preprocessor.max_story_sentences,
        "read_sentences": answerer.read_limit,
        "trained_story_sentences": preprocessor.trained_story_sentences,
        "top_k": module.top_k,
        "vocabulary_size": len(tokens),
        "sentence_split": "newlines, and after every '.', '?', '!'",
        "model_class": type(model).__name__,
    }


def export_babi_answerer(answerer: BabiAnswerer, export_dir: str | os.PathLike,
                         model_name: str = "babi", *, version: int | None = None,
                         top_k: int = DEFAULT_TOP_K) -> str:
    """Exports ``answerer`` to ``<export_dir>/<model_name>/<version>/`` for TF Serving
    (``BabiAnswerer.export`` calls this).

    Args:
        answerer: The task model.
        export_dir: Base folder; the model goes to ``<export_dir>/<model_name>/<version>``.
        model_name: The served model's name.
        version: Version number; default: one more than the largest existing version.
        top_k: Number of scored candidate answers returned.

    Returns:
        The version folder written.

    Raises:
        ValueError: Backbone and preprocessor that do not fit, or bad arguments.
        FileExistsError: ``version`` is given and already exists.
    """
    check_answerer(answerer)  # fail before making any folder
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    return export_version(export_dir, model_name, version,
                          lambda tmp: save_babi_servable(answerer, tmp, top_k=top_k),
                          WARMUP_INPUTS)


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
    """Exports a bare ``model`` and its vocabulary to ``<export_dir>/<model_name>/<version>/``
    for TF Serving, through their task model (``BabiAnswerer(model,
    BabiPreprocessor(vocabulary, model.max_words, max_story_sentences))``).

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
    tokens = vocabulary_tokens(vocabulary)
    preprocessor = BabiPreprocessor(tokens, check_model(model, tokens), max_story_sentences)
    return export_babi_answerer(BabiAnswerer(model, preprocessor), export_dir, model_name,
                                version=version, top_k=top_k)
