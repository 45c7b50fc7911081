"""Keras masks through the MemN2N layers: the embedding's ``mask_zero`` and word mask, the
hop consuming (and preferring) the memory mask it is given, and the network consuming a
Keras mask on story and question."""

import keras
import numpy as np
import pytest

from tests.layers.masking import mask_warnings
from tests.models.memn2n_inputs import hop_inputs
from tpr_keras import testing
from tpr_keras.models.memn2n import MemN2NEmbedding, MemN2NHop, MemN2NNetwork

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend


# -------------------------------------------------------------------- masking
#: 3 stories of 4 rows x 3 word slots, padded at the end with all-pad rows to
#: 3, 1 and 2 real sentences, and their questions.
STORY = np.array([[[2, 3, 0], [4, 0, 0], [5, 6, 7], [0, 0, 0]],
                  [[8, 9, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]],
                  [[3, 4, 5], [6, 2, 0], [0, 0, 0], [0, 0, 0]]], "int32")
SENTENCES = (STORY != 0).any(-1)
QUESTION = np.array([[7, 8, 0], [2, 0, 0], [9, 5, 4]], "int32")
EPS = float(np.finfo(np.float32).eps)


def _randomize(layer, seed):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        if w.trainable:
            w.assign(rng.normal(0.0, 0.5, w.shape).astype("float32"))


def test_embedding_mask_zero_masks_the_empty_sentences_and_changes_the_mask_only():
    masked = MemN2NEmbedding(10, 4, memory_size=5, mask_zero=True)
    plain = MemN2NEmbedding(10, 4, memory_size=5)
    masked.build(), plain.build()
    plain.set_weights(masked.get_weights())
    time = np.where(SENTENCES, np.arange(1, 5)[None], 0)
    np.testing.assert_array_equal(testing.numpy(masked(STORY, time_index=time)),
                                  testing.numpy(plain(STORY, time_index=time)))
    np.testing.assert_array_equal(testing.numpy(masked.compute_mask(STORY)), SENTENCES)
    assert plain.compute_mask(STORY) is None
    assert masked.compute_mask(QUESTION) is None  # a question: the word axis is reduced
    config = masked.get_config()
    assert config["mask_zero"] is True and plain.get_config()["mask_zero"] is False
    assert MemN2NEmbedding.from_config(config).get_config() == config
    del config["mask_zero"]  # a config saved before the argument existed
    assert MemN2NEmbedding.from_config(config).mask_zero is False


@pytest.mark.parametrize("encoding", ["bag_of_words", "position", "position_code"])
def test_embedding_word_mask_makes_the_masked_slots_padding(encoding):
    table = MemN2NEmbedding(10, 4, sentence_encoding=encoding)
    words = np.random.default_rng(3).random(STORY.shape) < 0.7
    padded = np.where(words, STORY, 0)
    # Bit for bit as id 0 (the position encoding's J counts the unmasked words).
    np.testing.assert_array_equal(testing.numpy(table(STORY, mask=words)),
                                  testing.numpy(table(padded)))
    assert not np.array_equal(testing.numpy(table(STORY, mask=words)),
                              testing.numpy(table(STORY)))
    # The sentence mask: an unmasked word slot, and with mask_zero a non-pad one.
    np.testing.assert_array_equal(testing.numpy(table.compute_mask(STORY, words)),
                                  words.any(-1))
    table.mask_zero = True
    np.testing.assert_array_equal(testing.numpy(table.compute_mask(STORY, words)),
                                  (padded != 0).any(-1))


def _hop_model(mask_zero, mask_empty_memories=True):
    """story, question -> A, C (mask_zero), B -> MemN2NHop -> (u', p)."""
    story = keras.Input((None, 3), dtype="int32")
    question = keras.Input((3,), dtype="int32")
    tables = [MemN2NEmbedding(10, 4, mask_zero=mask_zero, name=n) for n in "ACB"]
    hop = MemN2NHop(mask_empty_memories=mask_empty_memories, name="hop")
    outputs = hop([tables[2](question), tables[0](story), tables[1](story)])
    model, warned = mask_warnings(lambda: keras.Model([story, question], list(outputs)))
    assert warned == []
    for i, table in enumerate(tables):
        _randomize(table, i)
    return model


