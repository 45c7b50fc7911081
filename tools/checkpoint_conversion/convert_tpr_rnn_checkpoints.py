"""Converts a checkpoint of the authors' TPR-RNN into a tpr-keras bAbI preset.

    python -m tools.checkpoint_conversion.convert_tpr_rnn_checkpoints \\
        --checkpoint logs/all/0/model.ckpt \\
        --word2id tasks/en-valid-10k-pik/qa0_train.pik --task 0 \\
        --output presets/tpr_rnn_authors

Reads what ``tf.train.Saver`` writes in the authors' ``tpr_rnn_graph.py``
(https://github.com/ischlag/TPR-RNN): ``model.ckpt.index`` and ``model.ckpt.data-*``,
given by their prefix, through ``tf.train.load_checkpoint`` (the ``.meta`` graph is not
needed). Of its variables the 45 weights the port has are converted; the optimizer's
slots and power accumulators, the hyper-parameter variables and the second
question-entity network (``query_entity/W*_net1_*``, which feeds nothing in their graph)
are not.

The checkpoint holds no vocabulary. Theirs (``word2id``) is ``PAD_ID`` at 0, then the
words of the training file as a Python set lists them: an order that depends on the
string hash seed of the process that parsed the data, so it cannot be rebuilt from the
data. Their parser stores it in its cache beside the data,
``tasks/en-valid-10k-pik/qa<task>_train.pik`` (a pickle of the vectorised arrays and
``word2id``, read here without running code from it); ``--word2id`` takes that file or
a JSON ``{word: id}``.

The port's vocabulary is ``<pad> 0, <unk> 1``, then their words in their order (their id
``i`` is the port's ``i + 1``): their ``V`` classes become ``V + 1``. The new ``<unk>``
embedding row is zero (an unknown word, which their parser cannot read at all, adds
nothing to a sentence) and its output column is a copy of their ``PAD_ID`` column, so
its logit equals that of a class their training never answered and the argmax (lower id
on a tie) is always one of their classes: the port's logits are theirs with the pad
column repeated at id 1. Their pad word is an ordinary trained embedding row that enters
every sentence's sum: the preset keeps it (``pad_row="trained"``). Their layer norms'
epsilon and their position scaling are the port's ``initialization="code"``.
"""

import argparse
import json
import os
import re

import numpy as np

from tools.checkpoint_conversion import add_preset_arguments, assign_weights, write_preset

REPOSITORY = "https://github.com/ischlag/TPR-RNN"
#: Their variables outside the MLPs and layer norms -> the port's paths.
FIXED = {"variables/word_embedding": "encoder/word_embedding/embeddings",
         "variables/story_position_embedding": "encoder/positions",
         "variables/output_embedding": "inference/z/kernel"}
#: Their MLP scopes -> the port's network of each ``net<i>`` (None: no counterpart).
SCOPES = {"story_entity": ("update/e1", "update/e2"),
          "story_roles": ("update/r1", "update/r2", "update/r3"),
          "query_entity": ("inference/n", None),
          "query_roles": ("inference/l1", "inference/l2", "inference/l3")}
STEPS = {"one_step": 1, "two_step": 2, "three_step": 3}
WEIGHT = re.compile(r"model/.+/(W[12]_net\d_[wb]|LN_gain|LN_bias)")
#: The stories their parser reads: the last 70 sentences (130 in task 3).
TRAINED_STORY_SENTENCES = {3: 130}


def is_weight(name):
    """Whether a variable of their graph (or checkpoint) is a model weight."""
    return name in FIXED or WEIGHT.fullmatch(name) is not None


def port_name(name):
    """The port's variable path of their weight ``name``; None for ``q_e2``'s."""
    if name in FIXED:
        return FIXED[name]
    parts = name.split("/")
    if parts[-2] in STEPS:
        kind = {"LN_gain": "gain", "LN_bias": "bias"}[parts[-1]]
        return f"inference/layer_norm_{STEPS[parts[-2]]}/{kind}"
    match = re.fullmatch(r"W([12])_net(\d)_([wb])", parts[-1])
    network = SCOPES[parts[-2]][int(match.group(2))]
    layer = {"1": "hidden", "2": "output"}[match.group(1)]
    kind = {"w": "kernel", "b": "bias"}[match.group(3)]
    return None if network is None else f"{network}/{layer}/{kind}"


def port_names(names):
    """``{their weight name: port path or None}`` of the weights among ``names``."""
    return {name: port_name(name) for name in names if is_weight(name)}


