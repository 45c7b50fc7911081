"""Decoders of one architecture share one traced decoding function
(tpr_keras.backend.tensorflow.shared_traces), and each still answers exactly as it does
alone, inside another trace (as the math export calls it) and eagerly (as the math tables
do)."""

import re

import numpy as np
import tensorflow as tf

from tpr_keras.backend.tensorflow.shared_traces import architecture, shared_traces
from tpr_keras.data.mathematics import CharVocabulary
from tpr_keras.export.tp_transformer_tokenizer import MathTokenizer
from tpr_keras.models import TPTransformer

QUESTIONS = ["What is 12 + 30?", "Is 5 at most 4?", "Sort 3, 1, 2."]


def tiny(seed, vocab, layers=1):
    tf.keras.utils.set_random_seed(seed)
    return TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                         vocabulary=vocab.tokens, num_encoder_layers=1,
                                         num_decoder_layers=layers)


def while_bodies(concrete):
    """How many while-loop bodies the traced graph's function library holds."""
    return sum(bool(re.fullmatch(r"while(_\d+)?_body_\d+", f.signature.name))
               for f in concrete.graph.as_graph_def().library.function)


def test_one_trace_per_architecture_and_each_decoder_answers_as_alone():
    vocab = CharVocabulary.build("".join(QUESTIONS) + "0123456789TrueFalse")
    decoders = [tiny(1, vocab), tiny(2, vocab), tiny(3, vocab, layers=2)]
    assert architecture(decoders[0]) == architecture(decoders[1])
    assert architecture(decoders[0]) != architecture(decoders[2])
    ids = MathTokenizer(vocab).encode(tf.constant(QUESTIONS), 40)

    def greedy(decoder, part):
        return decoder.greedy_decode(part, max_length=8)

    def traced(shared):
        def fn(part):
            calls = (shared_traces(decoders, greedy) if shared else
                     [lambda p, d=d: greedy(d, p) for d in decoders])
            return [call(part) for call in calls]
        return tf.function(fn, autograph=False).get_concrete_function(
            tf.TensorSpec([None, None], tf.int32))

    shared, alone = traced(True), traced(False)
    # Two architectures: one decoding loop each (the loop nests no other), against three.
    assert while_bodies(shared) == 2 and while_bodies(alone) == 3
    # The shared function reads each decoder's own variables, all of them.
    assert len(shared.variables) == len(alone.variables) == sum(
        len(d.weights) for d in decoders)
    for (ids_s, lp_s), (ids_a, lp_a) in zip(shared(ids), alone(ids)):
        np.testing.assert_array_equal(ids_s.numpy(), ids_a.numpy())
        np.testing.assert_array_equal(lp_s.numpy(), lp_a.numpy())
    answers = [out[0].numpy().tolist() for out in alone(ids)]
    assert answers[0] != answers[1]  # the weights differ: sharing the wrong ones would show


def test_eager_calls_with_a_signature_answer_as_each_decoder_alone():
    vocab = CharVocabulary.build("".join(QUESTIONS) + "0123456789TrueFalse")
    decoders = [tiny(1, vocab), tiny(2, vocab)]
    spec = [tf.TensorSpec([None, None], tf.int32)]

    def greedy(decoder, part):
        return decoder.greedy_decode(part, max_length=8)

    shared = shared_traces(decoders, greedy, spec)
    alone = [tf.function(lambda p, d=d: greedy(d, p), input_signature=spec, autograph=False)
             for d in decoders]
    tokenizer = MathTokenizer(vocab)
    for questions, length in ((QUESTIONS, 40), (QUESTIONS[:2], 24)):  # any batch, any length
        ids = tokenizer.encode(tf.constant(questions), length)
        for call, own in zip(shared, alone):
            (ids_s, lp_s), (ids_a, lp_a) = call(ids), own(ids)
            np.testing.assert_array_equal(ids_s.numpy(), ids_a.numpy())
            np.testing.assert_array_equal(lp_s.numpy(), lp_a.numpy())
        assert shared[0](ids)[0].numpy().tolist() != shared[1](ids)[0].numpy().tolist()
