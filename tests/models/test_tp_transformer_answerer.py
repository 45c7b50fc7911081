"""MathAnswerer: the shipped TP-Transformer preset answers Mathematics questions from Python,
greedily and batched, exactly as the SavedModel its ``export`` writes."""

import numpy as np
import pytest
import tensorflow as tf

from tests.serving import saved_models
from tests.serving.shared_exports import preset_export
from tpr_keras.models import MathAnswerer, MathPreprocessor
from tpr_keras.presets import load_preset

#: interpolate questions of the preset's modules with the answers it gives (the right ones).
QUESTIONS = {"What is the hundreds digit of 81379118?": "1",
             "What is the thousands digit of 42433767?": "3",
             "What is the ten millions digit of 87721044?": "8",
             "Which is smaller: 413.34 or -0.099?": "-0.099"}
#: Log-probabilities summed over at most 31 float32 log-softmax steps, eagerly and in a
#: SavedModel's graph: each step a few float32 ulps apart, so 1e-4 absolute.
LOG_PROB_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def answerer():
    return MathAnswerer.from_preset("tp_transformer_math_focus")


def test_the_preset_answers_place_value_and_comparison_questions(answerer):
    assert answerer.generate(list(QUESTIONS)) == list(QUESTIONS.values())
    out = answerer.predict(list(QUESTIONS))
    assert out["answer"].tolist() == list(QUESTIONS.values())
    # a sure answer's float32 log-softmax rounds to exactly 0
    assert (out["log_prob"] <= 0).all() and (out["log_prob"] > np.log(0.5)).all()
    assert out["unknown_characters"].tolist() == [0] * len(QUESTIONS)
    assert answerer.generate("What is the tens digit of 43239795?") == ["9"]
    assert isinstance(answerer.preprocessor, MathPreprocessor)
    assert answerer.tokenizer is answerer.preprocessor


#: Questions of modules the preset was not trained on, and wordings its modules never use.
OUTSIDE = ["Solve 3*x = 6 for x.", "Let f = 2. What is f + 3?", "add 12 to 30",
           "What is the hundred billions digit of 123456789012?"]


def test_questions_outside_the_presets_modules_are_answered_with_no_module(answerer):
    """As bAbI answers a story of unknown words with a word and a non-zero count, the
    math preset answers every question and names the module it has the wording of:
    ``""`` for none of its four."""
    out = answerer.predict(list(QUESTIONS) + OUTSIDE + ["What is 12 + 30?"])
    assert out["module"].tolist() == (
        ["numbers__place_value"] * 3 + ["comparison__pair"] + [""] * len(OUTSIDE)
        + ["arithmetic__add_or_sub"])
    # answered all the same: a greedy answer (an empty one is the end symbol first) with its
    # log-probability, and the questions of its modules answered right
    assert len(out["answer"]) == len(out["log_prob"]) == len(QUESTIONS) + len(OUTSIDE) + 1
    assert np.isfinite(out["log_prob"]).all() and (out["log_prob"] <= 0).all()
    assert out["answer"].tolist()[:len(QUESTIONS)] == list(QUESTIONS.values())
    assert out["answer"][-1] == "42"
    assert answerer.preprocessor.templates.modules == sorted(
        answerer.preset.metadata["evaluation_options"]["modules"])
    # Without templates (a model fresh from training) there is no module to report.
    bare = MathAnswerer(answerer.backbone, MathPreprocessor(answerer.preprocessor.vocabulary))
    assert "module" not in bare.predict(OUTSIDE[0])
    with pytest.raises(ValueError, match="no module templates"):
        bare.preprocessor.module_of(OUTSIDE[0])


def test_max_length_cuts_the_answer(answerer):
    question = "Which is smaller: 413.34 or -0.099?"
    assert answerer.generate(question, max_length=3) == ["-0."]
    assert answerer.predict("Wh@t is 2 ÷ 4?")["unknown_characters"].tolist() == [2]


