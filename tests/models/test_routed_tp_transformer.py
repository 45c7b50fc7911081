"""RoutedTPTransformer: each question answered by its module's decoder, in Python
(``MathAnswerer``), in the ids API (``greedy_decode(route=...)``) and in the evaluation."""

import keras
import numpy as np
import pytest

from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.models import MathAnswerer, MathPreprocessor, TPTransformer
from tpr_keras.models.tp_transformer.routed_tp_transformer import RoutedTPTransformer

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend

QUESTIONS = ["Which is bigger: 3 or 7/2?", "What is the tens digit of 2934?",
             "Is 12 at most 13?", "Let x = 3. What is x + x?"]
TEMPLATES = ModuleTemplates({"comparison__pair": ["Which is bigger: N or N/N?",
                                                  "Is N at most N?"],
                             "numbers__place_value": ["What is the tens digit of N?"]})
ROUTES = [1, 0, 1, 0]  # comparison__pair -> the expert; the rest -> the default
VOCAB = CharVocabulary.build("".join(QUESTIONS) + "0123456789TrueFalse")


def tiny(seed, vocab=VOCAB):
    """A ``tiny`` TP-Transformer with one encoder and one decoder layer: routing picks
    whole decoders, whatever their depth, and the test decodes six batches eagerly (each
    layer's ops per step)."""
    keras.utils.set_random_seed(seed)
    return TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                         vocabulary=vocab.tokens, num_encoder_layers=1,
                                         num_decoder_layers=1)


@pytest.fixture(scope="module")
def parts():
    return tiny(1), tiny(2)


@pytest.fixture(scope="module")
def routed(parts):
    default, expert = parts
    return RoutedTPTransformer(default, {"comparison__pair": expert})


def answers(model, questions):
    return MathAnswerer(model, MathPreprocessor(VOCAB, templates=TEMPLATES)).predict(questions)


def test_routes_and_config_round_trip_with_weights(routed, parts, tmp_path):
    assert routed.expert_modules == ("comparison__pair",)
    modules = [TEMPLATES.module_of(q) for q in QUESTIONS]
    assert routed.routes(modules).tolist() == ROUTES
    for decoder, part in zip(routed.decoders(), parts):  # the parts' weights, copied
        assert all(np.array_equal(a, b) for a, b in zip(decoder.get_weights(), part.get_weights()))
    routed.save_to_preset(str(tmp_path / "preset"), assets={"vocab.txt": VOCAB.save},
                          metadata={"task": "math"})
    loaded = RoutedTPTransformer.from_preset(str(tmp_path / "preset"))
    assert loaded.get_config() == routed.get_config()
    assert all(np.array_equal(a, b) for a, b in zip(loaded.get_weights(), routed.get_weights()))


def test_an_expert_knows_no_symbol_the_default_lacks(parts):
    other = CharVocabulary.build("0123456789 ?ab*")  # '*' is in no question here
    with pytest.raises(ValueError, match="comparison__pair differs .*vocabulary.*'\\*'"):
        RoutedTPTransformer(parts[0], {"comparison__pair": tiny(3, other)})
    with pytest.raises(ValueError, match="at least one expert"):
        RoutedTPTransformer(parts[0], {})
    with pytest.raises(ValueError, match="routes name no expert"):
        RoutedTPTransformer(parts[0], {"e": parts[1]}, {"comparison__pair": "x", "m": "e"})


