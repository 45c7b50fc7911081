"""The TP-Transformer exporter: a trained model as a string-in/string-out SavedModel.

Signature ``serving_default``: ``question`` (``tf.string[batch]``) -> ``answer``
(``tf.string[batch]``, greedy-decoded in-graph with the key/value cache inside one
``tf.while_loop``) and ``log_prob`` (``float32[batch]``, the log-probability of the
decoded answer). ``beam`` does the same with beam search. Characters are encoded and
decoded in the graph (:class:`MathTokenizer`, the ids of
``CharVocabulary.encode_question``): unknown characters map to ``<unk>``, questions are
cut at 160 characters, answers at 30. :func:`export_math_model` puts the SavedModel into
TF Serving's layout (:mod:`tpr_keras.models.tf_serving_layout`) with a warm-up request,
so that the first real request does not pay for building the decoding loop's kernels.
"""

import tensorflow as tf

from tpr_keras.data.mathematics import MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH
from tpr_keras.models.tf_serving_layout import SIGNATURE_KEY, export_version
from tpr_keras.models.tp_transformer.tp_transformer_tokenizer import MathTokenizer

BEAM_SIGNATURE_KEY = "beam"
#: One request a fresh version answers before it serves (TF Serving's warm-up).
WARMUP_INPUTS = {"question": ["What is the tens digit of 2934?"]}


class MathServingModule(tf.Module):
    """String-in/string-out wrapper of a trained :class:`TPTransformer`.

    The Keras model is only closed over, never tracked: the module tracks the
    variables its traced functions read, so the TF1 loader (TF Serving's path)
    restores exactly the variables the graph uses.

    Args:
        model: a :class:`TPTransformer`.
        vocab: its :class:`~tpr_keras.data.mathematics.CharVocabulary`.
        beam_size: hypotheses of the ``beam`` signature.
    """

    def __init__(self, model, vocab, beam_size=4):
        super().__init__(name="math_serving")
        self.chars = MathTokenizer(vocab)
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

        # The decoders' loops are keras.ops.while_loop already: no autograph.
        self.serve = tf.function(serve, input_signature=spec, autograph=False)
        self.beam = tf.function(beam, input_signature=spec, autograph=False)
        captured = {id(v): v for f in (self.serve, self.beam)
                    for v in f.get_concrete_function().variables}
        self.captured_variables = list(captured.values())


def save_math_servable(model, vocab, path, beam_size=4):
    """Saves ``model`` as a string-in/string-out SavedModel at ``path``; returns its
    description (for ``export_info.json``)."""
    module = MathServingModule(model, vocab, beam_size)
    tf.saved_model.save(module, str(path), signatures={
        SIGNATURE_KEY: module.serve.get_concrete_function(),
        BEAM_SIGNATURE_KEY: module.beam.get_concrete_function()})
    return {"format": "tpr-keras/math-serving/1", "model_class": type(model).__name__,
            "vocabulary_size": len(vocab), "max_question_length": MAX_QUESTION_LENGTH,
            "max_answer_length": MAX_ANSWER_LENGTH, "beam_size": beam_size}


def export_math_model(model, vocab, export_dir, model_name="math", version=None, beam_size=4):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout); returns it.

    ``version`` defaults to one more than the largest existing version.

    Raises:
        FileExistsError: ``version`` is given and already exists.
    """
    return export_version(export_dir, model_name, version,
                          lambda tmp: save_math_servable(model, vocab, tmp, beam_size),
                          WARMUP_INPUTS)
