"""The TP-Transformer converter on a checkpoint written by the authors' code.

``fixtures/tp_transformer_checkpoint.pt`` is what their ``save_state`` holds (their model
after 420 of their training steps on real batches, its ``state_dict`` and Adam state)
written by ``torch.save`` (PyTorch 2.13, zip); ``tp_transformer_state_dict_legacy.pt``
the same weights in the stream PyTorch 1.1 wrote; ``tp_transformer_vocab.txt`` their
vocabulary; ``tp_transformer_logits.npz`` their logits and greedy answers with those
weights on a real batch (``python -m tools.fidelity.tp_transformer --checkpoint_out``,
docs/fidelity_tp_transformer.md). The converted preset must give their logits (columns of ``<unk>`` and
``<pad>`` swapped, as the ids are) to float32 rounding and their answers as text.
"""

import json
import pathlib

import numpy as np
import pytest

from tests.fidelity.test_tp_transformer import depths
from tests.fidelity.tolerance import assert_close
from tools.checkpoint_conversion import convert_tp_transformer_checkpoints as convert
from tools.checkpoint_conversion import torch_checkpoint

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
CHECKPOINT = FIXTURES / "tp_transformer_checkpoint.pt"
LEGACY = FIXTURES / "tp_transformer_state_dict_legacy.pt"
VOCAB = FIXTURES / "tp_transformer_vocab.txt"


@pytest.fixture(scope="module")
def reference():
    meta = json.loads((FIXTURES / "tp_transformer_logits.json").read_text())
    return dict(np.load(FIXTURES / "tp_transformer_logits.npz")), meta


@pytest.fixture(scope="module")
def preset(tmp_path_factory, reference):
    _, meta = reference
    output = tmp_path_factory.mktemp("converted") / "tp_transformer_authors"
    convert.main(["--checkpoint", str(CHECKPOINT), "--vocab", str(VOCAB),
                  "--heads", str(meta["heads"]), "--output", str(output)])
    return output


def port_ids(their_ids):
    """Their ids as the port's (``<unk>`` and ``<pad>`` swapped)."""
    return convert.port_order(1000)[their_ids]


def test_both_torch_layouts_read_to_the_same_weights():
    state, info = convert.read_checkpoint(CHECKPOINT)
    legacy, _ = convert.read_checkpoint(LEGACY)
    assert sorted(state) == sorted(legacy)
    for name in state:
        np.testing.assert_array_equal(state[name], legacy[name])
    assert info["global_step"] == 420
    weights = convert.port_weights(state, layers=2)
    assert len(weights) == 107  # every parameter, one to one; the buffer pe left out
    assert torch_checkpoint.load(CHECKPOINT)["optimizer"]["param_groups"][0]["lr"] == 1e-3


def test_the_preset_gives_their_logits(preset, reference):
    from tpr_keras.models import TPTransformer

    data, meta = reference
    model = TPTransformer.from_preset(str(preset))
    source, target = data["source"], data["target"]
    logits = np.asarray(model({"source": port_ids(source), "target_in": port_ids(target[:, :-1])}))
    theirs = data["logits"]
    rows = target[:, :-1] != convert.PAD  # their decoder also masks padded query rows
    sizes = dict(meta["sizes"])
    depth = depths({"sizes": sizes}, {"input/source": source, "input/target": target})
    error, bound = assert_close("logits", logits[..., convert.port_order(theirs.shape[-1])][rows],
                                theirs[rows], depth["logits"])
    print(f"\nconverted logits: max |diff| {error:.3g} <= tolerance {bound:.3g}")
    # Swapping the two rows back is what the conversion adds: without it column 0 is off.
    assert np.max(np.abs(logits[rows][:, 0] - theirs[rows][:, 0])) > 100 * bound


