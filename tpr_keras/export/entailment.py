"""The entailment exporter: an :class:`EntailmentClassifier` as a string-pair SavedModel.

It reads the task model's backbone and its preprocessor's character vocabulary, so the
served model and ``EntailmentClassifier.predict`` are built from one object.

Signature ``serving_default``: ``premise`` and ``hypothesis`` (``tf.string[batch]``,
formulas such as ``(a&b)`` and ``a``) -> ``entails`` (``bool[batch]``) and ``probability``
(``float32[batch]``, the model's probability that the premise entails the hypothesis), and
what the model did not take in (:data:`REPORT_OUTPUTS`): ``unknown_characters``
(``int32[batch]``) and ``unknown_tokens`` (``tf.string[batch]``): how many characters of
the pair are outside the formula syntax and which (distinct, premise first,
space-separated); ``premise_well_formed`` and ``hypothesis_well_formed``
(``bool[batch]``): whether each is a formula of the grammar (an empty one is not;
:mod:`~tpr_keras.models.entailment.entailment_grammar`, checked in-graph by
:mod:`~tpr_keras.export.entailment_grammar`). A malformed pair is answered all
the same; its probability means nothing. Signature ``classify``, for TF Serving's Classify
API: serialized ``tf.Example`` (input ``inputs``; features ``premise`` and ``hypothesis``,
one string each) -> ``classes`` (``["entails", "does not entail"]`` for every example, in
that order) and ``scores`` (their probabilities, ``p`` and ``1 - p``). Characters become
ids in the graph (:class:`EntailmentTokenizer`, the same ids as
``tpr_keras.data.entailment.tokenize``): whitespace is ignored and any other unknown
character maps to ``<unk>``, never an error. :func:`export_entailment_classifier` (what
``EntailmentClassifier.export`` calls) puts the SavedModel into TF Serving's layout
(:mod:`tpr_keras.export.versions`); :func:`export_entailment_model` does the same
for a bare Keras model, through its task model.
"""

import os
import tempfile

import tensorflow as tf

from tpr_keras.data.entailment import save_vocabulary
from tpr_keras.export.entailment_grammar import well_formed
from tpr_keras.export.entailment_tokenizer import EntailmentTokenizer
from tpr_keras.export.unknown_tokens import join_distinct_rows
from tpr_keras.export.versions import (
    CLASSIFY_SIGNATURE_KEY,
    SIGNATURE_KEY,
    export_version,
    save_servable,
    traced_once,
)
from tpr_keras.models.entailment.entailment_classifier import EntailmentClassifier
from tpr_keras.models.entailment.entailment_preprocessor import EntailmentPreprocessor

VOCAB_ASSET = "entailment_vocab.txt"
#: One request a fresh version answers before it serves (TF Serving's warm-up).
WARMUP_INPUTS = {"premise": ["(a>b)"], "hypothesis": ["(~b>~a)"]}
#: The outputs of ``serving_default`` beside the answer that say what the model did not
#: take in, with their dtypes (each ``[batch]``).
REPORT_OUTPUTS = {"unknown_characters": "int32", "unknown_tokens": "string",
                  "premise_well_formed": "bool", "hypothesis_well_formed": "bool"}
#: The classes of the ``classify`` signature, in the order of its scores.
CLASSES = ("entails", "does not entail")


