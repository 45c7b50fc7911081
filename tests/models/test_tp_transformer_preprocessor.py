"""MathPreprocessor, the task model's NumPy tokenizer, gives the ids of the exporter's
in-graph MathTokenizer and decodes as it does."""

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data.mathematics import MAX_QUESTION_LENGTH
from tpr_keras.export.tp_transformer_tokenizer import MathTokenizer
from tpr_keras.models import MathPreprocessor
from tpr_keras.presets import PresetError

QUESTIONS = ["What is the hundreds digit of 81379118?", "", "Wh@t is 3 ÷ 4?",
             "ÿé中文 \U0001F600 \t\n\r\x00", "What is 1+2? " * 20,
             "é" * (MAX_QUESTION_LENGTH + 5)]


@pytest.fixture(scope="module")
def preprocessor():
    return MathPreprocessor.from_preset("tp_transformer_math_focus")


def test_the_numpy_ids_are_the_in_graph_ones(preprocessor):
    graph = MathTokenizer.from_preset("tp_transformer_math_focus")
    assert graph.size == len(preprocessor.vocabulary)
    graph = graph.encode(tf.constant(QUESTIONS)).numpy()
    ids = preprocessor(QUESTIONS)
    np.testing.assert_array_equal(ids, graph)
    assert ids.dtype == np.int32 and ids.shape[1] == MAX_QUESTION_LENGTH + 2


def test_decoding_is_the_in_graph_one(preprocessor):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, len(preprocessor.vocabulary), size=(20, 12)).astype(np.int32)
    graph = MathTokenizer(preprocessor.vocabulary).decode(tf.constant(ids)).numpy()
    assert preprocessor.decode(ids) == [s.decode() for s in graph]
    assert preprocessor.decode([[14, 8, 11, 3, 12]]) == ["4.1"]  # stops at </s>


def test_unknown_characters_are_counted(preprocessor):
    assert [preprocessor.unknown_characters(q) for q in QUESTIONS[:4]] == [0, 0, 2, 9]


def test_from_preset_reads_the_preset_vocabulary(preprocessor):
    assert len(preprocessor.vocabulary) == 60 and preprocessor.max_length == MAX_QUESTION_LENGTH
    with pytest.raises(PresetError, match="task 'entailment'.*EntailmentClassifier"):
        MathPreprocessor.from_preset("tpru32_entailment")
    with pytest.raises(ValueError, match="max_length"):
        MathPreprocessor(preprocessor.vocabulary, 0)
