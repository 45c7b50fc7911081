"""Every reply says what the model did not take in, alike over gRPC, REST, the
client and its command, for the three families; an empty input is answered (never a
TensorFlow error); an error the graph raises reaches the user without its node dump.

Real models: the shipped MemN2N and entailment presets (MemN2N once failed on an empty
story with ``Reduction axis -1 is empty ... [[{{node mem_n2n_1/memn2n_1/ArgMax}}]]``) and
an untrained tiny TP-Transformer; the TPR-RNN preset (trained on no story longer than 70
sentences but task 3's, it reads 130).
"""

import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_service_pb2_grpc

from serving.client import main
from serving.client.model_clients import BabiClient, EntailmentClient, MathClient
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer
from tests.serving import fuzz
from tests.serving.shared_exports import preset_export
from tpr_keras.data.mathematics import CharVocabulary
from tpr_keras.models import MathAnswerer, MathPreprocessor, TPTransformer

LONG_STORY = " ".join(f"Mary moved to the {'kitchen' if i % 2 else 'garden'}."
                      for i in range(299)) + " John went to the hallway."


@pytest.fixture(scope="module")
def served(tmp_path_factory, make_model_config):
    base = tmp_path_factory.mktemp("partial")
    # The presets' exports (TaskModel.from_preset(name).export), shared with tests/presets.
    presets = {name: preset_export(tmp_path_factory, preset)[0].parent for name, preset in (
        ("memn2n", "memn2n_babi_all_tasks"), ("tpr_rnn", "tpr_rnn_babi_all_tasks"),
        ("entailment", "tpru32_entailment"))}
    vocab = CharVocabulary.build("What is 2 plus 3?0123456789")
    tf.keras.utils.set_random_seed(0)
    # One layer: a reply reports what the question held, whatever the model's depth.
    math_model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                               vocabulary=vocab.tokens, num_encoder_layers=1,
                                               num_decoder_layers=1)
    MathAnswerer(math_model, MathPreprocessor(vocab, max_length=40)).export(base, "math")
    broken = tf.Module()  # a signature whose kernel refuses some inputs
    broken.f = tf.function(lambda x: {"y": tf.strings.to_number(x)},
                           input_signature=[tf.TensorSpec([None], tf.string, name="x")])
    tf.saved_model.save(broken, str(base / "broken" / "1"),
                        signatures={"serving_default": broken.f.get_concrete_function()})
    configs = [make_model_config(name, presets.get(name, base / name))
               for name in ("memn2n", "tpr_rnn", "entailment", "math", "broken")]
    server = ModelServer(ModelManager(configs), port=0, rest_api_port=0).start()
    yield server
    server.stop(grace=2)


def clients(server, cls, name):
    return [cls(f"127.0.0.1:{server.port}", name),
            cls(f"127.0.0.1:{server.rest_api_port}", name, rest=True)]


def test_babi_empty_long_and_unknown_inputs_are_answered_and_reported(served):
    stories = ["", LONG_STORY, "Zork went to Paris.", "Mary went to the kitchen."]
    questions = ["Where is Mary?", "Where is Mary?", "Where is Zork?", ""]
    for client in clients(served, BabiClient, "memn2n"):
        with client:
            replies = client.ask_batch(stories, questions)
        assert [r.story_sentences for r in replies] == [0, 300, 1, 1]
        assert [r.dropped_sentences for r in replies] == [0, 250, 0, 0]  # memory_size 50
        assert [r.question_words for r in replies][3] == 0
        assert [r.unknown_tokens for r in replies] == ["", "", "zork paris", ""]
        assert all(r.answer for r in replies)
        warned = [r.warnings() for r in replies]
        assert warned[0] == ["the story is empty: the model answered from no sentences at "
                             "all, so the answer (whatever its score) means nothing."]
        assert warned[1] == ["the story has 300 sentences and the model reads only the last "
                             "50: the first 250 were dropped, so the answer ignores them."]
        # distinct words, as listed ("zork" twice: 3 occurrences in the export's count)
        assert [r.unknown_words for r in replies] == [0, 0, 2, 0]
        assert warned[2][0].startswith("2 word(s) of the story and question are not in the "
                                       "model's vocabulary (zork, paris); it read them")
        assert warned[3][0].startswith("the question is empty")


def test_a_model_reading_more_than_its_training_stories_says_so(served):
    """The TPR-RNN preset reads a story's last 130 sentences (the served truncation), and
    was trained on stories cut at 70 (all tasks but task 3): a 300-sentence story gets a
    confident wrong answer, and the reply must say what was dropped and what is untrained."""
    with BabiClient(f"127.0.0.1:{served.port}", "tpr_rnn") as client:
        reply = client.ask(LONG_STORY, "Where is Mary?")
    assert (reply.story_sentences, reply.dropped_sentences) == (300, 170)
    assert reply.trained_story_sentences == 70
    assert reply.warnings()[:2] == [
        "the story has 300 sentences and the model reads only the last 130: the first 170 "
        "were dropped, so the answer ignores them.",
        "the model read 130 sentences, more than the 70 its training stories had: it "
        "answers outside its training, so the answer may be wrong (whatever its score)."]


