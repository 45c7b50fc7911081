"""The TP-Transformer §5 analysis: k-means, role vectors of one head, Figures 2 and 3 (the
command is tested in ``tests/tools/test_analysis_roles.py``)."""

import numpy as np
import pytest

from tpr_keras.analysis import roles as ra


def test_kmeans_recovers_planted_clusters_exactly_and_deterministically():
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=10.0, size=(20, 8))
    truth = rng.permutation(np.repeat(np.arange(20), 15))
    x = centres[truth] + rng.normal(scale=0.1, size=(len(truth), 8))
    labels, found, inertia = ra.kmeans(x, k=20, seed=0)
    # The same partition: one found label per planted cluster and vice versa.
    pairs = set(zip(truth.tolist(), labels.tolist()))
    assert len(pairs) == 20
    assert len({t for t, _ in pairs}) == 20 and len({f for _, f in pairs}) == 20
    # Renumbered by first appearance; centres are the members' means.
    assert labels[0] == 0
    assert list(dict.fromkeys(labels.tolist())) == list(range(20))
    for c in range(20):
        np.testing.assert_allclose(found[c], x[labels == c].mean(0), atol=1e-9)
    assert inertia == pytest.approx(((x - found[labels]) ** 2).sum())
    again, _, _ = ra.kmeans(x, k=20, seed=0)
    np.testing.assert_array_equal(labels, again)
    with pytest.raises(ValueError, match="k must be"):
        ra.kmeans(x[:3], k=4)


def test_consistency_is_key_to_cluster_and_has_a_chance_level():
    labels = np.array([0, 0, 1, 1, 1, 1])
    keys = ["a", "a", "a", "b", "b", "b"]
    # key a: clusters 0, 0, 1 -> 2 of 3; key b: all cluster 1 -> 3 of 3.
    assert ra.consistency(labels, keys) == pytest.approx(5 / 6)
    assert ra.consistency(labels, list(range(6))) == 1.0  # one item per key
    assert ra.consistency(labels, ["k"] * 6) == pytest.approx(4 / 6)
    assert ra.shuffled_consistency(labels, ["k"] * 6) == pytest.approx(4 / 6)
    assert ra.shuffled_consistency(labels, list(range(6))) == 1.0


def test_digit_places_and_purity():
    assert ra.digit_places("What is 305 + 7?") == [-1] * 8 + [2, 1, 0] + [-1] * 3 + [0, -1]
    labels = np.array([0, 0, 1, 1, 1])
    assert ra.purity(labels, ["a", "a", "b", "b", "c"]) == pytest.approx(0.8)
    assert ra.tally(["7", " ", "7"]) == "7 2, ' ' 1"


@pytest.fixture(scope="module")
def tiny_model_and_vocab():
    import keras

    from tpr_keras.data.mathematics import CharVocabulary
    from tpr_keras.models import TPTransformer

    vocab = CharVocabulary.build("What is the units digit of 0123456789?")
    keras.utils.set_random_seed(0)
    model = TPTransformer(vocabulary_size=len(vocab), model_dim=16, num_heads=2,
                          num_encoder_layers=2, num_decoder_layers=1, feed_forward_dim=32)
    return model, vocab


def test_role_vectors_are_eq1_of_the_last_encoder_layer(tiny_model_and_vocab):
    model, vocab = tiny_model_and_vocab
    questions = ["What is the units digit of 305?", "What is 7?"]
    source = ra.encode_questions(questions, vocab)
    assert source.shape == (2, len(questions[0]) + 2)
    assert source[1, len(questions[1]) + 2:].tolist() == [vocab.PAD_ID] * (
        source.shape[1] - len(questions[1]) - 2)
    roles, attention = ra.role_details(model, source, layer=-1, head=1)
    width = source.shape[1]
    assert roles.shape == (2, width, 8) and attention.shape == (2, width, width)
    # r_t = W_r z_t + b_r of head 1 (eq. 1), z = the last layer's input after its first
    # layer norm (the default "code" norm placement: x + TPMHA(LN1(x))).
    assert model.norm_placement == "code"
    last = model.encoder_layers[-1]
    valid = source != vocab.PAD_ID
    z = model.embedding(source)
    for layer in model.encoder_layers[:-1]:
        z = layer(z, valid)
    _, expected = last.self_attention.project_query(last.norm1(z))
    np.testing.assert_allclose(roles, np.asarray(expected)[:, 1], atol=1e-5)
    # Attention rows are distributions over the valid positions only.
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
    short = len(questions[1]) + 2
    assert np.abs(attention[1, :, short:]).max() < 1e-6
    with pytest.raises(ValueError, match="head must be"):
        ra.role_details(model, source, head=2)


def test_cluster_roles_figures_and_listing(tiny_model_and_vocab, tmp_path):
    pytest.importorskip("matplotlib")
    model, vocab = tiny_model_and_vocab
    questions = [f"What is the units digit of {n}?" for n in (305, 4417, 98, 123456, 7)]
    found = ra.cluster_roles(model, questions, vocab, k=6, seed=0)
    lengths = [len(q) + 2 for q in questions]
    assert [len(c) for c in found["chars"]] == lengths
    assert [len(c) for c in found["labels"]] == lengths
    assert found["roles"].shape == (sum(lengths), 8)
    assert found["chars"][0][0] == "#" and found["chars"][0][-1] == "%"
    labels = np.concatenate(found["labels"])
    assert set(labels.tolist()) == set(range(6))
    # Identical questions give identical role vectors, hence identical clusters.
    twice = ra.cluster_roles(model, questions[:1] * 2, vocab, k=3, seed=0)
    np.testing.assert_array_equal(twice["labels"][0], twice["labels"][1])
    figure2, figure3 = tmp_path / "roles.png", tmp_path / "attention.png"
    ra.plot_role_clusters(found["chars"], found["labels"], 6, str(figure2), "test")
    ra.plot_attention_maps(found["chars"][:2], found["attention"][:2], str(figure3))
    for path in (figure2, figure3):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 2000
    lines, scores = ra.describe_clusters(found["chars"], found["labels"], 6)
    assert len([line for line in lines if line.startswith("cluster")]) == 6
    assert 0 < scores["by_character"] <= 1 and 0 < scores["digits_by_place"] <= 1
    # One template ("What is the units digit of ?"): place in context is just the place.
    assert scores["consistency_digits_place_in_context"] == scores["consistency_digits_place"]
    assert 0 < scores["consistency_digits_place_chance"] <= 1
