"""Converts a MemN2N trained with the authors' MATLAB code into a tpr-keras bAbI preset.

    python -m tools.checkpoint_conversion.convert_memn2n_checkpoints \\
        --workspace memn2n.mat --output presets/memn2n_authors

Their code (https://github.com/facebookarchive/MemNN, ``MemN2N-babi-matlab``) saves no
model: ``run_babi.m`` and ``run_babi_joint.m`` train and test in one workspace. Its weights
are handle objects (``nn/Weight.m``) that a ``.mat`` file cannot hold portably, so after
their run these lines (:data:`SAVE_LINES`, MATLAB or GNU Octave) save their lookup tables
(``B = A^1``, then ``C^1 = A^2``, ..., ``C^K = W``: ``[d, words + sz time words]`` each),
their ``dict`` (word -> id, ``nil`` 1), the memory size ``config.sz`` and the word slots
``size(story, 1)``::

    tables = {model.modules{1}.weight};
    for i = 1:nhops, tables{i + 1} = memory{i}.emb_out.weight; end
    w = struct('words', {keys(dict)}, 'word_ids', cell2mat(values(dict)), ...
               'memory_size', config.sz, 'max_words', size(story, 1));
    for k = 1:numel(tables), w.(sprintf('table_%d', k - 1)) = tables{k}.D; end
    save('-v7', 'memn2n.mat', '-struct', 'w');

This reads that file (``scipy.io.loadmat``). The preset is the port's MemN2N as their code
builds it (docs/fidelity_memn2n.md): adjacent tying, temporal encoding, their coded
position encoding, empty slots in the softmax, the nil word looked up like a word, the
answer over the words and the time words, ``memory_size`` their ``sz``, ``max_words``
their word slots. The port's vocabulary is ``<pad>`` (their ``nil``), ``<unk>``, then
their words by their id (their id ``i >= 2`` is the port's ``i``); the ``<unk>`` row of
every table is zero, so its logit is 0 like their ``nil``'s (a zero row after training) and
the argmax (lower id on a tie) is one of their classes: the port's logits are theirs with
the ``nil`` logit repeated at id 1. Their parser lower-cases words and strips a final
``.`` or ``?``: the preset reads text without sentence ends and keeps a story's last ``sz``
sentences, as their ``train.m`` and ``test.m`` fill the memory.
"""

import argparse
import os

import numpy as np

from tools.checkpoint_conversion import add_preset_arguments, assign_weights, write_preset

REPOSITORY = "https://github.com/facebookarchive/MemNN"
#: The Octave/MATLAB lines that save their workspace's model for this converter.
SAVE_LINES = """tables = {model.modules{1}.weight};
for i = 1:nhops, tables{i + 1} = memory{i}.emb_out.weight; end
w = struct('words', {keys(dict)}, 'word_ids', cell2mat(values(dict)), ...
           'memory_size', config.sz, 'max_words', size(story, 1));
for k = 1:numel(tables), w.(sprintf('table_%d', k - 1)) = tables{k}.D; end
save('-v7', 'memn2n.mat', '-struct', 'w');
"""
#: Their options as the port's MemN2N arguments (docs/fidelity_memn2n.md).
THEIR_OPTIONS = {"sentence_encoding": "position_code", "mask_empty_memories": False,
                 "pad_gradient": True, "answer_time_words": True, "temporal_encoding": True,
                 "weight_tying": "adjacent"}


def read_workspace(path):
    """``(tables, dict, memory_size, max_words)`` of a ``.mat`` saved by :data:`SAVE_LINES`:
    their ``[d, words + sz]`` tables in order, ``{word: their id}``."""
    import scipy.io

    mat = scipy.io.loadmat(path)
    words = [str(np.asarray(w).squeeze()) for w in np.asarray(mat["words"]).ravel()]
    ids = np.asarray(mat["word_ids"]).ravel().astype(int).tolist()
    vocabulary = dict(zip(words, ids))
    if sorted(ids) != list(range(1, len(ids) + 1)) or vocabulary.get("nil") != 1:
        raise ValueError(f"{path}: not their dict (nil 1, then ids 2..V once each)")
    count = sum(1 for k in mat if k.startswith("table_"))
    tables = [np.asarray(mat[f"table_{k}"], np.float32) for k in range(count)]
    memory_size = int(np.asarray(mat["memory_size"]).squeeze())
    max_words = int(np.asarray(mat["max_words"]).squeeze())
    if count < 2 or any(t.shape != (tables[0].shape[0], len(ids) + memory_size)
                        for t in tables):
        raise ValueError(f"{path}: {count} tables of shapes {[t.shape for t in tables]}; "
                         f"expected at least 2 of [d, {len(ids)} words + {memory_size}]")
    return tables, vocabulary, memory_size, max_words


def port_tokens(vocabulary):
    """The port's vocabulary: ``<pad>`` (their ``nil``), ``<unk>``, their words by id."""
    return ["<pad>", "<unk>"] + [w for w, i in sorted(vocabulary.items(), key=lambda x: x[1])
                                 if i > 1]


def port_weights(tables, words):
    """``{port path: array}``: table ``k`` is ``memn2n/embedding_k``, its word columns
    the ``embeddings`` (a zero ``<unk>`` row inserted at id 1), its time columns the
    ``temporal`` rows."""
    out = {}
    for k, table in enumerate(tables):
        rows = table[:, :words].T
        out[f"memn2n/embedding_{k}/embeddings"] = np.concatenate(
            [rows[:1], np.zeros_like(rows[:1]), rows[1:]])
        out[f"memn2n/embedding_{k}/temporal"] = table[:, words:].T
    return out


def convert(tables, vocabulary, memory_size, max_words):
    """The port's ``MemN2N`` holding their weights, and its ``Vocabulary``."""
    from tpr_keras.data.babi import Vocabulary
    from tpr_keras.models import MemN2N

    vocab = Vocabulary(port_tokens(vocabulary))
    model = MemN2N(vocabulary_size=len(vocab), max_words=max_words,
                   embedding_dim=int(tables[0].shape[0]), num_hops=len(tables) - 1,
                   memory_size=memory_size, **THEIR_OPTIONS)
    weights = port_weights(tables, len(vocabulary))
    assign_weights(model, weights)
    return model, vocab


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True,
                        help="the .mat their workspace's SAVE_LINES wrote")
    add_preset_arguments(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from tpr_keras.presets.preset_files import sha256_file

    tables, vocabulary, memory_size, max_words = read_workspace(args.workspace)
    model, vocab = convert(tables, vocabulary, memory_size, max_words)
    return write_preset(
        model, vocab, args, task="babi", model_kind="MemN2N", source="workspace",
        serving_options={"max_story_sentences": memory_size, "keep_sentence_ends": False,
                         "trained_story_sentences": memory_size},
        conversion={"converter": "tools.checkpoint_conversion.convert_memn2n_checkpoints",
                    "authors_repository": REPOSITORY,
                    "workspace": os.path.basename(args.workspace),
                    "workspace_sha256": sha256_file(args.workspace),
                    "tables": len(tables), "their_words": len(vocabulary),
                    "time_words": memory_size, "unk_id": 1})


if __name__ == "__main__":
    main()