def test_the_command_prints_each_warning_on_stderr(served, capsys):
    assert main(["--server", f"127.0.0.1:{served.port}", "--model_name", "memn2n",
                 "--story", "", "--question", "Where is Mary?"]) == 0
    printed = capsys.readouterr()
    assert printed.out.split("\n")[0] and printed.err.startswith(
        "warning: the story is empty: the model answered from no sentences at all")
    assert main(["--server", f"127.0.0.1:{served.rest_api_port}", "--rest", "--premise",
                 "p AND q", "--hypothesis", "P or Q"]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(("entails (probability", "does not entail (probability"))
    assert printed.err.splitlines() == [
        "warning: the premise is empty or not a formula of the grammar (variables a-z, "
        "~(F), (F&F), (F|F), (F>F)); the model answered all the same, so the probability "
        "means nothing.",
        "warning: the hypothesis is empty or not a formula of the grammar (variables a-z, "
        "~(F), (F&F), (F|F), (F>F)); the model answered all the same, so the probability "
        "means nothing.",
        "warning: 5 character(s) of the premise and hypothesis are not in the formula "
        "syntax ('A', 'N', 'D', 'P', 'Q'); the model read them as <unk>."]
    assert main(["--server", f"127.0.0.1:{served.port}", "--model_name", "math",
                 "--question", "What is 2 @ 3 ÷ 4?"]) == 0
    assert ("warning: 2 character(s) of the question are not in the model's vocabulary "
            "('@', '÷'); it read them as <unk>.") in capsys.readouterr().err.splitlines()


def test_strict_exits_3_on_each_familys_warnings(served, capsys):
    """``--strict``: status 3 when the reply carries any warning, the answer printed all
    the same; 0 for a reply without one."""
    at = ["--server", f"127.0.0.1:{served.port}"]
    for argv, status in (
            (["--model_name", "memn2n", "--story", "", "--question", "Where is Mary?"], 3),
            (["--model_name", "memn2n", "--story", LONG_STORY, "--question", "Where is Mary?"],
             3),
            (["--model_name", "memn2n", "--story", "Mary went to the kitchen.", "--question",
              "Where is Mary?"], 0),
            (["--premise", "p AND q", "--hypothesis", "P or Q"], 3),
            (["--premise", "(a&b", "--hypothesis", "a"], 3),
            (["--premise", "(p&q)", "--hypothesis", "p"], 0),
            (["--model_name", "math", "--question", "What is 2 @ 3?"], 3),
            (["--model_name", "math", "--question", ""], 3),
            (["--model_name", "math", "--question", "What is 2 plus 3?" + "9" * 30], 3),
            (["--model_name", "math", "--question", "What is 2 plus 3?"], 0)):
        assert main([*at, *argv, "--strict"]) == status, argv
        printed = capsys.readouterr()
        assert printed.out.strip() and ("warning: " in printed.err) == (status == 3), argv
        assert main([*at, *argv]) == 0
        capsys.readouterr()


def test_entailment_and_math_report_alike_over_grpc_and_rest(served):
    for client in clients(served, EntailmentClient, "entailment"):
        with client:
            replies = client.entails_batch(["(p&q)", "", "(p & q)"], ["p", "q", "q"])
        assert [r.premise_well_formed for r in replies] == [True, False, True]
        assert [r.hypothesis_well_formed for r in replies] == [True] * 3
        assert [r.warnings() for r in replies][2] == []
    for client in clients(served, MathClient, "math"):
        with client:
            replies = client.solve_batch(["", "What is 2 plus 3?" + "9" * 30])
        assert [(r.question_characters, r.dropped_characters) for r in replies] == [
            (0, 0), (47, 7)]
        assert replies[0].warnings()[0].startswith("the question is empty")
        assert replies[1].warnings() == [
            "the question has 47 characters and the model reads only the first 40: the "
            "last 7 were dropped."]


def test_an_error_the_graph_raises_has_no_node_dump(served):
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = fuzz.predict_request(fuzz.Target(served.port, None, "broken", ("x", "x")),
                                       [("abc", "abc")])
        with pytest.raises(grpc.RpcError) as caught:
            stub.Predict(request, timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    message = caught.value.details()
    assert message.startswith("the model could not run on this input: ") and "abc" in message
    assert "[[" not in message and "node" not in message and "\n" not in message, message
    with MathClient(f"127.0.0.1:{served.rest_api_port}", "broken", rest=True) as client:
        with pytest.raises(RuntimeError) as rest_error:
            client.predict({"x": ["abc"]})
    assert "could not run on this input" in str(rest_error.value)
    assert "[[" not in str(rest_error.value)
