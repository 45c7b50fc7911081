"""Converts a checkpoint of the authors' TP-Transformer into a tpr-keras math preset.

    python -m tools.checkpoint_conversion.convert_tp_transformer_checkpoints \\
        --checkpoint logs/run/best_eval_model.pt --heads 8 \\
        --data_dir ../shared/data/mathematics --modules algebra__linear_1d \\
        --output presets/tp_transformer_authors

Reads what the authors' code (https://github.com/ischlag/TP-Transformer,
``utils/trainer.py``, ``save_state``) writes with ``torch.save``: a dict of
``global_step``, ``model`` (the ``state_dict`` of ``models/tp-transformer.py``'s
``Seq2Seq``; keys prefixed ``module.`` when trained under ``nn.DataParallel``),
``optimizer``, ``best_eval_loss``, ``best_eval_acc`` and ``best_step``; a bare
``state_dict`` is read too. The file is read without PyTorch
(:mod:`tools.checkpoint_conversion.torch_checkpoint`). The optimizer state is not
converted (a preset holds no optimizer).

The checkpoint holds no vocabulary. Theirs is torchtext's ``Field(list)`` vocabulary of
the training questions: ``<unk> 0, <pad> 1, <sos> 2, <eos> 3``, then every character
of the questions by decreasing count, ties in character order (:func:`vocabulary`).
``--vocab`` gives it as a file (one symbol per line in id order, as written by
:func:`write_symbols`, or the ``vocab.pt`` of their just-in-time loader), or
``--data_dir`` with ``--modules`` recounts it from the Mathematics Dataset the way their
full loader does (the stripped questions of ``train-easy``, ``train-medium`` and
``train-hard`` of those modules). The port's vocabulary keeps their characters at their
ids and swaps the first two specials (``<pad> 0, <unk> 1, <s> 2, </s> 3``); rows 0 and 1
of the embedding (which is also the output projection) swap with them, so the port's
logits are theirs with columns 0 and 1 swapped.

Sizes come from the weights except the number of heads (``--heads``, their ``-nh``,
default 8), which no weight shape shows. Their models all use the multiplicative
embedding and roles; the Transformer baseline (``models/transformer.py``) is not
converted.
"""

import argparse
import collections
import os

import numpy as np

from tools.checkpoint_conversion import (add_preset_arguments, assign_weights, torch_checkpoint,
                                       write_preset)

#: torchtext's specials as their ``Field`` orders them; the port's ids of each.
SPECIALS = ("<unk>", "<pad>", "<sos>", "<eos>")
UNK, PAD, SOS, EOS = range(4)
PORT_SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
TRAIN_FOLDERS = ("train-easy", "train-medium", "train-hard")
REPOSITORY = "https://github.com/ischlag/TP-Transformer"


def port_names(layers):
    """``{their parameter name: (port variable path, transpose)}`` for every parameter of
    their ``Seq2Seq`` with ``layers`` encoder and decoder layers (``nn.Linear`` weights
    are ``[out, in]``, the port's kernels ``[in, out]``)."""
    names = {"embedding.tok_embedding.weight": ("embedding/embeddings", False),
             "embedding.linear.weight": ("embedding/multiplier/kernel", True),
             "embedding.linear.bias": ("embedding/multiplier/bias", False)}

    def linear(theirs, ours):
        names[f"{theirs}.weight"] = (f"{ours}/kernel", True)
        names[f"{theirs}.bias"] = (f"{ours}/bias", False)

    def attention(theirs, ours):
        for w, part in (("W_q", "query"), ("W_k", "key"), ("W_v", "value"),
                        ("W_r", "role"), ("W_o", "output")):
            names[f"{theirs}.{w}.weight"] = (f"{ours}/{part}_kernel", True)
            names[f"{theirs}.{w}.bias"] = (f"{ours}/{part}_bias", False)

    for stack, norms, attentions in (
            ("encoder", 3, (("MHA", "self_attention"),)),
            ("decoder", 4, (("selfAttn", "self_attention"), ("encAttn", "cross_attention")))):
        for i in range(layers):
            theirs, ours = f"{stack}.layers.{i}", f"{stack}_{i}"
            for n in range(1, norms + 1):
                names[f"{theirs}.layernorm{n}.weight"] = (f"{ours}/norm{n}/gamma", False)
                names[f"{theirs}.layernorm{n}.bias"] = (f"{ours}/norm{n}/beta", False)
            for their_attention, our_attention in attentions:
                attention(f"{theirs}.{their_attention}", f"{ours}/{our_attention}")
            linear(f"{theirs}.densefilter.linear1", f"{ours}/feed_forward/inner")
            linear(f"{theirs}.densefilter.linear2", f"{ours}/feed_forward/outer")
    return names


