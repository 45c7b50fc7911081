"""The MemN2N converter on a workspace saved from the authors' MATLAB code.

``tests/fidelity/fixtures/memn2n.mat`` is what the converter's ``SAVE_LINES`` wrote in GNU
Octave from the workspace of their code after 20 of their training steps (their
``train.m``, small sizes, bAbI task 1); ``memn2n.npz``'s ``trained/logits`` their logits
with those weights on a real batch (``python -m tools.fidelity.memn2n``, docs/fidelity_memn2n.md).
The converted preset must give their logits (with their ``nil`` logit repeated for
``<unk>``) to float32 rounding, and their predicted answers as words.
"""

import json
import pathlib

import numpy as np
import pytest

from tests.fidelity.test_memn2n import depths
from tests.fidelity.tolerance import assert_close
from tools.checkpoint_conversion import convert_memn2n_checkpoints as convert

FIXTURES = pathlib.Path(__file__).parents[2] / "fidelity" / "fixtures"
WORKSPACE = FIXTURES / "memn2n.mat"


@pytest.fixture(scope="module")
def reference():
    meta = json.loads((FIXTURES / "memn2n.json").read_text())
    return dict(np.load(FIXTURES / "memn2n.npz")), meta


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    output = tmp_path_factory.mktemp("converted") / "memn2n_authors"
    convert.main(["--workspace", str(WORKSPACE), "--output", str(output)])
    return output


def port_ids(fixture_ids):
    """The fixture's ids (their id - 1, ``nil`` 0) as the preset's (their id, ``nil`` 0)."""
    return np.where(fixture_ids > 0, fixture_ids + 1, 0)


def test_the_workspace_holds_their_tables_and_dict(reference):
    data, meta = reference
    tables, vocabulary, memory_size, max_words = convert.read_workspace(str(WORKSPACE))
    assert vocabulary == meta["dict"]
    assert (len(tables), memory_size, max_words) == (
        meta["sizes"]["num_hops"] + 1, meta["sizes"]["memory_size"], meta["sizes"]["max_words"])
    words = len(vocabulary)  # their trained tables are the trajectory's final weights
    for k, table in enumerate(tables):
        np.testing.assert_array_equal(table[:, :words].T,
                                      data[f"traj/final/memn2n/embedding_{k}/embeddings"])
        np.testing.assert_array_equal(table[:, words:].T,
                                      data[f"traj/final/memn2n/embedding_{k}/temporal"])


def test_the_preset_gives_their_logits(preset, reference):
    from tpr_keras.models import MemN2N

    data, meta = reference
    model = MemN2N.from_preset(str(preset))
    assert {k: getattr(model, k) for k in convert.THEIR_OPTIONS} == convert.THEIR_OPTIONS
    inputs = {"story": port_ids(data["input/story"]),
              "question": port_ids(data["input/question"])}
    logits, theirs = np.asarray(model(inputs)), data["trained/logits"]
    error, bound = assert_close("logits", np.delete(logits, 1, axis=1), theirs,
                                depths(meta)["logits"])
    print(f"\nconverted logits max |diff| {error:.3g} <= tolerance {bound:.3g}")
    np.testing.assert_array_equal(logits[:, 1], logits[:, 0])  # <unk>: their nil's logit
    assert np.max(np.abs(theirs - data["logits"])) > 100 * bound  # the trained weights'


def test_the_preset_answers_their_predictions_as_words(preset, reference):
    from tpr_keras.models import BabiAnswerer

    data, meta = reference
    id2word = {i - 1: w for w, i in meta["dict"].items()}  # the fixture's ids
    words = lambda ids: " ".join(id2word[i] for i in ids if i)  # noqa: E731
    stories = [[words(s) for s in story if np.any(s)] for story in data["input/story"]]
    questions = [words(q) for q in data["input/question"]]
    theirs = [id2word[i] for i in np.argmax(data["trained/logits"], axis=1)]
    answers = BabiAnswerer.from_preset(str(preset)).predict(stories, questions)["answer"]
    assert list(answers) == theirs


def test_a_dict_that_is_not_theirs_is_refused(tmp_path):
    import scipy.io

    path = tmp_path / "memn2n.mat"
    scipy.io.savemat(str(path), {"words": np.array(["nil", "mary"], object),
                                 "word_ids": np.array([1, 3]), "memory_size": 2,
                                 "max_words": 3, "table_0": np.zeros((2, 4)),
                                 "table_1": np.zeros((2, 4))})
    with pytest.raises(ValueError, match="not their dict"):
        convert.read_workspace(str(path))
