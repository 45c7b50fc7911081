"""Export a trained bAbI model as a string-in/string-out SavedModel for TF Serving.

Layout (TF Serving's)::

    <export_dir>/<model_name>/<version>/saved_model.pb
                                        variables/
                                        assets/vocab.txt
                                        assets.extra/tf_serving_warmup_requests
                                        assets.extra/export_info.json

Versions are positive integers; a new export takes the next number. The version folder is
written under a hidden temporary name and renamed into place, so a server polling the
folder never sees half an export.

Signatures:

* ``serving_default``: inputs ``story`` and ``question`` (``tf.string``, ``[batch]``);
  outputs ``answer`` (``tf.string``, ``[batch]``), ``scores`` (``float32``, ``[batch, k]``,
  softmax probabilities, best first), ``candidates`` (``tf.string``, ``[batch, k]``) and
  ``unknown_words`` (``int32``, ``[batch]``): how many words of the story and the question
  are not in the model's vocabulary (they all read as ``<unk>``). The model answers with a
  word of its vocabulary whatever it is asked; a non-zero count says that it did not
  understand part of the request, however high the score.
* ``tokenize``: the same inputs; outputs ``story_ids`` (``int32[batch, S, W]``) and
  ``question_ids`` (``int32[batch, W]``), the ids the model sees.

In-graph text processing (equal to :func:`tpr_keras.data.babi.tokenize` plus the loader's
padding and truncation, see :class:`BabiTokenizer`): invalid UTF-8 is replaced by U+FFFD;
lower-case; ``. ? ! , ; :`` become tokens of their own; words split on whitespace. A story
splits into sentences at newlines and after every ``.``, ``?`` and ``!``; empty sentences
are dropped; the last ``max_story_sentences`` sentences are kept (the loader's truncation);
each sentence keeps its first ``W`` (= ``model.max_words``) tokens (the Python loader
rejects longer sentences instead). The question is one sentence (its first ``W`` tokens).
Unknown words map to ``<unk>`` (id 1). No ``tf.py_function`` anywhere: stock
``tensorflow_model_server`` loads the export.

``python -m serving.export --model model.keras --vocab vocab.txt --export_dir DIR`` exports
a saved ``.keras`` model.
"""

from __future__ import annotations

import json
import shutil
import os
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from serving.layout import EXTRA_ASSETS_DIR, WARMUP_FILE
from tpr_keras.data.babi import DEFAULT_MAX_STORY_SENTENCES, Vocabulary

__all__ = [
    "BabiServingModule",
    "BabiTokenizer",
    "DEFAULT_MAX_STORY_SENTENCES",
    "DEFAULT_TOP_K",
    "EXPORT_INFO_FILE",
    "SIGNATURE_KEY",
    "TOKENIZE_SIGNATURE_KEY",
    "WARMUP_FILE",
    "export_babi_model",
    "write_warmup_requests",
    "join_story",
    "next_version",
    "read_export_info",
]

SIGNATURE_KEY = "serving_default"
TOKENIZE_SIGNATURE_KEY = "tokenize"
VOCAB_ASSET = "vocab.txt"
EXPORT_INFO_FILE = "export_info.json"
DEFAULT_TOP_K = 5
#: The Python loader's special ids (the in-graph tokenizer gives exactly its ids).
PAD_ID = Vocabulary.PAD_ID
UNK_ID = Vocabulary.UNK_ID

#: Every character Python's ``str.split()`` treats as whitespace, except ``\n`` (which
#: separates sentences), as an RE2 class. ``tests/serving`` checks it against
#: ``str.isspace`` over all of Unicode.
PY_WHITESPACE_EXCEPT_NEWLINE = (
    r"[\t\x0b\x0c\r\x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
    r"\x{202f}\x{205f}\x{3000}]"
)

_WARMUP_STORY = "Mary moved to the bathroom.\nJohn went to the hallway."
_WARMUP_QUESTION = "Where is Mary?"


def join_story(sentences: Sequence[Sequence[str]]) -> str:
    """Story text from tokenized sentences: tokens joined by spaces, sentences by newlines."""
    return "\n".join(" ".join(s) for s in sentences)