#: Questions the model does not fully take in: empty, blank, unknown characters (each
#: listed once), longer than the 160 characters it reads.
PARTIAL_QUESTIONS = ["", "  ", "Wh@t is 2 ÷ 4 @?", "What is 2 plus 2?" + " " * 150 + "x" * 20]


def test_every_reply_says_what_the_model_did_not_take_in(answerer):
    """An empty question is answered, not refused (as the served model does), and the reply
    counts its characters; characters past the question length are counted as dropped;
    unknown characters are counted and listed."""
    out = answerer.predict(PARTIAL_QUESTIONS)
    assert out["answer"].shape == (4,)
    assert out["question_characters"].tolist() == [0, 2, 16, 187]
    assert out["dropped_characters"].tolist() == [0, 0, 0, 27]
    assert out["unknown_characters"].tolist()[:3] == [0, 0, 3]
    assert out["unknown_tokens"].tolist()[:3] == ["", "", "@ ÷"]
    assert out["module"].tolist()[:2] == ["", ""]


def test_bad_requests_raise_a_value_error_naming_the_problem(answerer):
    with pytest.raises(ValueError, match="no questions given"):
        answerer.generate([])
    with pytest.raises(ValueError, match="max_length and batch_size must be >= 1"):
        answerer.generate("What is 2 plus 2?", max_length=0)


@pytest.mark.slow
def test_it_scores_the_recorded_sample_of_every_module(answerer, shared_data):
    """The first 50 questions of each evaluated module, as strings, give the exact-match
    accuracy recorded in the preset's evaluation_sample."""
    sample = load_preset("tp_transformer_math_focus").metadata["evaluation_sample"]
    for regime in ("interpolate", "extrapolate"):
        for module, recorded in sample["table"][f"{regime}_accuracy_percent"].items():
            path = shared_data / "mathematics" / regime / f"{module}.txt"
            lines = path.read_text().split("\n")[:2 * sample["limit"]]
            answers = answerer.generate(lines[0::2])
            accuracy = 100 * np.mean(np.array(answers) == np.array(lines[1::2]))
            assert accuracy == pytest.approx(recorded, abs=0.05), (module, accuracy)


@pytest.mark.slow
@pytest.mark.tensorflow_backend  # the exporter traces the model into a TF graph
def test_python_and_the_exported_saved_model_answer_alike(answerer, tmp_path_factory):
    # The preset's export, ``MathAnswerer.from_preset(...).export(folder)``, made once per
    # test run and shared with the serving tests: <folder>/<its model_name>/1.
    path, served_name = preset_export(tmp_path_factory, "tp_transformer_math_focus")
    assert (path.parent.name, path.name) == (answerer.preset.metadata["model_name"], "1")
    assert served_name == answerer.served_name
    serve = saved_models.load(path).signatures["serving_default"]
    questions = (list(QUESTIONS) + ["What is -526 plus 62558774?", "Wh@t is 2 ÷ 4?"]
                 + OUTSIDE + PARTIAL_QUESTIONS)
    served = serve(question=tf.constant(questions))
    ours = answerer.predict(questions)
    assert ours["answer"].tolist() == [a.decode() for a in served["answer"].numpy()]
    assert ours["module"].tolist() == [m.decode() for m in served["module"].numpy()]
    assert "" in ours["module"].tolist() and "arithmetic__add_or_sub" in ours["module"]
    np.testing.assert_array_equal(ours["unknown_characters"],
                                  served["unknown_characters"].numpy())
    assert ours["unknown_characters"].max() > 0
    for key in ("question_characters", "dropped_characters"):
        np.testing.assert_array_equal(ours[key], served[key].numpy(), err_msg=key)
    assert ours["unknown_tokens"].tolist() == [t.decode() for t in
                                               served["unknown_tokens"].numpy()]
    np.testing.assert_allclose(ours["log_prob"], served["log_prob"].numpy(),
                               rtol=0, atol=LOG_PROB_TOLERANCE)
