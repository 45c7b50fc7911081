"""The Mathematics SavedModel: in-graph greedy decoding equals the Keras model."""

import numpy as np
import pytest
import tensorflow as tf

from tests.serving.saved_models import load, tf1_session_outputs
from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.export.tp_transformer import MathServingModule
from tpr_keras.export.tp_transformer_tokenizer import MathTokenizer
from tpr_keras.models import MathAnswerer, MathPreprocessor, TPTransformer

QUESTIONS = ["What is the tens digit of 2934?", "Round 7.6 to the nearest integer.",
             "", "Let x = 3. What is x + x?", "ÿ is not in the vocabulary"]
#: The modules the untrained model "was trained on": the first two questions' wordings.
TEMPLATES = ModuleTemplates({"numbers__place_value": ["What is the tens digit of N?"],
                             "numbers__round_number": ["Round N to the nearest integer."]})
MODULES = ["numbers__place_value", "numbers__round_number", "", "", ""]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    vocab = CharVocabulary.build("".join(QUESTIONS[:4]) + "0123456789")
    tf.keras.utils.set_random_seed(0)
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                      vocabulary=vocab.tokens)
    answerer = MathAnswerer(model, MathPreprocessor(vocab, templates=TEMPLATES))
    path = answerer.export(tmp_path_factory.mktemp("export"), "math")
    return model, vocab, path


