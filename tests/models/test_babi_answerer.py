"""BabiAnswerer: the shipped bAbI presets answer strings in Python, and exactly as the
SavedModel their ``export`` writes (same answers, candidates and unknown-word counts; scores
within float32 rounding)."""

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data.babi import BABI_TASK_NAMES, parse_babi_file
from tpr_keras.export.versions import read_export_info
from tpr_keras.models import BabiAnswerer, BabiPreprocessor
from tpr_keras.models.babi.babi_answerer import top_k_softmax
from tpr_keras.models.babi.babi_preprocessor import story_text
from tpr_keras.presets import PresetError, load_preset, shipped_presets

PRESETS = sorted(shipped_presets(task="babi"))  # every shipped bAbI preset
TASK1 = "Mary went to the kitchen. John moved to the garden."
#: bAbI-style requests of several tasks: (story, question, answer of the TPR-RNN preset).
REQUESTS = [
    (TASK1, "Where is Mary?", "kitchen"),  # task 1
    (["Sandra went to the office.", "Sandra journeyed to the hallway."],
     "Where is Sandra?", "hallway"),  # task 1, a story as its sentences
    ("John picked up the football.\nJohn went to the bedroom.\nMary went to the garden.",
     "Where is the football?", "bedroom"),  # task 2
    ("Daniel went to the bathroom. Daniel moved to the office.",
     "Is Daniel in the office?", "yes"),  # task 6
    ("Mary went to Paris. Zorblax moved to the garden.", "Where is Mary?", None),  # unknown
]
#: Float32 softmax scores of one model computed eagerly and in a SavedModel's graph: the
#: same float32 ops, possibly fused or reordered, so they agree to a few ulps of the
#: logits; 1e-5 (about 80 float32 ulps) is far below any score difference that matters.
SCORE_TOLERANCE = 1e-5


@pytest.fixture(scope="module", params=PRESETS)
def answerer(request):
    return BabiAnswerer.from_preset(request.param)


def test_the_tpr_rnn_preset_answers_a_task_1_story():
    answerer = BabiAnswerer.from_preset("tpr_rnn_babi_all_tasks")
    out = answerer.predict(TASK1, "Where is Mary?")
    assert out["answer"].tolist() == ["kitchen"]
    assert out["scores"].shape == (1, 1) and out["scores"][0, 0] > 0.9
    assert out["unknown_words"].tolist() == [0]
    assert isinstance(answerer.backbone, __import__("keras").Model)
    assert answerer.tokenizer is answerer.preprocessor
    assert isinstance(answerer.preprocessor, BabiPreprocessor)
    assert repr(answerer) == "BabiAnswerer(TPRRNN from 'tpr_rnn_babi_all_tasks')"


def test_every_babi_preset_answers_the_requests(answerer):
    stories, questions, answers = zip(*REQUESTS)
    out = answerer.predict(list(stories), list(questions), top_k=3)
    known = [i for i, a in enumerate(answers) if a is not None]
    if answerer.preset.name == "tpr_rnn_babi_all_tasks":
        assert out["answer"][known].tolist() == [answers[i] for i in known]
    else:  # the others (MemN2N: 13 % mean test error) get the task-1 questions right
        assert out["answer"][:2].tolist() == ["kitchen", "hallway"]
    assert out["unknown_words"].tolist() == [0, 0, 0, 0, 2]  # "paris", "zorblax"
    assert out["candidates"].shape == out["scores"].shape == (len(REQUESTS), 3)
    np.testing.assert_array_equal(out["candidates"][:, 0], out["answer"])
    assert (np.diff(out["scores"], axis=1) <= 0).all()  # best first
    assert (out["scores"].sum(axis=1) <= 1 + SCORE_TOLERANCE).all()


