"""SavedModel export of a TP-Transformer for the Mathematics Dataset.

Signature ``serving_default``: ``question`` (``tf.string[batch]``) →
``answer`` (``tf.string[batch]``, greedy-decoded in-graph with the key/value
cache inside one ``tf.while_loop``) and ``log_prob`` (``float32[batch]``, the
log-probability of the decoded answer). ``beam`` does the same with beam
search. Characters are encoded and decoded with lookup tables saved as an
asset (the model's character vocabulary); unknown characters map to
``<unk>``, questions are cut at 160 characters, answers at 30. The export carries a
warm-up request (``assets.extra/tf_serving_warmup_requests``) for each signature, so
that the first real request does not pay for building the decoding loop's kernels.
"""

import os


import tensorflow as tf

from serving.export import publish_version, write_warmup_requests
from serving.layout import WARMUP_PATH
from tpr_keras.data.mathematics import (MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH,
                                        make_char_table)

SIGNATURE_KEY = "serving_default"
BEAM_SIGNATURE_KEY = "beam"
WARMUP_QUESTION = "What is the tens digit of 2934?"


class MathServingModule(tf.Module):
    """String-in/string-out wrapper of a trained :class:`TPTransformer`.

    The Keras model is only closed over, never tracked: the module tracks the
    variables its traced functions read, so the TF1 loader (TF Serving's path)
    restores exactly the variables the graph uses (see ``serving.export``).
    """

    def __init__(self, model, vocab, beam_size=4):
        super().__init__(name="math_serving")
        self.chars = make_char_table(vocab)
        self.beam_size = int(beam_size)
        chars, beam_size, max_length = self.chars, self.beam_size, MAX_ANSWER_LENGTH + 1
        spec = [tf.TensorSpec([None], tf.string, name="question")]

        def serve(question):
            ids = chars.encode(question, MAX_QUESTION_LENGTH)
            out, log_prob = model.greedy_decode(ids, max_length=max_length)
            return {"answer": chars.decode(out), "log_prob": log_prob}

        def beam(question):
            ids = chars.encode(question, MAX_QUESTION_LENGTH)
            out, log_prob = model.beam_search(ids, beam_size, max_length)
            return {"answer": chars.decode(out), "log_prob": log_prob}

        self.serve = tf.function(serve, input_signature=spec)
        self.beam = tf.function(beam, input_signature=spec)
        captured = {id(v): v for f in (self.serve, self.beam)
                    for v in f.get_concrete_function().variables}
        self.captured_variables = list(captured.values())


def export_math_model(model, vocab, export_dir, model_name="math", version=None, beam_size=4):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout); returns it."""

    def write(tmp):
        module = MathServingModule(model, vocab, beam_size)
        tf.saved_model.save(module, tmp, signatures={
            SIGNATURE_KEY: module.serve.get_concrete_function(),
            BEAM_SIGNATURE_KEY: module.beam.get_concrete_function()})
        write_warmup_requests(os.path.join(tmp, WARMUP_PATH), model_name,
                              {"question": [WARMUP_QUESTION]})
        return {"format": "tpr-keras/math-serving/1", "model_class": type(model).__name__,
                "vocabulary_size": len(vocab), "max_question_length": MAX_QUESTION_LENGTH,
                "max_answer_length": MAX_ANSWER_LENGTH, "beam_size": beam_size}

    return publish_version(export_dir, model_name, version, write)
