"""serving.export: layout, graph contents, in-graph tokenizer == Python loader, TF1/CLI loads."""

import json
import os
import subprocess
import sys
import urllib.request

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from serving.export import export_babi_model
from tpr_keras.data import babi
from tpr_keras.data.babi.text import PY_WHITESPACE_EXCEPT_NEWLINE
from tpr_keras.export.babi_tokenizer import BabiTokenizer, join_story
from tpr_keras.export.versions import next_version, read_export_info

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def vocab_file(tmp_path, vocab):
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    return str(path)


def loader_ids(samples, vocab, max_words, limit):
    """The Python loader's ids: int32[N, S, W] stories (padded), int32[N, W] questions."""
    enc = babi.encode_samples(samples, vocab, max_words=max_words, max_story_sentences=limit)
    stories = np.zeros((len(enc), max(enc.max_story_length, 0), max_words), np.int32)
    for i in range(len(enc)):
        story = enc.story(i)
        stories[i, : len(story)] = story
    return stories, enc.questions


def graph_ids(tokenizer, stories, questions):
    story = tokenizer.story_ids(tf.constant(stories, tf.string)).numpy()
    question = tokenizer.question_ids(tf.constant(questions, tf.string)).numpy()
    return story, question


# --------------------------------------------------------------------------------------
# Layout and graph
# --------------------------------------------------------------------------------------