#: Buffers of their ``state_dict`` that are no weights (the sinusoidal positions).
BUFFERS = ("embedding.pe",)


def vocabulary(questions):
    """Their torchtext ``Vocab`` of ``questions``: the specials, then every character by
    decreasing count, ties sorted."""
    counts = collections.Counter()
    for question in questions:
        counts.update(question)
    ordered = sorted(sorted(counts.items()), key=lambda item: item[1], reverse=True)
    return list(SPECIALS) + [c for c, _ in ordered if c not in SPECIALS]


def dataset_questions(data_dir, modules):
    """The stripped questions of ``modules`` (``"all"``: every module of ``train-easy``)
    in ``train-easy``, ``-medium`` and ``-hard``, as their full loader reads them."""
    if modules == ["all"]:
        modules = sorted(n[:-4] for n in os.listdir(os.path.join(data_dir, "train-easy"))
                         if n.endswith(".txt"))
    for folder in TRAIN_FOLDERS:
        for module in modules:
            with open(os.path.join(data_dir, folder, f"{module}.txt"), encoding="utf-8") as f:
                for i, line in enumerate(f):
                    if i % 2 == 0:
                        yield line.strip()


def write_symbols(path, itos):
    """Writes ``itos`` one symbol per line (line ``i``: id ``i``), UTF-8."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(s + "\n" for s in itos))


def read_vocabulary(path):
    """Their ``itos`` from a ``vocab.pt`` (a pickled torchtext ``Vocab``) or a text file
    of one symbol per line."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK") or head[:1] == b"\x80":
        itos = list(torch_checkpoint.load(path).itos)
    else:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        itos = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    if tuple(itos[:4]) != SPECIALS:
        raise ValueError(f"{path}: their vocabulary starts with {SPECIALS}, got {itos[:4]}")
    return itos


def read_checkpoint(path):
    """``(state_dict, info)`` of a ``torch.save`` file of theirs: the model's arrays
    (``module.`` prefixes removed) and the numbers saved beside them."""
    saved = torch_checkpoint.load(path)
    state = saved.get("model", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict) or not state:
        raise ValueError(f"{path}: neither their save_state dict nor a state_dict")
    if all(k.startswith("module.") for k in state):
        state = {k[len("module."):]: v for k, v in state.items()}
    info = {k: (v.item() if isinstance(v, np.ndarray) else v) for k, v in saved.items()
            if k in ("global_step", "best_eval_loss", "best_eval_acc", "best_step")}
    return dict(state), info


def sizes_of(state, heads):
    """Constructor arguments of the port read off their weights' shapes."""
    vocabulary_size, model_dim = state["embedding.tok_embedding.weight"].shape
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layers."))
    decoder = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("decoder.layers."))
    if decoder != layers:
        raise ValueError(f"{layers} encoder but {decoder} decoder layers")
    if model_dim % heads:
        raise ValueError(f"--heads {heads} does not divide the model width {model_dim}")
    return {"vocabulary_size": int(vocabulary_size), "model_dim": int(model_dim),
            "num_heads": int(heads), "num_encoder_layers": layers,
            "num_decoder_layers": layers, "feed_forward_dim":
            int(state["encoder.layers.0.densefilter.linear1.weight"].shape[0])}


