"""EntailmentPreprocessor, the task model's NumPy tokenizer, gives the ids of the exporter's
in-graph EntailmentTokenizer and of the data's tokenize, and reads only its own vocabulary."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import entailment
from tpr_keras.export.entailment_tokenizer import EntailmentTokenizer
from tpr_keras.models import EntailmentPreprocessor
from tpr_keras.presets import PresetError, load_preset, sha256_file

FORMULAS = ["(a&b)", " ( p > ~(q) )\t\n", "", "P", "(a∧b)", "((a|b)>c)\x00", "é~(z)"]


def test_the_numpy_ids_are_the_in_graph_ones(tmp_path):
    entailment.save_vocabulary(tmp_path / "vocab.txt")
    graph = EntailmentTokenizer(str(tmp_path / "vocab.txt"))(tf.constant(FORMULAS)).numpy()
    ids = EntailmentPreprocessor()(FORMULAS)
    np.testing.assert_array_equal(ids, graph)
    assert ids.dtype == np.int32
    assert ids[0].tolist()[:5] == [6, 8, 3, 9, 7]
    assert EntailmentPreprocessor()([""]).shape == (1, 1)  # width >= 1, as the graph's


def test_unknown_characters_are_counted():
    preprocessor = EntailmentPreprocessor()
    assert [preprocessor.unknown_characters(f) for f in FORMULAS] == [0, 0, 0, 1, 1, 1, 1]


def test_from_preset_checks_the_vocabulary(tmp_path):
    assert isinstance(EntailmentPreprocessor.from_preset("tpru32_entailment"),
                      EntailmentPreprocessor)
    with pytest.raises(PresetError, match="task 'babi'.*BabiAnswerer"):
        EntailmentPreprocessor.from_preset("tpr_rnn_babi_all_tasks")
    # a consistent preset (checksums updated) whose vocabulary is another one
    folder = tmp_path / "other"
    shutil.copytree(load_preset("tpru32_entailment").path, folder)
    vocab = folder / "assets" / "vocab.txt"
    vocab.write_text(vocab.read_text().replace("a\n", "A\n"))
    meta = json.loads((folder / "metadata.json").read_text())
    meta["files"]["assets/vocab.txt"] = sha256_file(vocab)
    (folder / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(PresetError, match="not the character vocabulary"):
        EntailmentPreprocessor.from_preset(folder)
    with pytest.raises(PresetError, match="not the character vocabulary"):
        EntailmentTokenizer.from_preset(folder)


def test_the_in_graph_tokenizer_from_the_preset_gives_the_same_ids():
    graph = EntailmentTokenizer.from_preset("tpru32_entailment")
    np.testing.assert_array_equal(graph(tf.constant(FORMULAS)).numpy(),
                                  EntailmentPreprocessor.from_preset("tpru32_entailment")(
                                      FORMULAS))
