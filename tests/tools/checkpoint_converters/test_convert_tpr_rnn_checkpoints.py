"""The TPR-RNN converter on a checkpoint written by the authors' code.

``fixtures/tpr_rnn_model.ckpt.*`` is what their ``tf.train.Saver`` wrote from their
``tpr_rnn_graph.py`` (small sizes, bAbI task 1) after 220 of their training steps on real
batches; ``tpr_rnn_qa1_train.pik`` their parser's cache holding their ``word2id``;
``tpr_rnn_logits.npz`` their logits with those weights on a real batch
(``python -m tools.fidelity.tpr_rnn --checkpoint_out``, docs/fidelity_tpr_rnn.md). The converted
preset must give their logits (with their pad column repeated for ``<unk>``) to float32
rounding, and their predicted answers as words.
"""

import json
import pathlib

import numpy as np
import pytest

from tests.fidelity.test_tpr_rnn import depths
from tests.fidelity.tolerance import assert_close
from tools.checkpoint_conversion import convert_tpr_rnn_checkpoints as convert

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
CHECKPOINT = FIXTURES / "tpr_rnn_model.ckpt"
CACHE = FIXTURES / "tpr_rnn_qa1_train.pik"


@pytest.fixture(scope="module")
def reference():
    meta = json.loads((FIXTURES / "tpr_rnn_logits.json").read_text())
    return dict(np.load(FIXTURES / "tpr_rnn_logits.npz")), meta


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    output = tmp_path_factory.mktemp("converted") / "tpr_rnn_authors"
    convert.main(["--checkpoint", str(CHECKPOINT), "--word2id", str(CACHE), "--task", "1",
                  "--output", str(output)])
    return output


def port_ids(their_ids):
    """Their word ids as the port's (``<unk>`` inserted at 1)."""
    return np.where(their_ids > 0, their_ids + 1, 0)


def logits_tolerance_depth(meta, data):
    return depths(meta, {"input/story": data["story"]})["logits"]


def test_the_checkpoint_holds_their_45_weights_and_their_word2id(reference):
    _, meta = reference
    weights, left_out = convert.read_checkpoint(str(CHECKPOINT))
    assert len(weights) == meta["parameters"] == 45
    assert left_out == sorted(meta["unmapped"])  # the q_e2 network, which feeds nothing
    assert convert.read_word2id(str(CACHE)) == meta["word2id"]


@pytest.mark.parametrize("implementation", ["parallel", "recurrent"])
def test_the_preset_gives_their_logits(preset, reference, implementation):
    from tpr_keras.models import TPRRNN

    data, meta = reference
    model = TPRRNN.from_preset(str(preset), implementation=implementation)
    assert model.pad_row == "trained"
    inputs = {"story": port_ids(data["story"]), "question": port_ids(data["question"])}
    logits, theirs = np.asarray(model(inputs)), data["logits"]
    error, bound = assert_close("logits", np.delete(logits, 1, axis=1), theirs,
                                logits_tolerance_depth(meta, data))
    print(f"\n{implementation}: converted logits max |diff| {error:.3g} <= tolerance {bound:.3g}")
    np.testing.assert_array_equal(logits[:, 1], logits[:, 0])  # <unk>: their pad class
    # Their trained pad row enters every sentence: the port's zero pad row is far off.
    zero = np.asarray(TPRRNN.from_preset(str(preset), pad_row="zero")(inputs))
    assert np.max(np.abs(np.delete(zero, 1, axis=1) - theirs)) > 100 * bound


def test_the_preset_answers_their_predictions_as_words(preset, reference):
    from tpr_keras.models import BabiAnswerer

    data, _ = reference
    id2word = {i: w for w, i in convert.read_word2id(str(CACHE)).items()}
    words = lambda ids: " ".join(id2word[i] for i in ids if i)  # noqa: E731
    stories = [[words(s) for s in story[:length]]
               for story, length in zip(data["story"], data["story_length"])]
    questions = [words(q) for q in data["question"]]
    theirs = [id2word[i] for i in np.argmax(data["logits"], axis=1)]
    answers = BabiAnswerer.from_preset(str(preset)).predict(stories, questions)["answer"]
    assert list(answers) == theirs
    assert np.mean(np.argmax(data["logits"], axis=1) == data["answer"]) >= 0.5  # learned


def test_a_word2id_that_is_not_theirs_is_refused(tmp_path):
    path = tmp_path / "word2id.json"
    path.write_text(json.dumps({"PAD_ID": 0, "mary": 2}))
    with pytest.raises(ValueError, match="not their word2id"):
        convert.read_word2id(str(path))


@pytest.mark.slow
@pytest.mark.tensorflow_backend
def test_the_preset_exports(preset, tmp_path):
    from tpr_keras.presets.preset_files import load_preset
    from train.export import export_preset

    served = export_preset(load_preset(str(preset)), str(tmp_path), "babi", version=1)
    assert (pathlib.Path(served) / "saved_model.pb").is_file()