def test_batches_and_single_requests_agree(answerer):
    stories, questions, _ = zip(*REQUESTS)
    together = answerer.predict(list(stories), list(questions), top_k=2, batch_size=2)
    for i, (story, question) in enumerate(zip(stories, questions)):
        alone = answerer.predict(story, question, top_k=2)
        assert alone["answer"][0] == together["answer"][i]
        np.testing.assert_allclose(alone["scores"][0], together["scores"][i],
                                   rtol=SCORE_TOLERANCE, atol=SCORE_TOLERANCE)


def test_bad_requests_raise_a_value_error_naming_the_problem(answerer):
    with pytest.raises(ValueError, match="mismatched list lengths: stories: 2, questions: 1"):
        answerer.predict([TASK1, TASK1], ["Where is Mary?"])
    with pytest.raises(ValueError, match="no questions given"):
        answerer.predict([], [])
    with pytest.raises(ValueError, match=r"stories\[1\] is neither a string nor a list"):
        answerer.predict([TASK1, 3], ["Where is Mary?", "Where is John?"])
    with pytest.raises(ValueError, match=r"questions\[0\] is a int"):
        answerer.predict([TASK1], [3])
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        answerer.predict(TASK1, "Where is Mary?", top_k=0)


#: Requests a model does not fully take in: an empty story, an empty question, a story
#: longer than the model reads, unknown words (story first, each once).
LONG_STORY = " ".join(f"Mary moved to the {'kitchen' if i % 2 else 'garden'}."
                      for i in range(299)) + " John went to the hallway."
PARTIAL_REQUESTS = [("", "Where is Mary?"), (TASK1, " ?! "), (LONG_STORY, "Where is Mary?"),
                    ("Zork went to Paris. Mary went to the kitchen.", "Where is Zork?")]


def test_every_reply_says_what_the_model_did_not_take_in(answerer):
    """An empty story or question is answered, not refused (as the served model does), and
    the reply counts it; sentences past what the model reads are counted as dropped (the
    earliest ones); unknown words are counted and listed."""
    stories, questions = zip(*PARTIAL_REQUESTS)
    out = answerer.predict(list(stories), list(questions))
    assert out["answer"].shape == (4,) and all(out["answer"])
    assert out["story_sentences"].tolist() == [0, 2, 300, 2]
    read = answerer.read_limit  # TPR-RNN: the served truncation; MemN2N: its memory
    assert read == (50 if "memn2n" in str(answerer.preset.path) else 130)
    assert out["dropped_sentences"].tolist() == [0, 0, 300 - read, 0]
    assert out["question_words"][1] == (0 if not answerer.preprocessor.keep_sentence_ends
                                        else 2)  # "?" "!" are tokens TPR-RNN reads
    assert out["question_words"][[0, 2, 3]].tolist() == [out["question_words"][0]] * 3
    assert out["trained_story_sentences"].tolist() == [70] * 4
    assert out["unknown_words"][3] == 3 and out["unknown_tokens"][3] == "zork paris"
    assert out["unknown_tokens"][0] == out["unknown_tokens"][2] == ""
    # Alone, an empty story is a batch of zero sentence rows (MemN2N once failed on it).
    alone = answerer.predict("", "Where is Mary?")
    assert alone["answer"][0] and alone["story_sentences"].tolist() == [0]


def test_a_preset_of_another_task_is_refused():
    with pytest.raises(PresetError, match="not 'babi'.*EntailmentClassifier.from_preset"):
        BabiAnswerer.from_preset("tpru32_entailment")
    with pytest.raises(PresetError, match="Unknown preset 'no_such_preset'"):
        BabiAnswerer.from_preset("no_such_preset")


def test_top_k_softmax_breaks_ties_toward_the_lower_id():
    ids, probabilities = top_k_softmax(np.array([[0.0, 2.0, 2.0, -1.0]], np.float32), 3)
    assert ids.tolist() == [[1, 2, 0]]
    want = np.exp([2.0, 2.0, 0.0]) / np.exp([0.0, 2.0, 2.0, -1.0]).sum()
    np.testing.assert_allclose(probabilities[0], want, rtol=1e-6)  # float32 rounding