def test_the_preset_answers_their_greedy_answers_as_text(preset, reference):
    from tpr_keras.models import MathAnswerer

    data, _ = reference
    itos = convert.read_vocabulary(VOCAB)
    questions = ["".join(itos[i] for i in row if i > convert.EOS) for row in data["source"]]
    answerer = MathAnswerer.from_preset(str(preset))
    assert answerer.preprocessor.vocabulary.tokens[4:] == tuple(itos[4:])
    theirs = []
    for row in data["greedy_ids"][:, 1:]:  # theirs start with <sos>
        row = list(row)
        end = row.index(convert.EOS) if convert.EOS in row else len(row)
        theirs.append("".join(itos[i] for i in row[:end]))
    assert all(theirs)  # characters, not specials only: a model that learned something
    length = data["greedy_ids"].shape[1] - 1
    assert answerer.generate(questions, max_length=length) == theirs


def test_their_torchtext_vocab_pt_reads_as_its_itos(tmp_path, monkeypatch):
    """Their just-in-time loader's ``vocab.pt``: ``torch.save`` (PyTorch 1.1's stream) of a
    torchtext ``Vocab``, whose pickled state is its ``__dict__`` with ``stoi`` a plain dict
    (torchtext's ``__getstate__``). Written here by hand in that layout, under the names
    torchtext's classes pickle as."""
    import collections
    import pickle
    import sys
    import types

    itos = convert.read_vocabulary(VOCAB)
    module = types.ModuleType("torchtext.vocab")

    class Vocab:
        def __getstate__(self):
            return {"itos": itos, "stoi": {c: i for i, c in enumerate(itos)},
                    "freqs": collections.Counter("12"), "vectors": None}

    Vocab.__module__, Vocab.__qualname__, module.Vocab = "torchtext.vocab", "Vocab", Vocab
    package = types.ModuleType("torchtext")
    package.vocab = module
    monkeypatch.setitem(sys.modules, "torchtext", package)
    monkeypatch.setitem(sys.modules, "torchtext.vocab", module)
    path = tmp_path / "vocab.pt"
    with open(path, "wb") as f:
        for part in (torch_checkpoint.LEGACY_MAGIC, 1001, {"little_endian": True},
                     Vocab(), []):
            pickle.dump(part, f, protocol=2)
    monkeypatch.delitem(sys.modules, "torchtext.vocab")  # read without the class
    monkeypatch.delitem(sys.modules, "torchtext")
    assert convert.read_vocabulary(str(path)) == itos


def test_a_data_parallel_checkpoint_loses_its_module_prefix(monkeypatch):
    state, _ = convert.read_checkpoint(CHECKPOINT)
    saved = {"global_step": 3, "model": {f"module.{k}": v for k, v in state.items()}}
    monkeypatch.setattr(torch_checkpoint, "load", lambda path: saved)
    unwrapped, info = convert.read_checkpoint("data_parallel.pt")
    assert sorted(unwrapped) == sorted(state) and info == {"global_step": 3}


def test_the_vocabulary_rule_counts_question_characters(tmp_path):
    assert convert.vocabulary(["ab", "b"]) == list(convert.SPECIALS) + ["b", "a"]
    assert convert.vocabulary(["ba", "c"]) == list(convert.SPECIALS) + ["a", "b", "c"]
    # Their full loader: the stripped questions (not the answers) of the three train folders.
    for folder, text in (("train-easy", " x \n9\n"), ("train-medium", "yx\n9\n"),
                         ("train-hard", "zzz\n9\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.txt").write_text(text)
    questions = list(convert.dataset_questions(str(tmp_path), ["m"]))
    assert questions == ["x", "yx", "zzz"]
    assert convert.vocabulary(questions)[4:] == ["z", "x", "y"]


def test_a_file_naming_code_is_refused(tmp_path):
    import pickle

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"model": print}))  # a pickle that names builtins.print
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        torch_checkpoint.load_pickle(path)


@pytest.mark.slow
@pytest.mark.tensorflow_backend
def test_the_preset_exports(preset, tmp_path):
    from tpr_keras.presets.preset_files import load_preset
    from train.export import export_preset

    served = export_preset(load_preset(str(preset)), str(tmp_path), "math", version=1)
    assert (pathlib.Path(served) / "saved_model.pb").is_file()
