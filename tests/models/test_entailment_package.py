"""The entailment family's package: the paper's sizes, saved files of the old
module layout, the recurrent-layer hook, and the in-graph tokenizer == the Python one."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import entailment as data
from tpr_keras.export.entailment_tokenizer import EntailmentTokenizer
from tpr_keras.models import BiDAFEntailmentModel, PlainEntailmentModel
from tpr_keras.models.entailment import entailment_layers


def test_paper_sizes_are_section_5_1():
    assert sorted(PlainEntailmentModel.paper_sizes) == ["plain_gru", "plain_lstm", "plain_tpru"]
    assert sorted(BiDAFEntailmentModel.paper_sizes) == ["bidaf_gru", "bidaf_lstm", "bidaf_tpru"]
    model = PlainEntailmentModel.from_paper_size("plain_tpru", seed=3)
    config = model.get_config()
    assert (config["units"], config["cell"], config["num_roles"], config["seed"]) == (
        64, "tpru", 32, 3)
    assert config["pooling"] == "last"
    small = BiDAFEntailmentModel.from_paper_size("bidaf_gru", units=8)
    assert (small.units, small.cell, small.pooling) == (8, "gru", "max")
    # §5.2's second layer reads [h; context]: the recurrent weights the paper counts in
    # Table 1 (LSTM 230.0k, GRU 172.4k, TPRU 131.3k for d = 64) come out of that width.
    recurrent = {}
    for cell in ("lstm", "gru", "tpru"):
        model = BiDAFEntailmentModel.from_paper_size(f"bidaf_{cell}")
        assert model.attention_output == "context"
        recurrent[cell] = sum(int(np.prod(w.shape)) for w in model.trainable_weights
                              if w.path.startswith(("contextual/", "modelling/")))
    assert recurrent == {"lstm": 230_400, "gru": 173_568, "tpru": 131_080}
    assert BiDAFEntailmentModel(units=8).attention_output == "full"  # files saved before
    # Only the BiDAF TPRU draws its embedding from N(0, 1); the constructor keeps Keras'.
    inits = {name: model_class.from_paper_size(name, units=4).embedding_init
             for model_class in (PlainEntailmentModel, BiDAFEntailmentModel)
             for name in model_class.paper_sizes}
    assert inits == {"plain_tpru": "uniform", "plain_lstm": "uniform", "plain_gru": "uniform",
                     "bidaf_tpru": "normal", "bidaf_lstm": "uniform", "bidaf_gru": "uniform"}
    assert BiDAFEntailmentModel(units=4).embedding_init == "uniform"
    assert BiDAFEntailmentModel.from_paper_size(
        "bidaf_tpru", units=4, embedding_init="uniform").embedding_init == "uniform"
    with pytest.raises(ValueError, match="Unknown paper size 'plain_gru'"):
        BiDAFEntailmentModel.from_paper_size("plain_gru")


def test_registered_names_are_unchanged_and_old_files_load(saved_as_before):
    """``.keras`` files written before the package (module ``tpr_keras.models.entailment``)
    still load: the registered names are the same."""
    assert keras.saving.get_registered_name(PlainEntailmentModel) == (
        "tpr_keras>PlainEntailmentModel")
    assert keras.saving.get_registered_name(BiDAFEntailmentModel) == (
        "tpr_keras>BiDAFEntailmentModel")
    for layer in ("MaskedMaxPooling1D", "PairFeatures", "BiDAFAttention"):
        assert keras.saving.get_registered_name(getattr(entailment_layers, layer)) == (
            f"tpr_keras>{layer}")
    model = BiDAFEntailmentModel(units=4, cell="tpru", num_roles=2, seed=1)

    def as_before(config):
        assert config["registered_name"] == "tpr_keras>BiDAFEntailmentModel"
        config["module"] = "tpr_keras.models.entailment"  # the module before the package

    old = saved_as_before(model, as_before)
    x = {"a": np.array([[6, 8, 3, 9, 7]], "int32"), "b": np.array([[8, 0, 0, 0, 0]], "int32")}
    restored = keras.models.load_model(old)
    assert type(restored) is BiDAFEntailmentModel
    np.testing.assert_allclose(restored(x), model(x), rtol=1e-6)


def test_models_build_their_recurrent_layers_through_entailment_layers(monkeypatch):
    """A benchmark swaps ``entailment_layers.make_recurrent_layer``; the models must see it."""
    calls = []
    original = entailment_layers.make_recurrent_layer

    def recording(cell, units, *args, **kwargs):
        calls.append(cell)
        return original(cell, units, *args, **kwargs)

    monkeypatch.setattr(entailment_layers, "make_recurrent_layer", recording)
    PlainEntailmentModel(units=4, cell="gru", seed=0)
    BiDAFEntailmentModel(units=4, cell="lstm", seed=0)
    assert calls == ["gru", "lstm", "lstm"]


TRICKY = [
    "",
    " ",
    "".join(data.VOCABULARY[2:]),  # every symbol
    "( a & b ) > ~ c",
    "\t(a\n|\rb)\f",  # the ignored whitespace
    "a\vb",  # vertical tab: not ignored, unknown
    "a\u00a0b\u2028c\u3000d\x85",  # Unicode spaces: unknown
    "ABC xyz 123 !?,;:\"'\\",  # upper case, digits, punctuation
    "\x00(a)\x00",  # NUL
    "é(ü)\U0001F600ß",  # Latin-1, non-Latin-1 and non-BMP characters
    "<pad><unk>",  # the special tokens' spellings are characters like any other
    "((((((((((a))))))))))" * 3,
]


def test_in_graph_tokenizer_gives_the_python_ids(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    data.save_vocabulary(vocab_file)
    tokenizer = EntailmentTokenizer(str(vocab_file))
    ragged = tokenizer.ragged_ids(tf.constant(TRICKY)).to_list()
    expected = [data.tokenize(text).tolist() for text in TRICKY]
    assert ragged == expected
    assert expected[2] == list(range(2, 34)) and expected[0] == [] and expected[1] == []
    dense = tokenizer(tf.constant(TRICKY)).numpy()
    assert dense.shape == (len(TRICKY), max(len(e) for e in expected))
    for row, ids in zip(dense, expected):
        np.testing.assert_array_equal(row[:len(ids)], ids)
        assert not row[len(ids):].any()
    assert tokenizer(tf.constant(["", " "])).numpy().tolist() == [[0], [0]]
    # Invalid UTF-8 (which no Python str holds) reads as U+FFFD, an unknown character.
    bad = tokenizer.ragged_ids(tf.constant([b"\xff(a)"])).to_list()
    assert bad == [data.tokenize("\ufffd(a)").tolist()] == [[1, 6, 8, 7]]
