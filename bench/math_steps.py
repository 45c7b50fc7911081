"""The training steps :mod:`bench.math_authors_step` times side by side, one per process: the
authors' PyTorch TP-Transformer step (their code, from a checkout), the port's TensorFlow
``Trainer`` step and its JAX ``JaxTrainer`` step, all at one size under the
``authors_code`` recipe; and the counts the benchmark reads them against: matmul FLOPs from
the model's sizes, and a float32 matmul of the model's feed-forward shape for the peak.

Each builder imports its framework when called: a worker process chooses its Keras backend
(or no Keras at all, for the authors' step) before the first import.
"""

import argparse
import importlib.util
import os
import re
import sys
import time

import numpy as np

#: The authors' vocabulary puts ``<unk>`` at 0 and ``<pad>`` at 1 (torchtext's
#: ``Field``), the port the other way round; ``<s>`` 2 and ``</s>`` 3 in both. Other
#: characters keep the port's ids: the step's cost does not depend on which is which.
AUTHORS_PAD = 1
AUTHORS_MODEL = os.path.join("models", "tp-transformer.py")

#: ``{name: (library, batch set, TensorFlow step's attention form, length groups[, cuts])}``.
CONFIGS = {"authors": ("torch", "same"), "tensorflow": ("tensorflow", "same", "matmul", 1),
           "jax": ("jax", "same"), "tensorflow_buckets": ("tensorflow", "buckets", "matmul", 1),
           "tensorflow_matmul": ("tensorflow", "same", "matmul", 1),
           "tensorflow_einsum": ("tensorflow", "same", "einsum", 1),
           "tensorflow_grouped": ("tensorflow", "same", "matmul", 3, "equal"),
           "tensorflow_buckets_grouped": ("tensorflow", "buckets", "matmul", 2, "equal"),
           "tensorflow_grid": ("tensorflow", "grid", "matmul", 1)}
#: ``tensorflow_groupedN`` / ``tensorflow_buckets_groupedN``: N length groups, cut where
#: the fewest padded positions remain (``..._equal``: of equal counts); ``..._groupedNxM``:
#: each cut again into M by the answers' length; ``..._mK``: cut and padded at multiples
#: of K (``group_multiple``).
_GROUPED = re.compile(
    r"^tensorflow(_buckets|_grid)?_grouped(\d+)(?:x(\d+))?(_equal)?(?:_m(\d+))?$")


def config_entry(name):
    """``CONFIGS[name]``, or a grouped TensorFlow configuration's entry; None if unknown."""
    grouped = _GROUPED.match(name)
    if (name in CONFIGS or not grouped or int(grouped.group(2)) < 1
            or int(grouped.group(3) or 1) < 1 or int(grouped.group(5) or 1) < 1):
        return CONFIGS.get(name)
    return ("tensorflow", grouped.group(1)[1:] if grouped.group(1) else "same", "matmul",
            int(grouped.group(2)), "equal" if grouped.group(4) else "padding",
            int(grouped.group(3) or 1), int(grouped.group(5) or 1))


def matmul_flops(sizes, vocabulary_size, source_length, target_length):
    """Forward-pass matrix-product FLOPs (2 per multiply-add) of one example.

    ``sizes``: the model's (``TPTransformer.paper_sizes[...]``: ``model_dim`` d,
    ``feed_forward_dim`` f, layer counts, ``use_role``, ``multiplicative_embedding``);
    ``source_length`` S and ``target_length`` T (the decoder's input, ``<s> answer``),
    padded or real. Counted: the multiplicative embedding's d×d map on every source and
    target position, per attention the query, key, value (and role) projections and the
    output map (d×d each), the scores and the weighted sum (2·Lq·Lk·d each, all heads
    together), the feed-forward pair (2·d·f per position), and the tied output
    projection (d·V per target position). Not counted: the elementwise work (layer
    norms, softmax, role binding, Adam), which a matmul peak does not measure. The
    backward pass costs two products of the same size per product (the gradients of
    both operands), so a training step is 3× this.
    """
    d, f = sizes["model_dim"], sizes["feed_forward_dim"]
    projections = 5 if sizes.get("use_role", True) else 4  # Q, K, V, (R,) output
    s, t = float(source_length), float(target_length)
    flops = 2 * (s + t) * d * d if sizes.get("multiplicative_embedding", True) else 0.0
    feed_forward = 4 * d * f
    flops += sizes["num_encoder_layers"] * (
        2 * projections * s * d * d + 4 * s * s * d + s * feed_forward)
    cross_from_target = 2 * (projections - 2) * t * d * d  # Q, (R,) output
    flops += sizes["num_decoder_layers"] * (
        2 * projections * t * d * d + 4 * t * t * d  # self-attention
        + cross_from_target + 4 * s * d * d + 4 * t * s * d  # cross-attention
        + t * feed_forward)
    return flops + 2 * t * d * vocabulary_size