def test_hop_consumes_the_keras_memory_mask():
    model = _hop_model(mask_zero=True)
    (u, p), warned = mask_warnings(lambda: [testing.numpy(t) for t in model([STORY, QUESTION])])
    assert warned == []
    np.testing.assert_array_equal(p[~SENTENCES], 0.0)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=0, atol=4 * EPS * STORY.shape[1])
    tol = 4 * EPS * (4 + 4 * STORY.shape[1]) * max(1.0, np.abs(u).max())  # eq. 1, 2, 4
    for i, n in enumerate(SENTENCES.sum(-1)):  # each story alone, without its pad rows
        u_alone, p_alone = (testing.numpy(t)[0]
                            for t in model([STORY[i:i + 1, :n], QUESTION[i:i + 1]]))
        np.testing.assert_allclose(u[i], u_alone, rtol=0, atol=tol)
        np.testing.assert_allclose(p[i, :n], p_alone, rtol=0, atol=tol)
    # Without a mask the pad rows (m_i = 0, logit 0) take part in eq. 1's softmax; so they
    # do with mask_empty_memories=False, which reads the mask and ignores it.
    for unmasked in (_hop_model(mask_zero=False),
                     _hop_model(mask_zero=True, mask_empty_memories=False)):
        u_unmasked, p_unmasked = (testing.numpy(t) for t in unmasked([STORY, QUESTION]))
        assert (p_unmasked[~SENTENCES] > 0).all()
        assert not np.allclose(u_unmasked, u, atol=1e-3)
    hop = model.get_layer("hop")
    assert hop.compute_mask([u, STORY, STORY], [None, SENTENCES, SENTENCES]) is None


def test_hop_prefers_the_memory_mask_it_is_given():
    u, m, c, mask = hop_inputs()
    hop = MemN2NHop()
    everything = np.ones_like(mask)
    _, given = hop([u, m, c], memory_mask=everything, mask=[None, mask, mask])
    _, keras_mask = hop([u, m, c], mask=[None, mask, everything])
    _, explicit = hop([u, m, c], memory_mask=mask)
    assert (testing.numpy(given)[~mask] > 0).all()
    np.testing.assert_array_equal(testing.numpy(keras_mask), testing.numpy(explicit))


class KeepSentences(keras.layers.Layer):
    """Story ids unchanged, with the Keras mask of the sentences not starting with id 8."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, story):
        return story + 0

    def compute_mask(self, story, mask=None):
        return keras.ops.not_equal(story[..., 0], 8)


def test_network_consumes_a_keras_mask_on_story_and_question():
    network = MemN2NNetwork(10, 4, num_hops=2, memory_size=4, seed=0)
    network([STORY, QUESTION])
    _randomize(network, 7)
    dropped = STORY[..., 0] == 8  # the KeepSentences mask: story 1's only sentence
    without = np.where(dropped[..., None], 0, STORY)
    expected = testing.numpy(network([without, QUESTION]))
    assert not np.allclose(expected, testing.numpy(network([STORY, QUESTION])), atol=1e-3)
    # Filled in by Keras from the story's Keras mask: the masked sentences are padding.
    story, question = keras.Input((4, 3), dtype="int32"), keras.Input((3,), dtype="int32")
    model, warned = mask_warnings(
        lambda: keras.Model([story, question], network([KeepSentences()(story), question])))
    assert warned == []
    np.testing.assert_array_equal(testing.numpy(model([STORY, QUESTION])), expected)
    # Given: sentence [B, S] or word [B, S, W] masks on the story, word masks on the question.
    words = np.random.default_rng(5).random(STORY.shape) < 0.7
    asked = QUESTION != 8
    for mask, story_ids, question_ids in (
            ([~dropped, None], without, QUESTION),
            ([words, asked], np.where(words, STORY, 0), np.where(asked, QUESTION, 0))):
        np.testing.assert_array_equal(
            testing.numpy(network([STORY, QUESTION], mask=mask)),
            testing.numpy(network([story_ids, question_ids])))
    assert network.compute_mask([STORY, QUESTION], [~dropped, None]) is None