def port_weights(state, layers):
    """``{port variable path: array}`` of every weight of theirs, one to one.

    Raises:
        ValueError: a parameter the mapping does not know, or one it misses.
    """
    names = port_names(layers)
    unknown = sorted(set(state) - set(names) - set(BUFFERS))
    missing = sorted(set(names) - set(state))
    if unknown or missing:
        raise ValueError(f"not their TP-Transformer's parameters: unknown {unknown[:5]}, "
                         f"missing {missing[:5]}")
    return {path: (np.asarray(state[name]).T if transpose else np.asarray(state[name]))
            for name, (path, transpose) in names.items()}


def port_order(size):
    """The port's id order of their ids: their ``<pad>`` (1) first, then ``<unk>`` (0)."""
    return np.array([PAD, UNK] + list(range(2, size)))


def convert(state, itos, heads):
    """The port's ``TPTransformer`` holding their weights, and its ``CharVocabulary``."""
    from tpr_keras.data.mathematics import CharVocabulary
    from tpr_keras.models import TPTransformer

    sizes = sizes_of(state, heads)
    if len(itos) != sizes["vocabulary_size"]:
        raise ValueError(f"the vocabulary has {len(itos)} symbols, the embedding "
                         f"{sizes['vocabulary_size']} rows")
    vocab = CharVocabulary(PORT_SPECIALS + tuple(itos[4:]))
    weights = port_weights(state, sizes["num_encoder_layers"])
    weights["embedding/embeddings"] = weights["embedding/embeddings"][port_order(len(itos))]
    model = TPTransformer(**sizes, pad_id=CharVocabulary.PAD_ID,
                          start_id=CharVocabulary.START_ID, end_id=CharVocabulary.END_ID,
                          vocabulary=list(vocab.tokens))
    assign_weights(model, weights)
    return model, vocab


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="their torch.save file (.pt)")
    add_preset_arguments(parser)
    parser.add_argument("--heads", type=int, default=8, help="their -nh (default 8)")
    parser.add_argument("--vocab", default=None,
                        help="their vocabulary: vocab.pt or one symbol per line")
    parser.add_argument("--data_dir", default=None,
                        help="Mathematics Dataset folder to recount their vocabulary from")
    parser.add_argument("--modules", default=None,
                        help="with --data_dir: the modules they trained on ('all': every)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if bool(args.vocab) == bool(args.data_dir):
        raise SystemExit("give their vocabulary: --vocab FILE, or --data_dir with --modules")
    if args.vocab:
        itos, vocab_source = read_vocabulary(args.vocab), {"file": args.vocab}
    else:
        if not args.modules:
            raise SystemExit("--data_dir needs --modules")
        modules = args.modules.split(",")
        itos = vocabulary(dataset_questions(args.data_dir, modules))
        vocab_source = {"data_dir": args.data_dir, "modules": modules,
                        "folders": list(TRAIN_FOLDERS)}
    state, info = read_checkpoint(args.checkpoint)
    model, vocab = convert(state, itos, args.heads)
    from tpr_keras.presets.preset_files import sha256_file

    return write_preset(
        model, vocab, args, task="math", model_kind="TP-Transformer", source="checkpoint",
        conversion={"converter": "tools.checkpoint_conversion."
                                 "convert_tp_transformer_checkpoints",
                    "authors_repository": REPOSITORY,
                    "checkpoint": os.path.basename(args.checkpoint),
                    "checkpoint_sha256": sha256_file(args.checkpoint),
                    "checkpoint_info": info,
                    "weights": len(port_names(model.get_config()["num_encoder_layers"])),
                    "vocabulary": vocab_source,
                    "their_ids": {"unk": UNK, "pad": PAD, "sos": SOS, "eos": EOS}})


if __name__ == "__main__":
    main()
