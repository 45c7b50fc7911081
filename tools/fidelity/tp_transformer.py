"""Fixture of ``tests/fidelity/test_tp_transformer.py``: the authors' TP-Transformer on a
real batch of the Mathematics Dataset (docs/fidelity_tp_transformer.md).

    python -m tools.fidelity.tp_transformer --authors_code /tmp/tp-transformer-authors \\
        --data_dir ../shared/data/mathematics \\
        --out tests/fidelity/fixtures/tp_transformer.npz

Needs PyTorch (a separate environment, docs/fidelity_tp_transformer.md) and a work tree of
https://github.com/ischlag/TP-Transformer; builds its ``models/tp-transformer.py``
(``build_transformer``) with small sizes and a fixed seed, unchanged. Records, under the
port's variable names (:class:`tpr_keras.models.tp_transformer.TPTransformer`, kernels
transposed to ``[in, out]``):

* ``weights/<path>``: the initial weights; ``grad/<path>``: every gradient of the loss
  on batch 0 (eval mode); ``final/<path>``: the weights after the training steps;
* ``input/source``, ``input/target`` (``<sos> .. <eos>``, padded), ``logits``, ``loss``
  (their ``CrossEntropyLoss(ignore_index=<pad>)`` on ``target[:, 1:]``);
* ``act/<layer>/out`` of the embedding (``embedding/source``, ``embedding/target``) and
  of every encoder and decoder layer (a layer's input is the previous output; a
  cross-attention reads the last encoder layer's), ``act/<layer>/in`` and ``/out`` of
  their attention and feed-forward sub-layers (``in``: the layer-normed stream);
* ``greedy/ids``: their ``greedy_inference`` on batch 0 (with ``<sos>``);
* ``train/source/NN``, ``train/target/NN``, ``train/loss`` ``[steps]``,
  ``train/grad_norm``: their training step (``model.train()``, ``torch.optim.Adam`` with
  their default lr and betas, their loss, ``clip_grad_norm_`` to their 0.1) on fixed
  batches, batch ``NN`` at step ``NN``; batch 0 is the batch above.

Batch ``b`` holds pair ``b`` of each ``--modules`` file (``train-easy``), encoded with
their vocabulary rule (torchtext ``Field(list)``: ``<unk> <pad> <sos> <eos>``, then the
questions' characters by decreasing count, ties in character order), padded with
``<pad>`` to the batch's longest sequence as their iterator does.

``--checkpoint_out DIR`` also writes the fixture of ``tests/tools/checkpoint_converters``
(:func:`write_checkpoint_fixture`): a checkpoint as their trainer saves it, their
vocabulary and their logits with its weights.
"""

import argparse
import collections
import os

import numpy as np

from tools.checkpoint_conversion.convert_tp_transformer_checkpoints import (
    EOS,
    PAD,
    SOS,
    UNK,
    port_names,
    vocabulary,
    write_symbols,
)
from tools.fidelity import common
MODULES = ("algebra__linear_1d", "arithmetic__add_or_sub", "numbers__place_value",
           "polynomials__evaluate")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors_code", required=True,
                        help="work tree of github.com/ischlag/TP-Transformer")
    parser.add_argument("--authors_commit", default=None,
                        help="its commit, when the work tree has no .git")
    parser.add_argument("--data_dir", required=True, help="the Mathematics Dataset folder")
    parser.add_argument("--out", default="tests/fidelity/fixtures/tp_transformer.npz")
    parser.add_argument("--modules", default=",".join(MODULES))
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--filter", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--steps", type=int, default=20)
    # Their main.py's defaults (Adam, lr 1e-4, betas (0.9, 0.995), clip 0.1).
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--beta1", type=float, default=0.9)
    parser.add_argument("--beta2", type=float, default=0.995)
    parser.add_argument("--max_abs_grad_norm", type=float, default=0.1)
    parser.add_argument("--greedy_length", type=int, default=8)
    parser.add_argument("--checkpoint_out", default=None,
                        help="also write the checkpoint-conversion fixture to this folder")
    parser.add_argument("--checkpoint_steps", type=int, default=400,
                        help="their training steps after the trajectory, before that save")
    parser.add_argument("--checkpoint_learning_rate", type=float, default=1e-3)
    return parser.parse_args(argv)