def test_layout_versions_assets_and_info(export_base, version_dir, task1):
    assert sorted(os.listdir(os.path.join(export_base, "babi"))) == ["1"]
    for part in ("saved_model.pb", "variables", "assets/vocab.txt",
                 "assets.extra/tf_serving_warmup_requests"):
        assert os.path.exists(os.path.join(version_dir, part)), part
    with open(os.path.join(version_dir, "assets", "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == list(task1.vocab.tokens)
    info = read_export_info(version_dir)
    assert info["version"] == 1 and info["max_words"] == task1.max_words
    assert info["max_story_sentences"] == 70 and info["top_k"] == 5
    assert next_version(os.path.join(export_base, "babi")) == 2


def test_new_export_takes_next_version(tmp_path, model, task1):
    base = tmp_path / "exports"
    os.makedirs(base / "m" / "7" / "variables")  # an existing version, even a broken one
    os.makedirs(base / "m" / "not_a_version")
    path = export_babi_model(model, task1.vocab.tokens, base, "m", top_k=3)
    assert os.path.basename(path) == "8" and read_export_info(path)["top_k"] == 3
    assert not [n for n in os.listdir(base / "m") if n.startswith(".")]  # no temp left
    with pytest.raises(FileExistsError):
        export_babi_model(model, task1.vocab, base, "m", version=8)
    with pytest.raises(ValueError, match="vocabulary_size"):
        export_babi_model(model, ["<pad>", "<unk>", "a"], base, "m")


def test_graph_has_no_py_function(version_dir):
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    ops = set()
    for meta in sm.meta_graphs:
        ops.update(n.op for n in meta.graph_def.node)
        for fn in meta.graph_def.library.function:
            ops.update(n.op for n in fn.node_def)
    assert ops and not ops & {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
    assert {"HashTableV2", "LookupTableFindV2", "StaticRegexReplace", "StringSplitV2"} <= ops
    sig = sm.meta_graphs[0].signature_def["serving_default"]
    assert sorted(sig.inputs) == ["question", "story"]
    assert sorted(sig.outputs) == ["answer", "candidates", "dropped_sentences",
                                   "question_words", "scores", "story_sentences",
                                   "trained_story_sentences", "unknown_tokens",
                                   "unknown_words"]


# --------------------------------------------------------------------------------------
# In-graph tokenizer == the Python loader
# --------------------------------------------------------------------------------------


def test_whitespace_class_matches_python():
    chars = [chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000]
    python = {c for c in chars if c.isspace()} - {"\n", " "}
    text = tf.constant(["".join(chars).encode("utf-8")])
    replaced = tf.strings.regex_replace(text, PY_WHITESPACE_EXCEPT_NEWLINE, "\x00").numpy()[0]
    got = {c for c, r in zip(chars, replaced.decode("utf-8")) if r == "\x00" and c != "\x00"}
    assert got == python


@pytest.fixture(scope="module")
def several_tasks(task1):
    """All test stories of tasks 1, 2, 3 (long stories), 8 (lists), 14 and 19."""
    root = os.path.join(REPO, "..", "shared", "data", "babi")
    try:
        root = babi.find_babi_dir(root, download=False)
    except FileNotFoundError:
        pytest.skip("needs ../shared/data/babi")
    return {t: babi.parse_babi_file(babi.task_files(root, t)[1]) for t in (1, 2, 3, 8, 14, 19)}


def test_tokenizer_equals_loader_on_all_test_stories(tmp_path, several_tasks):
    vocab = babi.Vocabulary.from_samples(s for samples in several_tasks.values() for s in samples)
    path = vocab_file(tmp_path, vocab)
    for task, samples in several_tasks.items():
        limit = babi.resolve_limits(None, [task])[task]  # the loader's default: 70, 130
        width = max(len(t) for s in samples for t in (*s.story, s.question))
        tokenizer = BabiTokenizer(path, width, limit)
        want = loader_ids(samples, vocab, width, limit)
        stories = [join_story(s.story) for s in samples]
        questions = [" ".join(s.question) for s in samples]
        got = graph_ids(tokenizer, stories, questions)
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"task {task} stories")
        np.testing.assert_array_equal(got[1], want[1], err_msg=f"task {task} questions")
        # Every bAbI statement ends with '.', so one line gives the same sentences.
        one_line = graph_ids(tokenizer, [" ".join(" ".join(t) for t in s.story)
                                         for s in samples], questions)
        np.testing.assert_array_equal(one_line[0], want[0], err_msg=f"task {task} one line")


def test_unknown_words_get_unk_id(tmp_path, several_tasks):
    vocab = babi.Vocabulary.from_samples(several_tasks[1])  # task 2 has words task 1 lacks
    samples = several_tasks[2][:300]
    tokenizer = BabiTokenizer(vocab_file(tmp_path, vocab), 12, 70)
    want = loader_ids(samples, vocab, 12, 70)
    got = graph_ids(tokenizer, [join_story(s.story) for s in samples],
                    [" ".join(s.question) for s in samples])
    assert (want[0] == babi.Vocabulary.UNK_ID).any()
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_tokenizer_equals_python_tokenize_on_messy_text(tmp_path):
    """Random case, punctuation and Unicode whitespace: ids equal tokenize + encode.

    Known difference (documented): a word with a NUL character is always unknown in the
    graph, so the vocabulary here holds no such token.
    """
    words = ["Mary", "KITCHEN", "went", "to", "the", "Ärger", "straße", "ǅ", "İx", "x\x00y"]
    vocab = babi.Vocabulary.build(
        {t for w in words[:-1] for t in babi.tokenize(w)} | {".", "?", ",", "!", ";", ":"})
    tokenizer = BabiTokenizer(vocab_file(tmp_path, vocab), 40, None)
    seps = [" ", "  ", "\t", "\u3000", "\xa0", "\u2003", "\x1f", "\r", "\x0b", "", ",", ";",
            ":", "?", "!", "."]
    rng = np.random.default_rng(0)
    questions = ["".join(str(rng.choice(words)) + str(rng.choice(seps)) for _ in range(12))
                 for _ in range(300)]
    got = tokenizer.question_ids(tf.constant(questions)).numpy()
    for text, row in zip(questions, got):
        want = vocab.encode(babi.tokenize(text))[:40]
        assert row.tolist() == want + [0] * (40 - len(want)), repr(text)


def test_sentence_splitting_truncation_and_odd_input(tmp_path, task1):
    vocab = task1.vocab
    tokenizer = BabiTokenizer(vocab_file(tmp_path, vocab), 4, 3)
    ids = tokenizer.story_ids(tf.constant([
        "Mary went to the kitchen.John went to the garden!\n\nwhere? is\rmary",
        "",
        "a. b. c. d. e.",
        b"Mary \xff\xfe went\xc3 .",
    ])).numpy()
    assert ids.shape == (4, 3, 4)  # S = 3 = max_story_sentences; W = 4 truncates
    enc = vocab.encode
    np.testing.assert_array_equal(ids[0], [enc(["john", "went", "to", "the"]),
                                           enc(["where", "?"]) + [0, 0],
                                           enc(["is", "mary"]) + [0, 0]])
    assert not ids[1].any()  # empty story: no sentences
    np.testing.assert_array_equal(ids[2][:, :2], [enc(["c", "."]), enc(["d", "."]),
                                                  enc(["e", "."])])  # the last 3
    assert ids[3][0].tolist() == enc(["mary", "\ufffd\ufffd", "went\ufffd", "."])
    empty = tokenizer.story_ids(tf.constant(["", "  \n "])).numpy()
    assert empty.shape == (2, 0, 4)


# --------------------------------------------------------------------------------------
# Loading the export as TF Serving does
# --------------------------------------------------------------------------------------


def test_tf2_load_tokenize_signature_equals_loader(version_dir, task1):
    loaded = tf.saved_model.load(version_dir)
    out = loaded.signatures["tokenize"](story=tf.constant(task1.stories),
                                        question=tf.constant(task1.questions))
    np.testing.assert_array_equal(out["story_ids"].numpy(), task1.story_ids())
    np.testing.assert_array_equal(out["question_ids"].numpy(), task1.question_ids())


def _assert_same_answers(answers, scores, keras_answers):
    want, logits = keras_answers
    top2 = np.sort(logits, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4  # near-ties may flip with float reordering
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(np.asarray(answers)[clear], want[clear])
    probs = tf.nn.softmax(logits).numpy().max(-1)
    np.testing.assert_allclose(scores[:, 0], probs, rtol=1e-4, atol=1e-6)


def test_tf1_session_signature_def_equals_keras(version_dir, task1, keras_answers):
    """The C++ server's path: a TF1 Session fed by the SignatureDef's tensor names."""
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], version_dir)
        sig = meta.signature_def["serving_default"]
        out = sess.run({k: v.name for k, v in sig.outputs.items()},
                       {sig.inputs["story"].name: task1.stories,
                        sig.inputs["question"].name: task1.questions})
    assert out["candidates"].shape == (len(task1.samples), 5)
    _assert_same_answers([a.decode() for a in out["answer"]], out["scores"], keras_answers)


def test_saved_model_cli_run_equals_keras(version_dir, task1, keras_answers, tmp_path):
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, story=np.array([s.encode() for s in task1.stories]),
             question=np.array([q.encode() for q in task1.questions]))
    outdir = tmp_path / "out"
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    cmd = [cli] if os.path.exists(cli) else [
        sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]
    done = subprocess.run(
        [*cmd, "run", "--dir", version_dir, "--tag_set", "serve",
         "--signature_def", "serving_default",
         "--inputs", f"story={inputs}[story];question={inputs}[question]",
         "--outdir", str(outdir)],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    answers = [a.decode() for a in np.load(outdir / "answer.npy", allow_pickle=True)]
    scores = np.load(outdir / "scores.npy")
    _assert_same_answers(answers, scores, keras_answers)


def test_serving_default_answers_batch_0_and_empty_story(version_dir):
    fn = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = fn(story=tf.constant([], tf.string), question=tf.constant([], tf.string))
    assert out["answer"].shape == (0,) and out["scores"].shape == (0, 5)
    out = fn(story=tf.constant([""]), question=tf.constant(["where is mary?"]))
    assert out["answer"].shape == (1,) and np.isfinite(out["scores"].numpy()).all()


def test_export_info_is_json(version_dir):
    with open(os.path.join(version_dir, "assets.extra", "export_info.json")) as f:
        assert json.load(f)["signatures"]["serving_default"]["inputs"]["story"] == "string[batch]"


def test_serving_default_counts_unknown_words(version_dir, task1):
    """``unknown_words``: story and question words outside the vocabulary, per request,
    also those past the truncation limits; punctuation and case do not count."""
    assert {"mary", "went", "to", "the", "kitchen", "where", "is"} <= set(task1.vocab.tokens)
    assert not {"alice", "flew", "paris", "capital", "france", "what", "of"} & set(
        task1.vocab.tokens)
    fn = tf.saved_model.load(version_dir).signatures["serving_default"]
    long_question = "Where is " + " ".join(["mary"] * 30) + " alice?"  # past max_words
    out = fn(story=tf.constant(["Mary went to the kitchen.",
                                "MARY went to the kitchen. Alice flew to Paris.",
                                "Mary went to the kitchen.", "", ""]),
             question=tf.constant(["Where is Mary?", "Where is Alice?",
                                   "What is the capital of France?", long_question,
                                   "alice alice"]))
    assert out["unknown_words"].dtype == tf.int32
    assert out["unknown_words"].numpy().tolist() == [0, 4, 4, 1, 2]
    with open(os.path.join(version_dir, "assets.extra", "export_info.json")) as f:
        outputs = json.load(f)["signatures"]["serving_default"]["outputs"]
    assert outputs["unknown_words"] == "int32[batch]"


def test_classify_signature_answers_a_stock_classify_client(server, stub, task1):
    """TF Serving's Classify API over tf.Examples (features story, question): the classes
    and scores are serving_default's candidates and scores."""
    from tensorflow_serving.apis import classification_pb2, predict_pb2

    request = classification_pb2.ClassificationRequest()
    request.model_spec.name, request.model_spec.signature_name = "babi", "classify"
    for story, question in zip(task1.stories[:3], task1.questions[:3]):
        features = request.input.example_list.examples.add().features.feature
        features["story"].bytes_list.value.append(story.encode())
        features["question"].bytes_list.value.append(question.encode())
    response = stub.Classify(request, timeout=60)
    predict = predict_pb2.PredictRequest()
    predict.model_spec.name = "babi"
    for key, values in (("story", task1.stories[:3]), ("question", task1.questions[:3])):
        predict.inputs[key].CopyFrom(tf.make_tensor_proto([v.encode() for v in values]))
    expected = stub.Predict(predict, timeout=60).outputs
    candidates = tf.make_ndarray(expected["candidates"]).astype(str).tolist()
    assert [[c.label for c in row.classes] for row in
            response.result.classifications] == candidates
    np.testing.assert_allclose([[c.score for c in row.classes] for row in
                                response.result.classifications],
                               tf.make_ndarray(expected["scores"]), rtol=1e-6)
    # REST :classify, TF Serving's JSON: [[label, score], ...] per example
    body = json.dumps({"signature_name": "classify", "examples": [
        {"story": task1.stories[0], "question": task1.questions[0]}]}).encode()
    with urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{server.rest_api_port}/v1/models/babi:classify", body),
            timeout=60) as resp:
        results = json.load(resp)["results"]
    assert [label for label, _ in results[0]] == candidates[0]