def authors_batches(batches):
    """The port's batches in the authors' form: ``(src, trg)`` int64 arrays, ``trg`` =
    ``<s> answer </s>`` (their model reads ``trg[:, :-1]``, their loss ``trg[:, 1:]``),
    ``<pad>`` and ``<unk>`` swapped to their ids."""
    def theirs(ids):
        ids = np.asarray(ids, np.int64)
        return np.where(ids == 0, AUTHORS_PAD, np.where(ids == 1, 0, ids))

    return [(theirs(f["source"]), theirs(np.concatenate(
        [f["target_in"][:, :1], l["target_out"]], axis=1))) for f, l in batches]


def load_authors_module(checkout):
    """Their ``models/tp-transformer.py``, imported with the checkout first on
    ``sys.path`` (it imports their ``utils.lib``)."""
    root = os.path.abspath(checkout)
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location("authors_tp_transformer",
                                                  os.path.join(root, AUTHORS_MODEL))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def authors_step(checkout, sizes, vocabulary_size, recipe, seed=0):
    """Their training step (``utils/trainer.py``'s loop body, ``grad_accum_steps`` 1):
    ``model(src, trg[:, :-1])``, ``CrossEntropyLoss(ignore_index=<pad>)`` on the
    flattened logits, ``backward``, their ``compute_accuracy``, ``clip_grad_norm_``,
    ``Adam.step``, ``zero_grad``; their ``build_transformer`` at ``sizes``, dropout 0
    (their ``train.sh``). Returns ``(step, model)``; ``step((src, trg))`` -> examples."""
    import torch

    torch.manual_seed(seed)
    authors = load_authors_module(checkout)
    from utils.lib import compute_accuracy  # their checkout's, first on sys.path

    hyper = argparse.Namespace(input_dim=vocabulary_size, filter=sizes["feed_forward_dim"],
                               n_layers=sizes["num_encoder_layers"],
                               n_heads=sizes["num_heads"], hidden=sizes["model_dim"],
                               dropout=0.0)
    model = authors.build_transformer(params=hyper, pad_idx=AUTHORS_PAD)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe["learning_rate"],
                                 betas=(recipe["beta_1"], recipe["beta_2"]))
    criterion = torch.nn.CrossEntropyLoss(ignore_index=AUTHORS_PAD)

    def step(batch):
        src, trg = batch
        logits = model(src, trg[:, :-1])
        loss = criterion(logits.contiguous().view(-1, logits.shape[-1]),
                         trg[:, 1:].contiguous().view(-1))
        loss.backward()
        compute_accuracy(logits=logits, targets=trg, pad_value=AUTHORS_PAD)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=recipe["clip_norm"])
        optimizer.step()
        optimizer.zero_grad()
        return int(src.shape[0])

    return step, model