@pytest.mark.slow
def test_asked_the_test_stories_as_text_it_scores_the_recorded_sample(answerer, shared_data):
    """The official test questions, as sentence strings, give each task's recorded error
    (evaluation_sample: the first 50 questions of every test file)."""
    sample = load_preset(answerer.preset.name).metadata["evaluation_sample"]
    for task, recorded in sample["table"]["test_error_percent"].items():
        path = shared_data / "babi" / "en-10k" / f"qa{task}_{BABI_TASK_NAMES[int(task)]}_test.txt"
        samples = parse_babi_file(path, int(task))[:sample["limit"]]
        out = answerer.predict([[" ".join(s) for s in x.story] for x in samples],
                               [" ".join(x.question) for x in samples])
        assert out["unknown_words"].sum() == 0
        error = 100 * np.mean(out["answer"] != np.array([x.answer for x in samples]))
        assert error == pytest.approx(recorded, abs=0.05), (task, error, recorded)


@pytest.mark.tensorflow_backend  # the exporter module imports TensorFlow
def test_a_preprocessor_that_does_not_fit_the_backbone_is_not_exported(tmp_path):
    answerer = BabiAnswerer.from_preset("tpr_rnn_babi_all_tasks")
    tokens, width = answerer.preprocessor.vocabulary.tokens, answerer.preprocessor.max_words
    wider = BabiAnswerer(answerer.backbone, BabiPreprocessor(tokens, width + 1))
    with pytest.raises(ValueError, match=f"max_words {width + 1} but the model reads {width}"):
        wider.export(tmp_path)
    shorter = BabiAnswerer(answerer.backbone, BabiPreprocessor(tokens[:-1], width))
    with pytest.raises(ValueError, match=f"vocabulary holds {len(tokens) - 1} tokens"):
        shorter.export(tmp_path)
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        answerer.export(tmp_path, top_k=0)
    assert not list(tmp_path.iterdir())  # refused before any folder is made


@pytest.mark.slow
@pytest.mark.tensorflow_backend  # the exporter traces the model into a TF graph
def test_python_and_the_exported_saved_model_answer_alike(answerer, tmp_path):
    path = answerer.export(tmp_path, top_k=3)
    assert path == str(tmp_path / answerer.preset.metadata["model_name"] / "1")
    info = read_export_info(path)  # the exporter read the preprocessor's settings
    assert info["max_story_sentences"] == answerer.preprocessor.max_story_sentences == 130
    assert info["max_words"] == answerer.preprocessor.max_words and info["top_k"] == 3
    serve = tf.saved_model.load(path).signatures["serving_default"]
    assert info["read_sentences"] == answerer.read_limit
    assert info["trained_story_sentences"] == 70
    stories, questions, _ = zip(*REQUESTS)
    stories, questions = stories + tuple(s for s, _ in PARTIAL_REQUESTS), questions + tuple(
        q for _, q in PARTIAL_REQUESTS)
    # the same batch both ways: a story's padding sentences are the batch's
    served = serve(story=tf.constant([story_text(s) for s in stories]),
                   question=tf.constant(list(questions)))
    ours = answerer.predict(list(stories), list(questions), top_k=3)
    np.testing.assert_array_equal(ours["answer"], served["answer"].numpy().astype(str))
    np.testing.assert_array_equal(ours["candidates"],
                                  served["candidates"].numpy().astype(str))
    for key in ("unknown_words", "story_sentences", "dropped_sentences", "question_words",
                "trained_story_sentences"):
        np.testing.assert_array_equal(ours[key], served[key].numpy(), err_msg=key)
    np.testing.assert_array_equal(ours["unknown_tokens"],
                                  served["unknown_tokens"].numpy().astype(str))
    np.testing.assert_allclose(ours["scores"], served["scores"].numpy(),
                               rtol=SCORE_TOLERANCE, atol=SCORE_TOLERANCE)