def test_layout_no_pyfunc_and_no_gradient_functions(exported):
    """Graph ops only, and forward functions only: the model's custom-gradient ops
    (``IdentityN``) are saved without the gradient functions TensorFlow would trace and
    store for them (``tpr_keras.export.versions.save_servable``)."""
    _, _, path = exported
    assert path.endswith("/math/1")
    from tensorflow.python.tools import saved_model_utils

    meta = saved_model_utils.get_meta_graph_def(path, "serve")
    ops = {node.op for node in meta.graph_def.node}
    for function in meta.graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    assert not ops & {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
    assert "IdentityN" in ops  # the ops whose gradients would otherwise be saved
    assert not meta.graph_def.library.registered_gradients
    assert not [f for f in meta.graph_def.library.function if "grad_fn" in f.signature.name]
    assert set(meta.signature_def) >= {"serving_default", "beam"}
    signature = meta.signature_def["serving_default"]
    assert set(signature.inputs) == {"question"} and set(signature.outputs) == {
        "answer", "log_prob", "unknown_characters", "unknown_tokens", "question_characters",
        "dropped_characters", "module"}


def test_without_templates_the_served_model_reports_no_module(exported):
    model, vocab, _ = exported
    module = MathServingModule(MathAnswerer(model, MathPreprocessor(vocab)))
    outputs = module.serve.structured_outputs
    assert set(outputs) == {"answer", "log_prob", "unknown_characters", "unknown_tokens",
                            "question_characters", "dropped_characters"}


def test_signature_answers_equal_keras_greedy(exported):
    model, vocab, path = exported
    served = load(path)
    out = served.signatures["serving_default"](question=tf.constant(QUESTIONS))
    ids = MathTokenizer(vocab).encode(tf.constant(QUESTIONS), 160)
    expected_ids, expected_log_prob = model.greedy_decode(ids, max_length=31)
    expected = [vocab.decode(row) for row in expected_ids.numpy()]
    assert [a.decode() for a in out["answer"].numpy()] == expected
    np.testing.assert_allclose(out["log_prob"].numpy(), expected_log_prob.numpy(), rtol=1e-5)
    # The question's wording names its module in the graph as in Python; unknown
    # characters are counted as the preprocessor counts them.
    python = MathPreprocessor(vocab, templates=TEMPLATES)
    assert [m.decode() for m in out["module"].numpy()] == MODULES == [
        python.module_of(q) for q in QUESTIONS]
    assert out["unknown_characters"].numpy().tolist() == [
        python.unknown_characters(q) for q in QUESTIONS] == [0, 0, 0, 0, 6]
    beam = served.signatures["beam"](question=tf.constant(QUESTIONS))
    expected_beam, _ = model.beam_search(ids, 4, 31)
    assert [a.decode() for a in beam["answer"].numpy()] == [
        vocab.decode(row) for row in expected_beam.numpy()]


def test_tf1_session_and_saved_model_cli_answer_like_keras(exported, tmp_path):
    """The C++ server's path: a TF1 Session fed through the SignatureDef tensor names."""
    import subprocess
    import sys

    _, _, path = exported
    expected = load(path).signatures["serving_default"](
        question=tf.constant(QUESTIONS))["answer"].numpy()
    answers = tf1_session_outputs(path, "answer", question=QUESTIONS)
    assert list(answers) == list(expected)
    done = subprocess.run(
        [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "run", "--dir", path,
         "--tag_set", "serve", "--signature_def", "serving_default",
         "--input_exprs", f"question={QUESTIONS[:2]!r}"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for answer in expected[:2]:
        assert repr(answer) in done.stdout


def test_served_next_to_babi_and_solved_over_grpc_and_rest(exported, export_base, capsys):
    """One server, two models by name: the math model answers solve() like the SavedModel."""
    import json
    import os

    from serving.client import BabiClient, MathClient, solve
    from serving.core.manager import ModelManager
    from serving.model_server.server import ModelServer
    from tensorflow_serving.config import model_server_config_pb2

    _, _, path = exported
    configs = [model_server_config_pb2.ModelConfig(name=name, base_path=str(base),
                                                   model_platform="tensorflow")
               for name, base in (("math", os.path.dirname(path)),
                                  ("babi", os.path.join(export_base, "babi")))]
    expected = load(path).signatures["serving_default"](
        question=tf.constant(QUESTIONS))
    server = ModelServer(ModelManager(configs), port=0, rest_api_port=0).start()
    try:
        with MathClient(f"127.0.0.1:{server.port}") as client:
            solutions = client.solve_batch(QUESTIONS)
        assert [s.answer for s in solutions] == [a.decode() for a in expected["answer"].numpy()]
        np.testing.assert_allclose([s.log_prob for s in solutions],
                                   expected["log_prob"].numpy(), rtol=1e-5)
        assert solutions[0].version == 1
        assert [s.module for s in solutions] == MODULES
        assert [s.unknown_characters for s in solutions][-1] == 6
        rest = solve(QUESTIONS[0], f"127.0.0.1:{server.rest_api_port}", rest=True)
        assert rest.answer == solutions[0].answer
        # The CLI: --question alone asks the math model.
        from serving.client import main

        assert main(["--server", f"127.0.0.1:{server.port}", "--question", QUESTIONS[0],
                     "--json"]) == 0
        printed = capsys.readouterr()
        assert json.loads(printed.out)["answer"] == solutions[0].answer
        assert json.loads(printed.out)["module"] == "numbers__place_value"
        assert "warning" not in printed.err
        # A question outside the modules is answered, with a warning on stderr.
        assert main(["--server", f"127.0.0.1:{server.port}", "--question", QUESTIONS[3]]) == 0
        printed = capsys.readouterr()
        assert printed.out.splitlines()[0] == solutions[3].answer
        assert "warning: the question is worded as none of the modules" in printed.err
        # --strict: that warning alone exits 3 (the answer printed all the same); a question
        # of a trained module's wording exits 0.
        assert main(["--server", f"127.0.0.1:{server.port}", "--question", QUESTIONS[3],
                     "--strict"]) == 3
        assert capsys.readouterr().out.splitlines()[0] == solutions[3].answer
        assert main(["--server", f"127.0.0.1:{server.port}", "--question", QUESTIONS[0],
                     "--strict"]) == 0
        capsys.readouterr()
        # The bAbI model is still served beside it.
        with BabiClient(f"127.0.0.1:{server.port}", "babi") as babi:
            assert babi.ask("Mary went to the kitchen.", "Where is Mary?").answer
    finally:
        server.stop(grace=2)


def test_export_carries_a_warm_up_request_the_signature_accepts(exported):
    """TF Serving replays assets.extra/tf_serving_warmup_requests before serving; without
    it the first Predict built the decoding loop's kernels (about 1 s)."""
    import os

    from tensorflow_serving.apis import prediction_log_pb2

    _, _, path = exported
    records = list(tf.data.TFRecordDataset(
        os.path.join(path, "assets.extra", "tf_serving_warmup_requests")))
    assert len(records) == 1
    request = prediction_log_pb2.PredictionLog.FromString(records[0].numpy()).predict_log.request
    assert request.model_spec.name == "math" and set(request.inputs) == {"question"}
    question = tf.make_ndarray(request.inputs["question"])
    out = load(path).signatures["serving_default"](question=tf.constant(question))
    assert out["answer"].shape == (1,)
