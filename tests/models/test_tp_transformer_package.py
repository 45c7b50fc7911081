"""The TP-Transformer family's package: §4.1's and CPU sizes, saved files of the old
module layout, the in-graph tokenizer == the Python one, and the two attention forms."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data.mathematics import MAX_QUESTION_LENGTH, CharVocabulary
from tpr_keras.layers.tp_attention import TPMultiHeadAttention
from tpr_keras.export.tp_transformer_tokenizer import MathTokenizer
from tpr_keras.models import TPTransformer

TEXTS = ["What is 3*4?", "Round 7.6 to the nearest integer."]


def test_paper_sizes_build_untrained_models():
    assert sorted(TPTransformer.paper_sizes) == [
        "small", "small_transformer", "tiny", "tiny_transformer", "tp_transformer",
        "tp_transformer_b", "tp_transformer_c", "transformer"]
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=9, num_encoder_layers=1)
    config = model.get_config()
    assert (config["model_dim"], config["num_heads"], config["feed_forward_dim"]) == (64, 4, 256)
    assert (config["num_encoder_layers"], config["num_decoder_layers"]) == (1, 2)
    assert config["attention_form"] == "matmul"
    with pytest.raises(ValueError, match="Unknown paper size 'huge'"):
        TPTransformer.from_paper_size("huge", vocabulary_size=9)


def test_registered_name_unchanged_and_old_files_load(saved_as_before):
    """``.keras`` files written before the package (module ``tpr_keras.models.tp_transformer``,
    no ``attention_form`` in the config) still load, with the same outputs."""
    assert keras.saving.get_registered_name(TPTransformer) == "tpr_keras>TPTransformer"
    keras.utils.set_random_seed(0)
    model = TPTransformer(vocabulary_size=9, model_dim=8, num_heads=2, num_encoder_layers=1,
                          num_decoder_layers=1, feed_forward_dim=16)

    def as_before(config):
        assert config["registered_name"] == "tpr_keras>TPTransformer"
        config["module"] = "tpr_keras.models.tp_transformer"  # the module before the package
        del config["config"]["attention_form"]  # the argument came later

    old = saved_as_before(model, as_before)
    x = {"source": np.array([[2, 5, 6, 3, 0]], "int32"),
         "target_in": np.array([[2, 7, 8]], "int32")}
    restored = keras.models.load_model(old)
    assert isinstance(restored, TPTransformer) and restored.attention_form == "einsum"
    np.testing.assert_allclose(restored(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)


def test_in_graph_tokenizer_gives_the_python_ids():
    """MathTokenizer == CharVocabulary.encode_question on every symbol and tricky inputs."""
    vocab = CharVocabulary.build(TEXTS + ["0123456789 -+/()=,"])
    chars = "".join(vocab.tokens[4:])
    texts = [
        chars,  # every vocabulary character
        chars[::-1] + chars,
        "",  # empty
        "Wh@t is 3 ÷ 4?",  # unknown ASCII and non-ASCII characters
        "ÿé中文 \U0001F600 \t\n\r\x00",  # non-BMP, whitespace kinds, NUL
        "What is 1+2? " * 20,  # over-long: cut at MAX_QUESTION_LENGTH characters
        "é" * (MAX_QUESTION_LENGTH + 5),  # over-long in multi-byte characters
    ]
    tokenizer = MathTokenizer(vocab)
    ids = tokenizer.encode(tf.constant(texts)).numpy()
    width = max(len(t[:MAX_QUESTION_LENGTH]) for t in texts) + 2
    assert ids.shape == (len(texts), width)
    for row, text in zip(ids, texts):
        expected = vocab.encode_question(text)
        assert row[: len(expected)].tolist() == expected
        assert not row[len(expected):].any()  # <pad> after </s>
    assert len(vocab.encode_question(texts[5])) == MAX_QUESTION_LENGTH + 2
    # Invalid UTF-8 (which no Python str holds) reads as U+FFFD, an unknown character.
    bad = tokenizer.encode(tf.constant([b"a\xffb"])).numpy()[0].tolist()
    assert bad == [2, vocab.encode("a")[0], vocab.UNK_ID, vocab.UNK_ID, 3]
    # decode == CharVocabulary.decode: characters up to the first </s>, specials dropped.
    rows = [vocab.encode("12") + [3, 5, 0, 0], [3, 5, 5, 5, 5, 5],
            [2, 1] + vocab.encode("7.6") + [0]]
    decoded = tokenizer.decode(tf.constant(rows)).numpy().tolist()
    assert decoded == [vocab.decode(r).encode() for r in rows] == [b"12", b"", b"7.6"]


@pytest.mark.parametrize("use_role", [True, False])
def test_attention_forms_give_the_same_values(use_role):
    einsum = TPMultiHeadAttention(num_heads=2, use_role=use_role, attention_form="einsum")
    matmul = TPMultiHeadAttention(num_heads=2, use_role=use_role, attention_form="matmul")
    rng = np.random.default_rng(0)
    query = rng.normal(size=(3, 5, 8)).astype("float32")
    value = rng.normal(size=(3, 4, 8)).astype("float32")
    mask = rng.random((3, 5, 4)) > 0.3
    einsum(query, value)
    matmul(query, value)
    matmul.set_weights(einsum.get_weights())
    for a, b in zip(einsum(query, value, attention_mask=mask, return_attention_scores=True),
                    matmul(query, value, attention_mask=mask, return_attention_scores=True)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert matmul.get_config()["attention_form"] == "matmul"
    assert TPMultiHeadAttention.from_config(matmul.get_config()).attention_form == "matmul"
    with pytest.raises(ValueError, match="attention_form"):
        TPMultiHeadAttention(num_heads=2, attention_form="loop")


def test_model_attention_forms_give_the_same_logits_and_decodes():
    sizes = dict(vocabulary_size=11, model_dim=8, num_heads=2, num_encoder_layers=1,
                 num_decoder_layers=2, feed_forward_dim=16)
    einsum = TPTransformer(**sizes, attention_form="einsum")
    matmul = TPTransformer(**sizes, attention_form="matmul")
    matmul.set_weights(einsum.get_weights())
    x = {"source": np.array([[2, 5, 6, 3, 0], [2, 7, 3, 0, 0]], "int32"),
         "target_in": np.array([[2, 7, 8], [2, 9, 4]], "int32")}
    np.testing.assert_allclose(matmul(x).numpy(), einsum(x).numpy(), rtol=1e-5, atol=1e-5)
    ids_e, lp_e = einsum.greedy_decode(x["source"], max_length=4)
    ids_m, lp_m = matmul.greedy_decode(x["source"], max_length=4)
    assert ids_m.numpy().tolist() == ids_e.numpy().tolist()
    np.testing.assert_allclose(lp_m.numpy(), lp_e.numpy(), rtol=1e-5, atol=1e-5)
    restored = TPTransformer.from_config(matmul.get_config())
    assert restored.encoder_0.self_attention.attention_form == "matmul"