class BabiTokenizer(tf.Module):
    """In-graph bAbI tokenizer and encoder: strings -> padded id tensors, ids -> strings.

    Gives exactly the ids of ``tpr_keras.data.babi`` (``tokenize`` + ``Vocabulary.encode``,
    stories truncated to the last ``max_story_sentences`` sentences, 0-padded to ``W``)
    for every story whose sentences are separated by newlines (see the module docstring
    for the splitting rules). The vocabulary file (one token per line, line i = id i)
    becomes a SavedModel asset.

    Args:
        vocab_file: The vocabulary file (as written by ``Vocabulary.save``).
        max_words: ``W``, word slots per sentence and question.
        max_story_sentences: Keep the last N sentences of a story; None keeps all.
    """

    def __init__(self, vocab_file: str, max_words: int,
                 max_story_sentences: int | None = DEFAULT_MAX_STORY_SENTENCES,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        if max_words < 1:
            raise ValueError(f"max_words must be >= 1, got {max_words}")
        if max_story_sentences is not None and max_story_sentences < 1:
            raise ValueError(f"max_story_sentences must be >= 1 or None, got {max_story_sentences}")
        self.max_words = int(max_words)
        self.max_story_sentences = None if max_story_sentences is None else int(max_story_sentences)
        index = tf.lookup.TextFileIndex
        self.word_to_id = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(vocab_file, tf.string, index.WHOLE_LINE,
                                          tf.int64, index.LINE_NUMBER),
            default_value=UNK_ID)
        self.id_to_word = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(vocab_file, tf.int64, index.LINE_NUMBER,
                                          tf.string, index.WHOLE_LINE),
            default_value="<unk>")

    @staticmethod
    def normalize(text: tf.Tensor) -> tf.Tensor:
        """Valid UTF-8, lower case, one space for every kind of whitespace but ``\\n``."""
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                            replacement_char=0xFFFD)
        # ICU's lower-casing drops NUL; make it an ordinary unknown character instead.
        text = tf.strings.regex_replace(text, "\x00", "\ufffd")
        text = tf.strings.lower(text, encoding="utf-8")
        return tf.strings.regex_replace(text, PY_WHITESPACE_EXCEPT_NEWLINE, " ")

    def _lookup(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        return words.with_flat_values(tf.cast(self.word_to_id.lookup(words.flat_values), tf.int32))

    def story_words(self, story: tf.Tensor) -> tf.RaggedTensor:
        """``string[B]`` stories -> their tokens ``[B, (S), (T)]``, nothing cut yet."""
        text = self.normalize(story)
        text = tf.strings.regex_replace(text, r"([.?!])", " \\1 \n")  # sentence ends
        text = tf.strings.regex_replace(text, r"([,;:])", " \\1 ")
        words = tf.strings.split(tf.strings.split(text, sep="\n"))  # [B, (L), (T)]
        nonempty = words.with_values(words.values.row_lengths() > 0)
        return tf.ragged.boolean_mask(words, nonempty)  # [B, (S), (T)]

    def question_words(self, question: tf.Tensor) -> tf.RaggedTensor:
        """``string[B]`` questions -> their tokens ``[B, (T)]``, nothing cut yet."""
        text = tf.strings.regex_replace(self.normalize(question), r"([.?!,;:])", " \\1 ")
        return tf.strings.split(text)

    def unknown_words(self, story: tf.Tensor, question: tf.Tensor) -> tf.Tensor:
        """``int32[B]``: the tokens of each story and question that map to ``<unk>``
        (all of them, also those past the truncation limits)."""
        def count(words):
            ids = words.flat_values if isinstance(words, tf.RaggedTensor) else words
            unknown = tf.cast(tf.equal(self.word_to_id.lookup(ids), UNK_ID), tf.int32)
            return words.with_flat_values(unknown)

        story_unknown = tf.reduce_sum(tf.reduce_sum(count(self.story_words(story)), axis=-1),
                                      axis=-1)
        question_unknown = tf.reduce_sum(count(self.question_words(question)), axis=-1)
        return tf.cast(story_unknown + question_unknown, tf.int32)

    def story_ids(self, story: tf.Tensor) -> tf.Tensor:
        """``string[B]`` stories -> ``int32[B, S, W]`` (S = most sentences in the batch)."""
        words = self.story_words(story)
        if self.max_story_sentences is not None:
            words = words[:, -self.max_story_sentences:]
        words = words[:, :, : self.max_words]
        return self._lookup(words).to_tensor(PAD_ID, shape=[None, None, self.max_words])

    def question_ids(self, question: tf.Tensor) -> tf.Tensor:
        """``string[B]`` questions -> ``int32[B, W]``."""
        words = self.question_words(question)[:, : self.max_words]
        return self._lookup(words).to_tensor(PAD_ID, shape=[None, self.max_words])

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        """Token ids (any integer dtype and shape) -> their tokens."""
        return self.id_to_word.lookup(tf.cast(ids, tf.int64))


class BabiServingModule(tf.Module):
    """A Keras bAbI model (``{"story", "question"}`` ids -> logits) with string signatures.

    Attributes:
        serve: ``tf.function(story, question)`` -> ``{"answer", "scores", "candidates",
            "unknown_words"}``.
        tokenize: ``tf.function(story, question)`` -> ``{"story_ids", "question_ids"}``.
    """

    def __init__(self, model: Any, vocab_file: str, vocabulary_size: int,
                 max_story_sentences: int | None = DEFAULT_MAX_STORY_SENTENCES,
                 top_k: int = DEFAULT_TOP_K) -> None:
        super().__init__(name="babi_serving")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.tokenizer = BabiTokenizer(vocab_file, model.max_words, max_story_sentences)
        self.top_k = min(int(top_k), int(vocabulary_size))
        tokenizer, k = self.tokenizer, self.top_k

        def tokenize(story, question):
            return {"story_ids": tokenizer.story_ids(story),
                    "question_ids": tokenizer.question_ids(question)}

        def serve(story, question):
            tf.debugging.assert_equal(
                tf.shape(story)[0], tf.shape(question)[0],
                message="story and question must hold the same number of strings")
            ids = tokenize(story, question)
            logits = model({"story": ids["story_ids"], "question": ids["question_ids"]},
                           training=False)
            logits = tf.cast(logits, tf.float32)
            # top_k on the logits: the first candidate is exactly argmax(logits).
            top_logits, top_ids = tf.math.top_k(logits, k=k)
            log_norm = tf.math.reduce_logsumexp(logits, axis=-1, keepdims=True)
            candidates = tokenizer.decode(top_ids)
            return {"answer": candidates[:, 0], "scores": tf.exp(top_logits - log_norm),
                    "candidates": candidates,
                    "unknown_words": tokenizer.unknown_words(story, question)}

        specs = [tf.TensorSpec([None], tf.string, name="story"),
                 tf.TensorSpec([None], tf.string, name="question")]
        self.serve = tf.function(serve, input_signature=specs)
        self.tokenize = tf.function(tokenize, input_signature=specs)
        # Track the tf.Variables the traced graph reads, not the Keras model or its
        # keras.Variable wrappers: those are saved as separate copies, and the TF1 loader
        # (the path TF Serving takes) would restore the copies while the graph reads
        # uninitialised originals. Keras' own ExportArchive does the same.
        self.captured_variables = list(self.serve.get_concrete_function().variables)


def _vocab_tokens(vocabulary: Any) -> list[str]:
    if isinstance(vocabulary, (str, os.PathLike)):
        with open(vocabulary, encoding="utf-8", newline="") as f:
            tokens = f.read().split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
    else:
        tokens = list(getattr(vocabulary, "tokens", vocabulary))
    if tokens[:2] != ["<pad>", "<unk>"]:
        raise ValueError(f"the vocabulary must start with '<pad>', '<unk>'; got {tokens[:2]}")
    bad = [t for t in tokens if not t or any(c.isspace() for c in t)]
    if bad:
        raise ValueError(f"vocabulary tokens must be non-empty without whitespace; got {bad[:5]}")
    if len(set(tokens)) != len(tokens):
        raise ValueError("duplicate tokens in the vocabulary")
    return tokens


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


def _write_warmup(path: str, model_name: str) -> None:
    write_warmup_requests(path, model_name,
                          {"story": [_WARMUP_STORY], "question": [_WARMUP_QUESTION]})


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
            attribute (``tpr_keras.models.TPRRNN``).
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
    tokens = _vocab_tokens(vocabulary)
    max_words = getattr(model, "max_words", None)
    if not max_words:
        raise ValueError("the model needs a max_words attribute (word slots per sentence)")
    model_vocab = getattr(model, "vocabulary_size", None)
    if model_vocab is not None and int(model_vocab) != len(tokens):
        raise ValueError(f"the model has vocabulary_size {model_vocab} but the vocabulary "
                         f"holds {len(tokens)} tokens")
    def write(tmp: str) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as vocab_dir:
            vocab_file = os.path.join(vocab_dir, VOCAB_ASSET)
            with open(vocab_file, "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(t + "\n" for t in tokens))
            module = BabiServingModule(model, vocab_file, len(tokens),
                                       max_story_sentences=max_story_sentences, top_k=top_k)
            tf.saved_model.save(
                module, tmp,
                signatures={SIGNATURE_KEY: module.serve.get_concrete_function(),
                            TOKENIZE_SIGNATURE_KEY: module.tokenize.get_concrete_function()})
        _write_warmup(os.path.join(tmp, EXTRA_ASSETS_DIR, WARMUP_FILE), model_name)
        return {
            "format": "tpr-keras/babi-serving/1",
            "signatures": {
                SIGNATURE_KEY: {"inputs": {"story": "string[batch]", "question": "string[batch]"},
                                "outputs": {"answer": "string[batch]",
                                            "scores": f"float32[batch, {module.top_k}]",
                                            "candidates": f"string[batch, {module.top_k}]",
                                            "unknown_words": "int32[batch]"}},
                TOKENIZE_SIGNATURE_KEY: {"outputs": {"story_ids": "int32[batch, S, W]",
                                                     "question_ids": "int32[batch, W]"}},
            },
            "max_words": int(max_words),
            "max_story_sentences": max_story_sentences,
            "top_k": module.top_k,
            "vocabulary_size": len(tokens),
            "sentence_split": "newlines, and after every '.', '?', '!'",
            "model_class": type(model).__name__,
        }

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