def write_checkpoint_fixture(folder, model, optimizer, itos, batch, args, torch, metadata,
                             train_step):
    """The fixture of ``tests/tools/checkpoint_converters``: after ``--checkpoint_steps``
    more of their training steps (``train_step(step)``: the loss of the step's batch, in
    train mode) at ``--checkpoint_learning_rate`` (so that the answers hold characters),
    their ``save_state`` dict (``global_step``, ``model``: the ``state_dict``,
    ``optimizer``, ``best_eval_loss``, ``best_eval_acc``, ``best_step``; here the
    last step and the trajectory's last loss) as ``torch.save`` writes it (zip), the bare
    ``state_dict`` in the pre-1.6 stream their PyTorch 1.1 wrote, their vocabulary one
    symbol per line, and their logits and greedy answers on ``batch`` in eval mode."""
    for group in optimizer.param_groups:
        group["lr"] = args.checkpoint_learning_rate
    for step in range(args.checkpoint_steps):
        optimizer.zero_grad()
        train_step(step).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=args.max_abs_grad_norm)
        optimizer.step()
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, "tp_transformer")
    steps = args.steps + args.checkpoint_steps
    state = {"global_step": steps, "model": model.state_dict(),
             "optimizer": optimizer.state_dict(), "best_eval_loss": metadata["last_loss"],
             "best_eval_acc": 0.0, "best_step": steps}
    torch.save(state, f"{stem}_checkpoint.pt")
    torch.save(model.state_dict(), f"{stem}_state_dict_legacy.pt",
               _use_new_zipfile_serialization=False)
    write_symbols(f"{stem}_vocab.txt", itos)
    source, target = batch
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(source), torch.from_numpy(target[:, :-1]))
        greedy = model.greedy_inference(torch.from_numpy(source), SOS, EOS,
                                        args.greedy_length, "cpu")
    arrays = {"source": source, "target": target, "logits": logits.numpy(),
              "greedy_ids": greedy.numpy()}
    metadata = dict(metadata, files=[os.path.basename(f"{stem}{suffix}") for suffix in (
        "_checkpoint.pt", "_state_dict_legacy.pt", "_vocab.txt")], heads=args.heads,
        checkpoint_steps=args.checkpoint_steps,
        checkpoint_learning_rate=args.checkpoint_learning_rate)
    return common.write_fixture(f"{stem}_logits.npz", arrays, metadata)


def encode(texts, stoi):
    """``<sos> chars <eos>``, padded with ``<pad>`` to the longest: int64 ``[B, L]``."""
    rows = [[SOS] + [stoi.get(c, UNK) for c in t] + [EOS] for t in texts]
    out = np.full((len(rows), max(len(r) for r in rows)), PAD, np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def mapped(model, names, tensor_of):
    """``{port path: array}`` of ``tensor_of(parameter)`` for every parameter (all must map)."""
    out = {}
    for name, parameter in model.named_parameters():
        path, transpose = names[name]  # KeyError: a parameter the mapping does not know
        value = tensor_of(parameter).detach().cpu().numpy().copy()  # not a view
        out[path] = value.T if transpose else value
    if len(out) != len(names):
        raise ValueError(f"{len(names) - len(out)} mapped names are no parameter of theirs.")
    return out


def hook_activations(model, layers, store):
    """Forward hooks filling ``store`` with ``act/<port layer>/out`` of the embedding and
    of every encoder and decoder layer (a layer's input is the output before it) and
    ``act/<port layer>/in|out`` of their attention and feed-forward sub-layers."""
    seen = collections.defaultdict(int)

    def record(key, inputs_too=True, repeat=None):
        def hook(module, inputs, output):
            name = key if repeat is None else f"{key}/{repeat[seen[key]]}"
            seen[key] += 1
            if inputs_too:
                store[f"act/{name}/in"] = inputs[0].detach().numpy()
            store[f"act/{name}/out"] = output.detach().numpy()
        return hook

    handles = [model.embedding.register_forward_hook(
        record("embedding", False, repeat=("source", "target")))]
    for i in range(layers):
        enc, dec = model.encoder.layers[i], model.decoder.layers[i]
        for module, key, inputs_too in (
                (enc, f"encoder_{i}", False), (enc.MHA, f"encoder_{i}/self_attention", True),
                (enc.densefilter, f"encoder_{i}/feed_forward", True),
                (dec, f"decoder_{i}", False), (dec.selfAttn, f"decoder_{i}/self_attention", True),
                (dec.encAttn, f"decoder_{i}/cross_attention", True),
                (dec.densefilter, f"decoder_{i}/feed_forward", True)):
            handles.append(module.register_forward_hook(record(key, inputs_too)))
    return handles


def train_steps(model, encoded, loss_of, args, arrays):
    """Their training step (utils/trainer.py: BasicSeq2SeqTrainer.train) on the fixed
    batches ``encoded``: each step's batch, and the losses and gradient norms, go into
    ``arrays``. Returns ``(optimizer, losses)``."""
    import torch

    optimizer = torch.optim.Adam(params=model.parameters(), lr=args.learning_rate,
                                 betas=(args.beta1, args.beta2))
    model.train()
    losses, norms = [], []
    for step, (source, target) in enumerate(encoded):
        arrays[f"train/source/{step:02d}"] = source
        arrays[f"train/target/{step:02d}"] = target
        optimizer.zero_grad()
        _, loss = loss_of(source, target)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(
            parameters=model.parameters(), max_norm=args.max_abs_grad_norm)))
        optimizer.step()
        losses.append(float(loss.detach()))
    arrays["train/loss"] = np.asarray(losses, np.float32)
    arrays["train/grad_norm"] = np.asarray(norms, np.float32)
    return optimizer, losses


