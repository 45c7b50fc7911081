"""The Figure 4 analysis: cosine similarity, clustering, purity, and the representations it
compares (the command is tested in ``tests/tools/test_analysis_similarity.py``)."""

import keras
import numpy as np
import pytest

from tpr_keras.analysis import similarity as sim

pytest.importorskip("scipy")
pytest.importorskip("matplotlib")


def test_cosine_similarity_and_clusters_of_two_obvious_groups():
    rng = np.random.default_rng(0)
    a = np.array([1.0, 0.0, 0.0]) + rng.normal(scale=0.05, size=(5, 3))
    b = np.array([0.0, 1.0, 1.0]) + rng.normal(scale=0.05, size=(4, 3))
    vectors = np.concatenate([a, b])[rng.permutation(9)]
    s = sim.cosine_similarity(vectors)
    np.testing.assert_allclose(np.diag(s), 1.0, atol=1e-6)
    np.testing.assert_allclose(s, s.T)
    order, labels = sim.cluster(s, clusters=2)
    first_group = vectors[:, 0] > 0.5
    assert len(set(labels[first_group])) == 1 and len(set(labels[~first_group])) == 1
    assert labels[first_group][0] != labels[~first_group][0]
    in_order = first_group[order]  # each group is contiguous in the leaf order
    assert (np.diff(in_order.astype(int)) != 0).sum() == 1
    assert sim.cosine_similarity(np.zeros((2, 3)))[0, 1] == 0.0


def test_purity_and_tallies_of_words_in_clusters():
    texts = ["john went to the office", "john moved to the garden", "mary went home",
             "mary took the milk", "sandra took the apple"]
    assert sim.word_at(texts, 0) == ["john", "john", "mary", "mary", "sandra"]
    assert sim.word_at(["a"], 1) == [""]
    labels = np.array([1, 1, 2, 2, 2])
    # by subject: cluster 1 all john (2), cluster 2 mary twice of 3 -> 4 of 5
    assert sim.purity(labels, sim.word_at(texts, 0)) == pytest.approx(0.8)
    # by verb: cluster 1 went/moved (1 of 2), cluster 2 went/took/took (2 of 3) -> 3 of 5
    assert sim.purity(labels, sim.word_at(texts, 1)) == pytest.approx(0.6)
    assert sim.purity(np.array([1, 2, 3, 4, 5]), sim.word_at(texts, 1)) == 1.0
    assert sim.tally(["took", "went", "took"]) == "took 2, went 1"
    assert sim.events(texts) == ["move", "move", "move", "take", "take"]
    assert sim.events(["the triangle is above"]) == ["triangle"]
    # by event: cluster 1 all moves, cluster 2 one move and two takes -> 4 of 5
    assert sim.purity(labels, sim.events(texts)) == pytest.approx(0.8)


def test_representations_are_the_update_modules_own_on_the_encoded_sentences():
    from tpr_keras.models import TPRRNN

    model = TPRRNN.from_paper_size("single_task", 12, 6)
    ids = np.random.default_rng(0).integers(1, 12, size=(3, model.max_words)).astype("int32")
    parts = sim.representations(model, ids)
    # The representations are the update module's own (eq. 7-8) on the encoded sentences.
    expected = model.update_module.extract(model.sentence_encoder(ids))
    assert set(parts) == set(expected) and set(sim.REPRESENTATIONS) <= set(parts)
    for name in parts:
        assert parts[name].shape[0] == 3
        np.testing.assert_allclose(parts[name], expected[name], rtol=1e-6)
    keras.backend.clear_session()