def counted_torch_flops(step, batch):
    """The matmul FLOPs PyTorch's ``FlopCounterMode`` counts in one ``step(batch)``
    (forward and backward), per example: a check of :func:`matmul_flops`."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        examples = step(batch)
    return counter.get_total_flops() / examples


def port_parts(preset, vocabulary_size, attention_form="matmul", seed=0, length_groups=1,
               group_cuts="padding", target_groups=1, group_multiple=1):
    """``(model_fn, optimizer_fn, compute_fn, TrainConfig)`` of ``train.math --size
    preset --recipe authors_code``: PyTorch-form Adam, the batch's token-mean loss, clip
    0.1, PyTorch's default initialisation where their code keeps it; the attention's
    projections as fused matmuls (the default) or einsums (``attention_form``); the
    loss's model call on ``length_groups`` length-sorted parts of each batch, each cut
    again into ``target_groups`` by answer length, cut and padded at multiples of
    ``group_multiple`` (:func:`tpr_keras.losses.sequence_cross_entropy`)."""
    import keras

    from tpr_keras.models.tp_transformer import TPTransformer, sequence_compute_fn
    from tpr_keras.training import TrainConfig, get_optimizer
    from tpr_keras.training.recipes.tp_transformer import resolve_size
    from tpr_keras.training.torch_init import torch_linear_init

    size, recipe = resolve_size(preset, recipe_name="authors_code")

    def model_fn():
        keras.utils.set_random_seed(seed)
        model = TPTransformer.from_paper_size(size, vocabulary_size=vocabulary_size,
                                              attention_form=attention_form)
        torch_linear_init(model, recipe["torch_default_init"], seed=seed)
        return model

    def optimizer_fn():
        return get_optimizer(recipe["optimizer"], recipe["learning_rate"], recipe["beta_1"],
                             recipe["beta_2"], recipe["epsilon"])

    compute = sequence_compute_fn(reduction=recipe["loss_reduction"],
                                  length_groups=length_groups, group_cuts=group_cuts,
                                  target_groups=target_groups, group_multiple=group_multiple)
    return model_fn, optimizer_fn, compute, TrainConfig(verbose=0,
                                                        clip_norm=recipe["clip_norm"])


def tensorflow_step(preset, vocabulary_size, folder, batches, attention_form="matmul",
                    length_groups=1, group_cuts="padding", target_groups=1,
                    group_multiple=1):
    """The port's TensorFlow ``Trainer`` step (``make_train_function``, one trace for
    every shape). Returns ``(step, trainer, tensor batches)``; ``step(batch)`` ->
    examples."""
    import tensorflow as tf

    from tpr_keras.training import Trainer

    trainer = Trainer(*port_parts(preset, vocabulary_size, attention_form,
                                  length_groups=length_groups, group_cuts=group_cuts,
                                  target_groups=target_groups,
                                  group_multiple=group_multiple), folder)
    tensors = [tf.nest.map_structure(tf.constant, b) for b in batches]
    spec = tf.nest.map_structure(
        lambda t: tf.TensorSpec([None] * t.shape.rank, t.dtype), tensors[0])
    compiled = trainer.make_train_function(spec)

    def step(batch):
        return int(compiled(batch)["metrics"].numpy()[4])

    return step, trainer, tensors


def jax_step(preset, vocabulary_size, folder):
    """The port's ``JaxTrainer`` step (``jax.jit``, one compilation per batch shape).
    Returns ``(step, trainer)``; ``step(batch)`` -> examples."""
    from tpr_keras.training import JaxTrainer

    trainer = JaxTrainer(*port_parts(preset, vocabulary_size), folder)
    return (lambda batch: int(trainer.train_step(batch)[4])), trainer


def matmul_rate(library, rows, model_dim, feed_forward_dim, seconds):
    """``{"wall": FLOP/s, "cpu": FLOP per CPU second}`` of ``library``'s float32 matmuls of
    the feed-forward's shapes, ``[rows, d] x [d, f]`` and ``[rows, f] x [f, d]`` taken in
    turn, for about ``seconds``."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, model_dim), np.float32)
    b = rng.standard_normal((model_dim, feed_forward_dim), np.float32)
    c = rng.standard_normal((rows, feed_forward_dim), np.float32)
    if library == "torch":
        import torch

        a, b, c = (torch.from_numpy(x) for x in (a, b, c))
        bt = b.t().contiguous()
        products = (lambda: torch.mm(a, b), lambda: torch.mm(c, bt))
    elif library == "jax":
        import jax

        mm = jax.jit(lambda x, y: x @ y)
        a, b, c = (jax.device_put(x) for x in (a, b, c))
        bt = jax.device_put(np.ascontiguousarray(np.asarray(b).T))
        products = (lambda: mm(a, b).block_until_ready(),
                    lambda: mm(c, bt).block_until_ready())
    else:
        import tensorflow as tf

        a, b, c = (tf.constant(x) for x in (a, b, c))
        bt = tf.transpose(b)
        products = (lambda: tf.linalg.matmul(a, b), lambda: tf.linalg.matmul(c, bt))
    for product in products:  # warm-up (and, for JAX, compilation)
        product()
    count, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        products[count % 2]()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and count % 2 == 0:
            flops = count * 2.0 * rows * model_dim * feed_forward_dim
            return {"wall": flops / elapsed,
                    "cpu": flops / max(time.process_time() - cpu, 1e-9)}