def fixture_metadata(args, root, torch, itos, modules, names):
    """The fixture's ``metadata.json``: their code, the sizes, the optimizer and the data."""
    return {
        "module": "tools.fidelity.tp_transformer",
        "authors_repository": "https://github.com/ischlag/TP-Transformer",
        "authors_commit": common.authors_commit(root, args.authors_commit),
        "authors_file": "models/tp-transformer.py (build_transformer)",
        "torch_version": torch.__version__,
        "sizes": {"vocabulary": len(itos), "hidden": args.hidden, "heads": args.heads,
                  "filter": args.filter, "layers": args.layers},
        "seed": args.seed, "steps": args.steps,
        "optimizer": {"name": "torch.optim.Adam", "learning_rate": args.learning_rate,
                      "betas": [args.beta1, args.beta2], "eps": 1e-8,
                      "clip_grad_norm": args.max_abs_grad_norm,
                      "loss": "CrossEntropyLoss(ignore_index=<pad>), token mean"},
        "data": {"folder": "train-easy", "modules": modules,
                 "batch_rule": "batch b = pair b of each module file"},
        "vocabulary": itos, "ids": {"unk": UNK, "pad": PAD, "sos": SOS, "eos": EOS},
        "parameters": len(names),
    }


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    root = os.path.abspath(args.authors_code)
    authors = common.load_module(os.path.join(root, "models", "tp-transformer.py"),
                                 "authors_tp_transformer", root=root)
    modules = args.modules.split(",")
    pairs = [common.read_pairs(os.path.join(args.data_dir, "train-easy", f"{m}.txt"),
                               args.steps) for m in modules]
    batches = [[module_pairs[b] for module_pairs in pairs] for b in range(args.steps)]
    itos = vocabulary([q for batch in batches for q, _ in batch])
    stoi = {c: i for i, c in enumerate(itos)}
    encoded = [(encode([q for q, _ in batch], stoi), encode([a for _, a in batch], stoi))
               for batch in batches]

    torch.manual_seed(args.seed)
    hyper = argparse.Namespace(input_dim=len(itos), filter=args.filter, n_layers=args.layers,
                               n_heads=args.heads, hidden=args.hidden, dropout=0.0)
    model = authors.build_transformer(params=hyper, pad_idx=PAD)
    names = port_names(args.layers)
    arrays = {f"weights/{k}": v for k, v in mapped(model, names, lambda p: p).items()}
    criterion = torch.nn.CrossEntropyLoss(ignore_index=PAD)

    def loss_of(source, target):
        logits = model(torch.from_numpy(source), torch.from_numpy(target[:, :-1]))
        flat = torch.from_numpy(target[:, 1:]).contiguous().view(-1)
        return logits, criterion(logits.contiguous().view(-1, logits.shape[-1]), flat)

    # Batch 0 in eval mode: activations, logits, loss, every gradient, greedy answers.
    source, target = encoded[0]
    model.eval()
    handles = hook_activations(model, args.layers, arrays)
    logits, loss = loss_of(source, target)
    for handle in handles:
        handle.remove()
    loss.backward()
    arrays.update({f"grad/{k}": v for k, v in mapped(model, names, lambda p: p.grad).items()})
    arrays.update({"input/source": source, "input/target": target,
                   "logits": logits.detach().numpy(), "loss": loss.detach().numpy()})
    model.zero_grad()
    with torch.no_grad():
        arrays["greedy/ids"] = model.greedy_inference(
            torch.from_numpy(source), SOS, EOS, args.greedy_length, "cpu").numpy()

    optimizer, losses = train_steps(model, encoded, loss_of, args, arrays)
    arrays.update({f"final/{k}": v for k, v in mapped(model, names, lambda p: p).items()})
    metadata = fixture_metadata(args, root, torch, itos, modules, names)
    size = common.write_fixture(args.out, arrays, metadata)
    if args.checkpoint_out:
        write_checkpoint_fixture(
            args.checkpoint_out, model, optimizer, itos, encoded[0], args, torch,
            dict(metadata, last_loss=losses[-1]),
            lambda step: loss_of(*encoded[step % len(encoded)])[1])
    print(f"wrote {args.out}: {len(arrays)} arrays, {size} bytes; loss {arrays['loss']:.6f}, "
          f"trajectory {losses[0]:.5f} -> {losses[-1]:.5f}")


if __name__ == "__main__":
    main()