def test_an_expert_of_fewer_symbols_answers_as_it_does_alone(parts):
    """An expert trained on a subset of the default's symbols reads and writes the default's
    ids: its answers and log-probabilities are those of the expert with its own vocabulary,
    on questions whose characters it knows and on one with a character it lacks (':'),
    which it reads as <unk> as its own preprocessor does."""
    small = CharVocabulary.build("".join(QUESTIONS[1:]) + "0123456789TrueFalse")
    assert set(small.tokens) < set(VOCAB.tokens) and ":" not in small.tokens
    expert = tiny(4, small)
    routed = RoutedTPTransformer(parts[0], {"comparison__pair": expert})
    assert routed.get_config()["experts"]["comparison__pair"]["vocabulary"] == list(small.tokens)
    # Four decoding steps: the ids are compared symbol by symbol, so a few are enough.
    alone = MathAnswerer(expert, MathPreprocessor(small)).predict(QUESTIONS, max_length=4)
    mapped = routed.decoders()[1]
    source = MathPreprocessor(VOCAB)(QUESTIONS)
    ids, log_prob = mapped.greedy_decode(source, max_length=4)
    assert MathPreprocessor(VOCAB).decode(keras.ops.convert_to_numpy(ids)) == alone["answer"].tolist()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(log_prob), alone["log_prob"], rtol=1e-5)
    ids, _ = mapped.beam_search(source, beam_size=2, max_length=4)
    own_ids, _ = expert.beam_search(MathPreprocessor(small)(QUESTIONS), beam_size=2, max_length=4)
    assert (MathPreprocessor(VOCAB).decode(keras.ops.convert_to_numpy(ids))
            == MathPreprocessor(small).decode(keras.ops.convert_to_numpy(own_ids)))
    # Teacher forcing: the expert's logits at its symbols' ids, the others masked.
    target = np.full((len(QUESTIONS), 3), 2, np.int32)
    logits = keras.ops.convert_to_numpy(mapped({"source": source, "target_in": target}))
    own = keras.ops.convert_to_numpy(expert({"source": MathPreprocessor(small)(QUESTIONS),
                                             "target_in": target}))
    at = [VOCAB.tokens.index(t) for t in small.tokens]
    np.testing.assert_allclose(logits[..., at], own, atol=1e-5)
    assert np.all(np.delete(logits, at, axis=-1) < -1e8)


def test_modules_may_share_one_expert_and_the_config_round_trips(parts, tmp_path):
    routed = RoutedTPTransformer(parts[0], {"shared": parts[1]},
                                 {"comparison__pair": "shared", "numbers__place_value": "shared"})
    assert routed.expert_names == ("shared",) and len(routed.decoders()) == 2
    modules = [TEMPLATES.module_of(q) for q in QUESTIONS]
    assert routed.routes(modules).tolist() == [1, 1, 1, 0]
    routed.save_to_preset(str(tmp_path / "preset"), assets={"vocab.txt": VOCAB.save},
                          metadata={"task": "math"})
    loaded = RoutedTPTransformer.from_preset(str(tmp_path / "preset"))
    assert loaded.get_config() == routed.get_config() and "routes" in routed.get_config()
    assert all(np.array_equal(a, b) for a, b in zip(loaded.get_weights(), routed.get_weights()))


def test_each_question_is_answered_by_its_modules_decoder(routed, parts):
    default, expert = (answers(p, QUESTIONS) for p in parts)
    got = answers(routed, QUESTIONS)
    for i, route in enumerate(ROUTES):
        chosen = expert if route else default
        assert got["answer"][i] == chosen["answer"][i]
        np.testing.assert_allclose(got["log_prob"][i], chosen["log_prob"][i], rtol=1e-5)
    assert got["module"].tolist() == [TEMPLATES.module_of(q) for q in QUESTIONS]
    assert default["answer"].tolist() != expert["answer"].tolist()  # the test can fail
    # The ids API selects the same rows: every decoder on the whole batch.
    source = MathPreprocessor(VOCAB)(QUESTIONS)
    ids, log_prob = routed.greedy_decode(source, route=np.asarray(ROUTES))
    assert MathPreprocessor(VOCAB).decode(keras.ops.convert_to_numpy(ids)) == got["answer"].tolist()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(log_prob), got["log_prob"], rtol=1e-5)
    # Teacher forcing: each row's logits are its decoder's.
    target = np.full((len(QUESTIONS), 3), 2, np.int32)
    logits = keras.ops.convert_to_numpy(routed({"source": source, "target_in": target,
                                                "route": np.asarray(ROUTES)}))
    for i, route in enumerate(ROUTES):
        part = parts[route]({"source": source[i:i + 1], "target_in": target[i:i + 1]})
        np.testing.assert_allclose(logits[i], keras.ops.convert_to_numpy(part)[0], atol=1e-5)


def test_a_routed_model_needs_the_templates(routed):
    with pytest.raises(ValueError, match="needs the module templates"):
        MathAnswerer(routed, MathPreprocessor(VOCAB))
