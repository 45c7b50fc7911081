"""A math model that claims modules: per answer ``claimed`` (Python and served alike), the
``coverage`` signature with the claimed modules' scores, listed by GetModelMetadata, and
the client's warning, ``--strict`` and ``--coverage``. The claiming model is the shipped
``tp_transformer_math_focus`` (it claims three of its four modules; its export is shared
with the other files that serve it); a tiny untrained model checks the edge cases."""

import json
import os

import pytest
import tensorflow as tf
from tensorflow_serving.apis import get_model_metadata_pb2, prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

from serving.client import MathClient, main
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer
from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.export import read_export_info
from tpr_keras.export.tp_transformer import MathServingModule
from tests.serving import saved_models
from tests.serving.shared_exports import preset_export
from tpr_keras.models import MathAnswerer, MathPreprocessor, TPTransformer

QUESTIONS = ["What is the tens digit of 2934?", "Which is bigger: 3 or 7/2?",
             "Let x = 3. What is x + x?"]
TEMPLATES = ModuleTemplates({"comparison__pair": ["Which is bigger: N or N/N?"],
                             "numbers__place_value": ["What is the tens digit of N?"]})
#: What tp_transformer_math_focus claims (its metadata.json; comparison__pair scored 88.25).
CLAIMS = {"arithmetic__add_or_sub": 96.2, "numbers__place_value": 100.0,
          "numbers__round_number": 100.0}
#: place_value claimed; comparison__pair trained, not claimed; the last in no module.
CLAIMED = [True, False, False]


def answerer(claims):
    vocab = CharVocabulary.build("".join(QUESTIONS) + "0123456789")
    tf.keras.utils.set_random_seed(3)
    # One layer: the claims are the answerer's and the module table's, whatever its depth.
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                          vocabulary=vocab.tokens, num_encoder_layers=1,
                                          num_decoder_layers=1)
    return MathAnswerer(model, MathPreprocessor(vocab, templates=TEMPLATES), claims)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path, _ = preset_export(tmp_path_factory, "tp_transformer_math_focus")
    return MathAnswerer.from_preset("tp_transformer_math_focus"), str(path)


def test_python_answers_say_which_questions_are_claimed(exported):
    claiming, _ = exported
    out = claiming.predict(QUESTIONS)
    assert out["claimed"].tolist() == CLAIMED
    assert out["module"].tolist() == ["numbers__place_value", "comparison__pair", ""]
    assert claiming.claims == CLAIMS and claiming.claim_threshold == 90.0
    assert "claimed" not in answerer(None).predict(QUESTIONS[:1])
    with pytest.raises(ValueError, match="arithmetic__mul are not among"):
        answerer({"arithmetic__mul": 95.0})


def test_the_savedmodel_serves_claimed_and_the_coverage_signature(exported):
    claiming, path = exported
    served = saved_models.load(path).signatures
    expected = claiming.predict(QUESTIONS)
    for key in ("serving_default", "beam"):
        out = served[key](question=tf.constant(QUESTIONS))
        assert out["claimed"].numpy().tolist() == CLAIMED
        assert out["claimed"].dtype == tf.bool
    out = served["serving_default"](question=tf.constant(QUESTIONS))
    assert [a.decode() for a in out["answer"].numpy()] == expected["answer"].tolist()
    coverage = served["coverage"]()
    assert {m: float(v.numpy()) for m, v in coverage.items()} == {
        **CLAIMS, "threshold_percent": 90.0}
    info = read_export_info(path)
    assert (info["claims"], info["claim_threshold_percent"]) == (CLAIMS, 90.0)
    assert set(info["signatures"]["coverage"]["outputs"]) == {*CLAIMS, "threshold_percent"}


def test_a_model_that_claims_nothing_has_no_coverage_and_nothing_claimed():
    module = MathServingModule(answerer({}))
    assert sorted(module.signatures()) == ["beam", "serving_default"]
    out = module.serve(tf.constant(QUESTIONS))
    assert out["claimed"].numpy().tolist() == [False] * 3


def test_served_coverage_metadata_warning_and_strict(exported, capsys):
    _, path = exported
    config = model_server_config_pb2.ModelConfig(
        name="math", base_path=os.path.dirname(path), model_platform="tensorflow")
    server = ModelServer(ModelManager([config]), port=0, rest_api_port=0).start()
    grpc_at, rest_at = f"127.0.0.1:{server.port}", f"127.0.0.1:{server.rest_api_port}"
    try:
        import grpc

        with grpc.insecure_channel(grpc_at) as channel:
            request = get_model_metadata_pb2.GetModelMetadataRequest(
                metadata_field=["signature_def"])
            request.model_spec.name = "math"
            reply = prediction_service_pb2_grpc.PredictionServiceStub(
                channel).GetModelMetadata(request)
        signatures = get_model_metadata_pb2.SignatureDefMap()
        reply.metadata["signature_def"].Unpack(signatures)
        assert set(signatures.signature_def["coverage"].outputs) == {
            *CLAIMS, "threshold_percent"}
        assert "claimed" in signatures.signature_def["serving_default"].outputs
        for rest in (False, True):
            with MathClient(rest_at if rest else grpc_at, rest=rest) as client:
                assert client.coverage() == (CLAIMS, 90.0)
                solutions = client.solve_batch(QUESTIONS)
            assert [s.claimed for s in solutions] == CLAIMED
        assert solutions[0].warnings() == []
        assert "does not claim" in " ".join(solutions[1].warnings())
        assert "none of the modules" in " ".join(solutions[2].warnings())
        # The CLI: --coverage lists the claims; --json carries the flag; --strict acts on it.
        assert main(["--server", grpc_at, "--coverage"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "modules claimed (exact match >= 90 % on a fresh generator sample):",
            "  arithmetic__add_or_sub: 96.2 %", "  numbers__place_value: 100 %",
            "  numbers__round_number: 100 %"]
        assert main(["--server", rest_at, "--rest", "--coverage", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"claims": CLAIMS,
                                                       "threshold_percent": 90.0}
        for question, claimed, status in zip(QUESTIONS, CLAIMED, (0, 3, 3)):
            assert main(["--server", grpc_at, "--question", question, "--json",
                         "--strict"]) == status
            printed = capsys.readouterr()
            assert json.loads(printed.out)["claimed"] is claimed
            assert ("warning:" in printed.err) is (not claimed)
        with pytest.raises(SystemExit) as usage:  # --coverage asks no question
            main(["--server", grpc_at, "--coverage", "--question", QUESTIONS[0]])
        assert usage.value.code == 2
    finally:
        server.stop(grace=2)
