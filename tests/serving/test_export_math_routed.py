"""A routed math SavedModel: each question decoded in-graph by its module's decoder, as
``MathAnswerer.predict`` does, also through the TF1 Session path TF Serving uses."""

import numpy as np
import pytest
import tensorflow as tf

from tests.serving.saved_models import load, tf1_session_outputs
from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.data.mathematics.expression_patterns import EXPRESSION_PATTERNS
from tpr_keras.export.tp_transformer_tokenizer import MathTokenizer
from tpr_keras.models import MathAnswerer, MathPreprocessor, TPTransformer
from tpr_keras.models.tp_transformer.routed_tp_transformer import RoutedTPTransformer

# Routes: by a template (pair, place value), by the sum's expression pattern, by none.
QUESTIONS = ["Which is bigger: 3 or 7/2?", "What is the tens digit of 2934?",
             "Is 12 at most 13?", "Let x = 3. What is x + x?", "Is 5 at most 4?",
             "Calculate -(4 - 5) + 2 - (-3 + 1).", "What is 1 + 2?", "4 - 9 + 2"]
SUM = "arithmetic__add_sub_multiple"
TEMPLATES = ModuleTemplates({"comparison__pair": ["Which is bigger: N or N/N?",
                                                  "Is N at most N?"],
                             "numbers__place_value": ["What is the tens digit of N?"],
                             SUM: []}, {SUM: EXPRESSION_PATTERNS[SUM]})
ROUTES = [1, 0, 1, 0, 1, 1, 0, 1]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    vocab = CharVocabulary.build("".join(QUESTIONS) + "0123456789TrueFalse")

    def tiny(seed):  # one layer each: routing picks whole decoders, whatever their depth
        tf.keras.utils.set_random_seed(seed)
        return TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                             vocabulary=vocab.tokens, num_encoder_layers=1,
                                             num_decoder_layers=1)

    parts = [tiny(1), tiny(2)]
    routed = RoutedTPTransformer(parts[0], {"expert": parts[1]},
                                 {"comparison__pair": "expert", SUM: "expert"})
    answerer = MathAnswerer(routed, MathPreprocessor(vocab, templates=TEMPLATES))
    path = answerer.export(tmp_path_factory.mktemp("export"), "math")
    return answerer, parts, vocab, path


def test_served_answers_are_the_routed_answerers(exported):
    answerer, parts, vocab, path = exported
    served = load(path).signatures
    expected = answerer.predict(QUESTIONS)
    for questions, rows in ((QUESTIONS, slice(None)), (QUESTIONS[1:2], slice(1, 2)),
                            (QUESTIONS[2:3], slice(2, 3))):  # mixed; one route only
        out = served["serving_default"](question=tf.constant(questions))
        assert [a.decode() for a in out["answer"].numpy()] == expected["answer"][rows].tolist()
        np.testing.assert_allclose(out["log_prob"].numpy(), expected["log_prob"][rows],
                                   rtol=1e-5)
        assert [m.decode() for m in out["module"].numpy()] == expected["module"][rows].tolist()
    assert expected["module"][5:].tolist() == [SUM, "", SUM]  # the pattern, in Python
    # Beam search: each row's decoder's best hypothesis.
    ids = MathTokenizer(vocab).encode(tf.constant(QUESTIONS), 160)
    beams = [[vocab.decode(r) for r in p.beam_search(ids, 4, 31)[0].numpy()] for p in parts]
    out = served["beam"](question=tf.constant(QUESTIONS))
    assert [a.decode() for a in out["answer"].numpy()] == [
        beams[r][i] for i, r in enumerate(ROUTES)]
    assert beams[0] != beams[1]  # the routes decode differently: the check can fail


def test_tf1_session_answers_like_the_saved_model(exported):
    _, _, _, path = exported
    expected = load(path).signatures["serving_default"](
        question=tf.constant(QUESTIONS))["answer"].numpy()
    assert list(tf1_session_outputs(path, "answer", question=QUESTIONS)) == list(expected)
