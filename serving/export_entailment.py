"""SavedModel export of a logical-entailment model (TPRU, LSTM or GRU encoder).

Signature ``serving_default``: ``premise`` and ``hypothesis`` (``tf.string[batch]``, formulas
such as ``(a&b)`` and ``a``) → ``entails`` (``bool[batch]``) and ``probability``
(``float32[batch]``, the model's probability that the premise entails the hypothesis).
Characters map to ids in the graph through the saved character vocabulary; whitespace is
ignored and any other unknown character maps to ``<unk>``, never an error.
"""

import os
import tempfile

import tensorflow as tf

from serving.export import publish_version, write_warmup_requests
from serving.layout import WARMUP_PATH
from tpr_keras.data.entailment import UNK_ID, VOCABULARY

SIGNATURE_KEY = "serving_default"
VOCAB_ASSET = "entailment_vocab.txt"


class EntailmentServingModule(tf.Module):
    """String-pair wrapper of a trained entailment model (``{"a", "b"}`` ids -> logit).

    Like the other exports, the Keras model is only closed over; the module tracks the
    variables its traced function reads, so TF1 loading (TF Serving's path) works.
    """

    def __init__(self, model, vocab_file):
        super().__init__(name="entailment_serving")
        self.vocab_asset = tf.saved_model.Asset(vocab_file)
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                self.vocab_asset, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER),
            default_value=UNK_ID)
        table = self.table

        def encode(texts):
            texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
            texts = tf.strings.regex_replace(texts, r"\s+", "")
            chars = tf.strings.unicode_split(texts, "UTF-8")
            ids = tf.cast(tf.ragged.map_flat_values(table.lookup, chars), tf.int32)
            # At least one column, so a batch of empty formulas is still a valid input.
            width = tf.maximum(tf.reduce_max(tf.concat([ids.row_lengths(), [0]], 0)), 1)
            return ids.to_tensor(0, shape=tf.stack([tf.shape(texts, tf.int64)[0], width]))

        def serve(premise, hypothesis):
            logits = model({"a": encode(premise), "b": encode(hypothesis)}, training=False)
            probability = tf.sigmoid(tf.reshape(tf.cast(logits, tf.float32), [-1]))
            return {"entails": probability > 0.5, "probability": probability}

        spec = [tf.TensorSpec([None], tf.string, name="premise"),
                tf.TensorSpec([None], tf.string, name="hypothesis")]
        self.serve = tf.function(serve, input_signature=spec)
        self.captured_variables = list(self.serve.get_concrete_function().variables)


def export_entailment_model(model, export_dir, model_name="entailment", version=None):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout); returns it."""

    def write(tmp):
        with tempfile.TemporaryDirectory() as vocab_dir:
            vocab_file = os.path.join(vocab_dir, VOCAB_ASSET)
            with open(vocab_file, "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(token + "\n" for token in VOCABULARY))
            module = EntailmentServingModule(model, vocab_file)
            tf.saved_model.save(module, tmp,
                                signatures={SIGNATURE_KEY: module.serve.get_concrete_function()})
        write_warmup_requests(os.path.join(tmp, WARMUP_PATH), model_name,
                              {"premise": ["(a>b)"], "hypothesis": ["(~b>~a)"]})
        return {"format": "tpr-keras/entailment-serving/1", "model_class": type(model).__name__,
                "signatures": {SIGNATURE_KEY: {
                    "inputs": {"premise": "string[batch]", "hypothesis": "string[batch]"},
                    "outputs": {"entails": "bool[batch]", "probability": "float32[batch]"}}}}

    return publish_version(export_dir, model_name, version, write)
