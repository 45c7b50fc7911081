"""EntailmentClassifier: the shipped entailment preset decides formula pairs from Python,
scores its recorded test_exam accuracy, and answers as the SavedModel its ``export`` writes."""

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.models import EntailmentClassifier, EntailmentPreprocessor
from tpr_keras.presets import load_preset

PRESET = "tpru32_entailment"
#: test_exam pairs (premise, hypothesis, entails) the preset decides confidently.
PAIRS = [("(p&q)", "(p|q)", True), ("~((p>q))", "(p&~(q))", True),
         ("~((p>q))", "(q&~(p))", False), ("(p&(p>q))", "~(q)", False),
         ("((p|~(q))&(r>~(p)))", "(q>~(r))", True)]
#: A sigmoid of float32 logits computed eagerly and in a SavedModel's graph: the same ops,
#: possibly fused, so a few float32 ulps apart; 1e-5 is about 80 ulps at 1.
PROBABILITY_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def classifier():
    return EntailmentClassifier.from_preset(PRESET)


def test_the_preset_decides_exam_pairs(classifier):
    premises, hypotheses, entails = zip(*PAIRS)
    out = classifier.predict(list(premises), list(hypotheses))
    assert out["entails"].tolist() == list(entails)
    assert out["probability"].dtype == np.float32
    assert ((out["probability"] > 0.95) | (out["probability"] < 0.05)).all()
    assert out["unknown_characters"].tolist() == [0] * len(PAIRS)
    one = classifier.predict("(p & q)", "(p | q)")  # spaces are ignored
    np.testing.assert_allclose(one["probability"], out["probability"][:1],
                               rtol=PROBABILITY_TOLERANCE)
    assert classifier.predict("(P&Q)", "P")["unknown_characters"].tolist() == [3]
    assert classifier.tokenizer is classifier.preprocessor
    assert isinstance(classifier.preprocessor, EntailmentPreprocessor)


def test_it_scores_the_recorded_exam_accuracy(classifier, shared_data):
    lines = (shared_data / "entailment" / "test_exam.txt").read_text().split("\n")
    rows = [line.split(",") for line in lines if line]
    out = classifier.predict([r[0] for r in rows], [r[1] for r in rows])
    accuracy = 100 * np.mean(out["entails"] == np.array([r[2] == "1" for r in rows]))
    recorded = load_preset(PRESET).metadata["evaluation"]["table"]["accuracy_percent"]
    assert accuracy == pytest.approx(recorded["test_exam"], abs=1e-6)  # 100 pairs: exact


def test_bad_requests_raise_a_value_error_naming_the_problem(classifier):
    with pytest.raises(ValueError, match="mismatched list lengths: premises: 2, hypotheses: 1"):
        classifier.predict(["(p&q)", "p"], ["p"])
    with pytest.raises(ValueError, match="no premises given"):
        classifier.predict([], [])


#: Pairs the model does not fully take in: natural-language "p AND q" / "P or Q", an empty
#: hypothesis, a malformed premise of known characters, a well-formed pair.
PARTIAL_PAIRS = [("p AND q", "P or Q"), ("(p&q)", " \t"), ("(p&q", "p"), ("(p & q)", "q")]


def test_every_reply_says_what_the_model_did_not_take_in(classifier):
    """Malformed and empty formulas are answered, not refused (as the served model does),
    and reported; unknown characters are counted and listed (distinct, premise first)."""
    out = classifier.predict(*map(list, zip(*PARTIAL_PAIRS)))
    assert out["probability"].shape == (4,)
    assert out["premise_well_formed"].tolist() == [False, True, False, True]
    assert out["hypothesis_well_formed"].tolist() == [False, False, True, True]
    assert out["unknown_characters"].tolist() == [5, 0, 0, 0]  # A N D P Q
    assert out["unknown_tokens"].tolist() == ["A N D P Q", "", "", ""]


@pytest.mark.slow
@pytest.mark.tensorflow_backend  # the exporter traces the model into a TF graph
def test_python_and_the_exported_saved_model_answer_alike(classifier, tmp_path):
    path = classifier.export(tmp_path, "pairs", version=3)
    assert path == str(tmp_path / "pairs" / "3")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    premises, hypotheses = [p for p, _, _ in PAIRS] + ["(P&Q)"], [h for _, h, _ in PAIRS] + ["P"]
    premises += [p for p, _ in PARTIAL_PAIRS]
    hypotheses += [h for _, h in PARTIAL_PAIRS]
    served = serve(premise=tf.constant(premises), hypothesis=tf.constant(hypotheses))
    ours = classifier.predict(premises, hypotheses)
    np.testing.assert_array_equal(ours["entails"], served["entails"].numpy())
    for key in ("unknown_characters", "premise_well_formed", "hypothesis_well_formed"):
        np.testing.assert_array_equal(ours[key], served[key].numpy(), err_msg=key)
    np.testing.assert_array_equal(ours["unknown_tokens"],
                                  served["unknown_tokens"].numpy().astype(str))
    np.testing.assert_allclose(ours["probability"], served["probability"].numpy(),
                               rtol=PROBABILITY_TOLERANCE, atol=PROBABILITY_TOLERANCE)