def read_checkpoint(prefix):
    """``{port path: array}`` of the weights in their checkpoint (layer-norm scalars as
    ``()``), and the names left out."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    names = port_names(reader.get_variable_to_shape_map())
    weights = {path: np.asarray(reader.get_tensor(name)) for name, path in names.items()
               if path is not None}
    weights = {k: (v.reshape(()) if "layer_norm" in k else v) for k, v in weights.items()}
    return weights, sorted(n for n, p in names.items() if p is None)


def read_word2id(path):
    """Their ``word2id`` from their parser's cache (``.pik``) or a JSON object."""
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            word2id = json.load(f)
    else:
        from tools.checkpoint_conversion import torch_checkpoint

        cached = torch_checkpoint.load_pickle(path)
        word2id = cached[-1] if isinstance(cached, (tuple, list)) else cached
    word2id = {str(w): int(i) for w, i in dict(word2id).items()}
    if sorted(word2id.values()) != list(range(len(word2id))) or word2id.get("PAD_ID") != 0:
        raise ValueError(f"{path}: not their word2id (PAD_ID 0, then ids 1..V-1 once each)")
    return word2id


def port_tokens(word2id):
    """The port's vocabulary: ``<pad>``, ``<unk>``, then their words by their id."""
    words = sorted((i, w) for w, i in word2id.items() if i > 0)
    return ["<pad>", "<unk>"] + [w for _, w in words]


def with_unknown(weights):
    """Their weights with the ``<unk>`` embedding row (zero) and output column (a copy of
    their ``PAD_ID`` column) inserted at id 1."""
    out = dict(weights)
    embedding = weights[FIXED["variables/word_embedding"]]
    out[FIXED["variables/word_embedding"]] = np.concatenate(
        [embedding[:1], np.zeros_like(embedding[:1]), embedding[1:]])
    z = weights[FIXED["variables/output_embedding"]]
    out[FIXED["variables/output_embedding"]] = np.concatenate([z[:, :1], z[:, :1], z[:, 1:]], 1)
    return out


def sizes_of(weights):
    """Constructor arguments of the port read off their weights' shapes."""
    vocabulary, symbol = weights["encoder/word_embedding/embeddings"].shape
    return {"vocabulary_size": int(vocabulary) + 1, "symbol_dim": int(symbol),
            "max_words": int(weights["encoder/positions"].shape[0]),
            "entity_dim": int(weights["inference/z/kernel"].shape[0]),
            "relation_dim": int(weights["update/r1/output/kernel"].shape[1]),
            "hidden_dim": int(weights["update/e1/hidden/kernel"].shape[1])}


def convert(weights, word2id, implementation="parallel"):
    """The port's ``TPRRNN`` (``initialization="code"``, ``pad_row="trained"``) holding
    their weights, and its ``Vocabulary``."""
    from tpr_keras.data.babi import Vocabulary
    from tpr_keras.models import TPRRNN

    embedding = weights["encoder/word_embedding/embeddings"]
    if len(word2id) != embedding.shape[0]:
        raise ValueError(f"word2id has {len(word2id)} words, the embedding "
                         f"{embedding.shape[0]} rows")
    vocab = Vocabulary(port_tokens(word2id))
    model = TPRRNN(**sizes_of(weights), initialization="code", pad_row="trained",
                   implementation=implementation)
    weights = with_unknown(weights)
    assign_weights(model, weights)
    return model, vocab


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True,
                        help="their checkpoint prefix (model.ckpt, beside model.ckpt.index)")
    parser.add_argument("--word2id", required=True,
                        help="their parser's cache qa<task>_train.pik, or a JSON {word: id}")
    add_preset_arguments(parser)
    parser.add_argument("--task", type=int, default=0,
                        help="the task they trained (0: all tasks, their default model)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from tpr_keras.presets.preset_files import sha256_file

    weights, left_out = read_checkpoint(args.checkpoint)
    word2id = read_word2id(args.word2id)
    model, vocab = convert(weights, word2id)
    sentences = TRAINED_STORY_SENTENCES.get(args.task, 70)
    return write_preset(
        model, vocab, args, task="babi", model_kind="TPR-RNN", source="checkpoint",
        serving_options={"max_story_sentences": sentences, "keep_sentence_ends": True,
                         "trained_story_sentences": sentences},
        conversion={"converter": "tools.checkpoint_conversion.convert_tpr_rnn_checkpoints",
                    "authors_repository": REPOSITORY, "task": args.task,
                    "checkpoint": os.path.basename(args.checkpoint),
                    "checkpoint_index_sha256": sha256_file(args.checkpoint + ".index"),
                    "weights": len(weights), "left_out": left_out,
                    "word2id": os.path.basename(args.word2id),
                    "their_classes": len(word2id), "unk_id": 1})


if __name__ == "__main__":
    main()
