"""The batch sets of :mod:`bench.math_authors_step`: the same questions batched as the
authors' loader pads them and as the port's own pipelines bucket them, drawn, saved for the
worker processes, and counted in matrix-product FLOPs per example."""

import numpy as np

from bench import math_steps

#: The arrays of a batch: the features', then the labels'.
KEYS = ("source", "target_in", "target_out", "module")


def make_batch_sets(split, batch_size, count, names=("same", "buckets")):
    """``{name: count batches}`` of ``names``: ``"same"`` plain batches padded per batch,
    ``"buckets"`` the port's question-length buckets, ``"grid"`` its (question, answer)
    length grid (``train.math --answer_buckets``), each drawn at random from the full
    batches of one shuffled pass (not its first ones, which come from the fullest
    buckets), as numpy ``(features, labels)``."""
    from tpr_keras.data import mathematics

    options = {"same": {"bucket_boundaries": None}, "buckets": {},
               "grid": {"bucket_boundaries": mathematics.GRID_BUCKET_BOUNDARIES,
                        "answer_bucket_boundaries": mathematics.GRID_ANSWER_BOUNDARIES}}

    def take(name):
        ds = mathematics.make_dataset(split, batch_size, shuffle=True, seed=0,
                                      drop_remainder=True, **options[name])
        batches = [({k: v.numpy() for k, v in f.items()}, {k: v.numpy() for k, v in l.items()})
                   for f, l in ds]
        if len(batches) < count:
            raise SystemExit(f"the data gives {len(batches)} full {name} batches of "
                             f"{batch_size}, not {count}: lower --batches or raise "
                             "--limit_per_file")
        chosen = np.sort(np.random.default_rng(0).choice(len(batches), count, replace=False))
        return [batches[i] for i in chosen]

    return {name: take(name) for name in names}


def save_batches(sets, path):
    np.savez(path, **{f"{name}/{i}/{key}": (f if key in f else l)[key]
                      for name, batches in sets.items() for i, (f, l) in enumerate(batches)
                      for key in KEYS})


def load_batches(path, name):
    with np.load(path) as data:
        count = len({k.split("/")[1] for k in data.files if k.startswith(name + "/")})
        return [({k: data[f"{name}/{i}/{k}"] for k in KEYS[:2]},
                 {k: data[f"{name}/{i}/{k}"] for k in KEYS[2:]}) for i in range(count)]


def flop_counts(batches, sizes, vocabulary_size):
    """Mean training-step matmul FLOPs per example over ``batches``: on the padded
    lengths (what the step computes) and on each example's own (``useful``)."""
    padded, useful, examples = 0.0, 0.0, 0
    for f, _ in batches:
        rows = f["source"].shape[0]
        padded += rows * 3 * math_steps.matmul_flops(
            sizes, vocabulary_size, f["source"].shape[1], f["target_in"].shape[1])
        for s, t in zip((f["source"] != 0).sum(1), (f["target_in"] != 0).sum(1)):
            useful += 3 * math_steps.matmul_flops(sizes, vocabulary_size, s, t)
        examples += rows
    return {"flops_per_example": padded / examples,
            "useful_flops_per_example": useful / examples,
            "mean_source_length": float(np.mean([f["source"].shape[1] for f, _ in batches])),
            "mean_target_length": float(np.mean([f["target_in"].shape[1]
                                                 for f, _ in batches]))}