class EntailmentServingModule(tf.Module):
    """String-pair wrapper of an :class:`EntailmentClassifier`.

    Like the other exporters, the Keras model is only closed over; the module tracks the
    variables its traced function reads, so TF1 loading (TF Serving's path) works.

    Args:
        classifier: the task model (its backbone: a ``PlainEntailmentModel`` or
            ``BiDAFEntailmentModel``, ``{"a", "b"}`` ids -> logit).
        vocab_file: its preprocessor's character vocabulary as a file (becomes an asset).
    """

    def __init__(self, classifier, vocab_file):
        super().__init__(name="entailment_serving")
        self.tokenizer = EntailmentTokenizer(vocab_file)
        tokenizer, model = self.tokenizer, classifier.backbone

        def serve(premise, hypothesis):
            logits = model({"a": tokenizer(premise), "b": tokenizer(hypothesis)},
                           training=False)
            probability = tf.sigmoid(tf.reshape(tf.cast(logits, tf.float32), [-1]))
            unknown = tf.concat([tokenizer.unknown_characters(premise),
                                 tokenizer.unknown_characters(hypothesis)], axis=1)
            return {"entails": probability > 0.5, "probability": probability,
                    "unknown_characters": tf.cast(unknown.row_lengths(), tf.int32),
                    "unknown_tokens": join_distinct_rows(unknown),
                    "premise_well_formed": well_formed(premise),
                    "hypothesis_well_formed": well_formed(hypothesis)}

        features = {"premise": tf.io.FixedLenFeature([], tf.string),
                    "hypothesis": tf.io.FixedLenFeature([], tf.string)}

        def classify(inputs):
            parsed = tf.io.parse_example(inputs, features)
            p = serve(parsed["premise"], parsed["hypothesis"])["probability"]
            classes = tf.tile(tf.constant([CLASSES]), [tf.shape(p)[0], 1])
            return {"classes": classes, "scores": tf.stack([p, 1.0 - p], axis=1)}

        spec = [tf.TensorSpec([None], tf.string, name="premise"),
                tf.TensorSpec([None], tf.string, name="hypothesis")]
        self.serve = traced_once(serve, spec)
        self.classify = traced_once(classify, [tf.TensorSpec([None], tf.string, name="inputs")])
        self.captured_variables = list(self.serve.variables)


def save_entailment_servable(classifier, path):
    """Saves ``classifier`` (an :class:`EntailmentClassifier`) as a string-pair SavedModel
    at ``path``; returns its description (for ``export_info.json``)."""
    with tempfile.TemporaryDirectory() as vocab_dir:
        vocab_file = os.path.join(vocab_dir, VOCAB_ASSET)
        save_vocabulary(vocab_file, classifier.preprocessor.vocabulary)
        module = EntailmentServingModule(classifier, vocab_file)
        save_servable(module, path, {
            SIGNATURE_KEY: module.serve, CLASSIFY_SIGNATURE_KEY: module.classify})
    return {"format": "tpr-keras/entailment-serving/1",
            "model_class": type(classifier.backbone).__name__,
            "signatures": {SIGNATURE_KEY: {
                "inputs": {"premise": "string[batch]", "hypothesis": "string[batch]"},
                "outputs": {"entails": "bool[batch]", "probability": "float32[batch]",
                            **{name: f"{kind}[batch]" for name, kind in
                               REPORT_OUTPUTS.items()}}},
                CLASSIFY_SIGNATURE_KEY: {
                    "inputs": {"inputs": "string[batch] (serialized tf.Example: premise, "
                                         "hypothesis)"},
                    "outputs": {"classes": "string[batch, 2]", "scores": "float32[batch, 2]"}}}}


def export_entailment_classifier(classifier, export_dir, model_name="entailment", *,
                                 version=None):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout) of
    ``classifier``; returns it (``EntailmentClassifier.export`` calls this).

    ``version`` defaults to one more than the largest existing version.

    Raises:
        FileExistsError: ``version`` is given and already exists.
    """
    return export_version(export_dir, model_name, version,
                          lambda tmp: save_entailment_servable(classifier, tmp), WARMUP_INPUTS)


def export_entailment_model(model, export_dir, model_name="entailment", version=None):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout) of a bare
    entailment model, through its task model (``EntailmentClassifier(model,
    EntailmentPreprocessor())``); returns it.

    ``version`` defaults to one more than the largest existing version.

    Raises:
        FileExistsError: ``version`` is given and already exists.
    """
    return export_entailment_classifier(EntailmentClassifier(model, EntailmentPreprocessor()),
                                        export_dir, model_name, version=version)
