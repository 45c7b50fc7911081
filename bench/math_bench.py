"""TP-Transformer throughput: training configurations side by side, and decoding.

    python -m bench.math_bench --data_dir ../shared/data/mathematics --json bench.json
    python -m bench.math_bench --configs baseline,jit_fixed,matmul --repeats 3 --seconds 8

Training (every row): examples/s, target tokens/s (non-pad ``target_out`` symbols) and the
peak resident memory while that configuration ran, for one optimizer step (forward, backward,
global-norm clip, Adam) on real batches of ``--modules``. Configurations run round-robin for
``--repeats`` rounds of ``--seconds`` each; each round also gives every configuration's rate
relative to the first one (the baseline) measured in that same round, so a shared, noisy CPU
affects both sides of a ratio alike. Reported: the median rate and the median ratio. "Peak
RSS" is the process's peak (``VmHWM``, reset before each configuration where Linux allows):
it includes every configuration built before.

Configurations (``--configs``; the first is the baseline):

* ``trainer``: the :class:`~tpr_keras.training.Trainer`'s own compiled step (what
  ``train.math`` runs), length-bucketed batches.
* ``baseline``: this script's equivalent step (same math), length-bucketed batches.
* ``batch_max``: plain batches padded to their longest question (no bucketing).
* ``fixed_max``: every batch padded to the longest question and answer of the data
  (one shape).
* ``jit_bucketed`` / ``jit_fixed``: ``jit_compile=True`` (XLA) on bucketed / fixed-shape
  batches (XLA compiles once per distinct shape).
* ``trainer_jit`` / ``trainer_jit_fixed``: the Trainer's step with the forward pass and
  loss XLA-compiled (``tf.function(sequence_compute_fn(), jit_compile=True)``; gradients of a compiled
  function are compiled too; clipping and Adam are not), bucketed / fixed-shape batches.
* ``matmul``: the model built with ``attention_form="matmul"``: the attention's head
  projections (eq. 1) and output map (eq. 4) as a ``[B, T, d] x [d, H*d_k]`` matrix
  product plus a reshape / transpose, instead of the einsums over ``[d, H, d_k]`` kernels
  (same weights, same function; see ``TPMultiHeadAttention``).

``--profile`` also times the forward pass alone and forward + backward (gradients, no
update) for the first configuration, which splits a step into forward, backward, and
clipping + optimizer. ``--decode`` adds the decoding rates (greedy with and without the
key/value cache, beam 4) of both model variants.
"""

import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tpr_keras.data import mathematics  # noqa: E402
from tpr_keras.models import TPTransformer, sequence_compute_fn  # noqa: E402
from tpr_keras.training import Trainer, TrainConfig, get_optimizer  # noqa: E402

CONFIGS = {
    # name: (batches, jit_compile, TPTransformer's attention_form, use the Trainer's step)
    "trainer": ("bucketed", False, "einsum", True),
    "baseline": ("bucketed", False, "einsum", False),
    "batch_max": ("batch_max", False, "einsum", False),
    "fixed_max": ("fixed_max", False, "einsum", False),
    "jit_bucketed": ("bucketed", True, "einsum", False),
    "jit_fixed": ("fixed_max", True, "einsum", False),
    "matmul": ("bucketed", False, "matmul", False),
    "trainer_jit": ("bucketed", "compute", "einsum", True),
    "trainer_jit_fixed": ("fixed_max", "compute", "einsum", True),
}


def peak_rss_reset():
    """Resets the kernel's peak-RSS counter of this process (Linux); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mib():
    """Peak resident set size (VmHWM) since the last reset, in MiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn, batches, seconds):
    """Runs ``fn`` over the batches for ``seconds``; returns (examples/s, tokens/s)."""
    examples = tokens = 0
    start, i = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        features, labels = batches[i % len(batches)]
        fn(features, labels)
        examples += int(labels["target_out"].shape[0])
        tokens += int(np.count_nonzero(labels["target_out"]))
        i += 1
    elapsed = time.perf_counter() - start
    return examples / elapsed, tokens / elapsed


def batch_sets(split, batch_size, count):
    """The three batchings of the same examples: bucketed, batch_max, fixed_max."""
    bucketed = list(mathematics.make_dataset(split, batch_size, shuffle=True, seed=0,
                                             drop_remainder=True).take(count))
    plain = list(mathematics.make_dataset(split, batch_size, shuffle=True, seed=0,
                                          bucket_boundaries=None,
                                          drop_remainder=True).take(count))
    source_len = split.max_question_length + 2
    target_len = split.max_answer_length + 1

    def pad(x, width):
        return tf.pad(x, [[0, 0], [0, width - x.shape[1]]])

    fixed = [({"source": pad(f["source"], source_len),
               "target_in": pad(f["target_in"], target_len)},
              {"target_out": pad(l["target_out"], target_len), "module": l["module"]})
             for f, l in plain]
    return {"bucketed": bucketed, "batch_max": plain, "fixed_max": fixed}


def make_steps(model, optimizer, compute, jit_compile, clip_norm=0.1):
    """(forward, forward+backward, full step) as tf.functions with the Trainer's math."""
    variables = model.trainable_variables

    def loss_of(features, labels):
        return tf.reduce_mean(compute(model, features, labels, True)["loss"])

    def forward(features, labels):
        return loss_of(features, labels)

    def gradients(features, labels):
        with tf.GradientTape() as tape:
            loss = loss_of(features, labels)
        return loss, tape.gradient(loss, variables)

    def forward_backward(features, labels):
        loss, grads = gradients(features, labels)
        return loss, tf.linalg.global_norm(grads)

    def step(features, labels):
        loss, grads = gradients(features, labels)
        grads, _ = tf.clip_by_global_norm(grads, clip_norm)
        optimizer.apply(grads, variables)
        return loss

    matrix = tf.TensorSpec([None, None], tf.int32)
    spec = [{"source": matrix, "target_in": matrix},
            {"target_out": matrix, "module": tf.TensorSpec([None], tf.int32)}]
    # One trace for every shape, as the Trainer's step; XLA still compiles per shape.
    wrap = lambda f: tf.function(f, jit_compile=jit_compile, input_signature=spec)  # noqa: E731
    return wrap(forward), wrap(forward_backward), wrap(step)


def build_config(name, data, batches, preset, use_role):
    """A fresh model (seed 0) and its compiled step for configuration ``name``."""
    batching, jit, attention_form, use_trainer = CONFIGS[name]

    def build():
        keras.utils.set_random_seed(0)
        return TPTransformer.from_paper_size(preset, vocabulary_size=len(data.vocab),
                                             use_role=use_role, attention_form=attention_form)

    compute = sequence_compute_fn()
    if jit == "compute":  # the forward pass and loss XLA-compiled inside the step
        compute = tf.function(compute, jit_compile=True)
    if use_trainer:
        trainer = Trainer(build, lambda: get_optimizer("adam", 1e-3, 0.9, 0.995), compute,
                          TrainConfig(verbose=0, clip_norm=0.1), tempfile.mkdtemp())
        spec = batches["bucketed"][0]
        spec = tf.nest.map_structure(lambda t: tf.TensorSpec([None] * t.shape.rank, t.dtype),
                                     spec)
        train_step = trainer.make_train_function(spec)
        fn = lambda f, l: train_step((f, l))["loss"].numpy()  # noqa: E731
        return fn, None, None, batches[batching]
    model = build()
    optimizer = get_optimizer("adam", 1e-3, 0.9, 0.995)
    optimizer.build(model.trainable_variables)
    forward, forward_backward, step = make_steps(model, optimizer, compute, bool(jit))
    return (lambda f, l: step(f, l).numpy(), lambda f, l: forward(f, l).numpy(),
            lambda f, l: forward_backward(f, l)[0].numpy(), batches[batching])


def decode_rates(data, module, preset, decode_batch, seconds):
    """Greedy (cached / uncached) and beam-4 questions/s of both model variants."""
    questions = list(mathematics.make_dataset(
        data.interpolate[module], decode_batch, drop_remainder=True).take(4))
    rows = {}
    for use_role in (True, False):
        keras.utils.set_random_seed(0)
        model = TPTransformer.from_paper_size(preset, vocabulary_size=len(data.vocab),
                                              use_role=use_role)
        spec = tf.TensorSpec([None, None], tf.int32)
        cached = tf.function(lambda s: model.greedy_decode(s, max_length=31)[0],
                             input_signature=[spec], autograph=False)
        beam = tf.function(lambda s: model.beam_search(s, 4, 31)[0], input_signature=[spec],
                           autograph=False)
        uncached = lambda s: model.greedy_decode(s, max_length=31, use_cache=False)[0]  # noqa: E731
        row = {}
        for key, fn in (("greedy_cached", cached), ("greedy_uncached", uncached),
                        ("beam4", beam)):
            fn(questions[0][0]["source"]).numpy()  # trace
            row[f"{key}_questions_per_second"] = timed(
                lambda f, l: fn(f["source"]).numpy(), questions, seconds)[0]
        rows["tp_transformer" if use_role else "transformer"] = row
    return rows


def parse_flags():
    """The command's flags: ``(parser, args, names)``, ``names`` the configurations."""
    from serving.command_flags import Command

    parser = Command("python -m bench.math_bench", __doc__.split("\n\n")[0])
    parser.string("data_dir", None)
    parser.string("modules", "numbers__place_value",
                  "comma-separated, or all; several modules give mixed lengths")
    parser.string("preset", "tiny")
    parser.enum("model", "tp_transformer", ["tp_transformer", "transformer"])
    parser.string("configs",
                  "baseline,trainer,batch_max,fixed_max,"
                  "jit_bucketed,jit_fixed,trainer_jit,trainer_jit_fixed,matmul")
    parser.integer("batch_size", 128)
    parser.integer("batches", 24, "distinct cached batches")
    parser.integer("limit_per_file", 4000)
    parser.float("seconds", 8.0, "per configuration per round")
    parser.integer("repeats", 3, "round-robin rounds")
    parser.boolean("profile", False,
                   "split the first configuration's step into forward / backward / "
                   "optimizer")
    parser.boolean("decode", False, "also time decoding")
    parser.integer("decode_batch", 64)
    parser.string("json", None, "write the results to this file")
    args = parser.parse()
    names = args.configs.split(",")
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown configs {unknown}; choose from {sorted(CONFIGS)}")
    return parser, args, names


def load_data(args):
    """The data, its cached batches and the results' header (printed too)."""
    modules = "all" if args.modules == "all" else tuple(args.modules.split(","))
    data = mathematics.load_mathematics(args.data_dir, modules=modules,
                                        limit_per_file=args.limit_per_file, download=False)
    batches = batch_sets(data.train, args.batch_size, args.batches)
    padded = {k: float(np.mean([b[0]["source"].shape[1] for b in v]))
              for k, v in batches.items()}
    load = os.getloadavg()[0]
    print(f"{args.modules}; {args.model} preset {args.preset}; batch {args.batch_size}; "
          f"TF {tf.__version__}; {os.cpu_count()} CPUs; load average {load:.2f}; mean padded "
          "source length " + ", ".join(f"{k} {v:.1f}" for k, v in padded.items()))
    results = {"modules": args.modules, "preset": args.preset, "model": args.model,
               "batch_size": args.batch_size, "cpus": os.cpu_count(),
               "tensorflow": tf.__version__, "load_average_start": load,
               "mean_padded_source_length": padded, "seconds": args.seconds,
               "repeats": args.repeats, "configs": {}}
    return data, batches, results


def warm_up(names, data, batches, args):
    """Build each configuration and run it over its batches (trace / compile every shape),
    then one untimed pass each: ``(steps, rss)``, ``rss`` holding the warm-up seconds."""
    use_role = args.model == "tp_transformer"
    steps, rss = {}, {}
    for name in names:
        peak_rss_reset()
        steps[name] = build_config(name, data, batches, args.preset, use_role)
        step, forward, forward_backward, config_batches = steps[name]
        start = time.perf_counter()
        for features, labels in config_batches:
            step(features, labels)
        if args.profile and name == names[0] and forward is not None:
            for fn in (forward, forward_backward):
                for features, labels in config_batches:
                    fn(features, labels)
        rss[name] = {"warmup_seconds": time.perf_counter() - start}
    for name in names:  # one untimed pass each: the first timed slice was always slow
        step, _, _, config_batches = steps[name]
        for features, labels in config_batches[:4]:
            step(features, labels)
    return steps, rss


def timed_rounds(names, steps, rss, args):
    """``--repeats`` round-robin rounds, the order alternating: ``{name: [(examples/s,
    tokens/s), ...]}``; each configuration's peak RSS goes into ``rss``."""
    rounds = {name: [] for name in names}
    for r in range(args.repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            step, _, _, config_batches = steps[name]
            peak_rss_reset()
            rounds[name].append(timed(step, config_batches, args.seconds))
            rss[name]["peak_rss_mib"] = max(rss[name].get("peak_rss_mib", 0), peak_rss_mib())
    return rounds


def config_rows(names, rounds, rss):
    """Each configuration's medians and ratios to the first one, printed as a table."""
    base = names[0]
    print(f"\n{'config':13s} {'examples/s':>11s} {'tokens/s':>9s} {'vs ' + base:>12s} "
          f"{'peak RSS MiB':>13s} {'warm-up s':>9s}")
    rows = {}
    for name in names:
        ratios = [a[0] / b[0] for a, b in zip(rounds[name], rounds[base])]
        row = {
            "batching": CONFIGS[name][0],
            "jit_compile": {False: "off", True: "whole step", "compute": "forward + loss"}[
                CONFIGS[name][1]],
            "attention_form": CONFIGS[name][2],
            "trainer_step": CONFIGS[name][3],
            "examples_per_second": statistics.median(x[0] for x in rounds[name]),
            "tokens_per_second": statistics.median(x[1] for x in rounds[name]),
            "examples_per_second_rounds": [x[0] for x in rounds[name]],
            "ratio_to_baseline": statistics.median(ratios),
            "ratio_to_baseline_rounds": ratios,
            **rss[name],
        }
        rows[name] = row
        print(f"{name:13s} {row['examples_per_second']:11.0f} {row['tokens_per_second']:9.0f} "
              f"{row['ratio_to_baseline']:11.3f}x {row['peak_rss_mib']:13.0f} "
              f"{row['warmup_seconds']:9.1f}   rounds "
              + " ".join(f"{x:.3f}" for x in ratios))
    return rows


def profile_step(name, steps, args):
    """Milliseconds per step of configuration ``name``: forward, backward, clipping and
    optimizer (printed too)."""
    step, forward, forward_backward, config_batches = steps[name]
    parts = {"forward": forward, "forward_backward": forward_backward, "step": step}
    times = {k: [] for k in parts}
    for _ in range(args.repeats):
        for key, fn in parts.items():
            times[key].append(1000.0 / timed(fn, config_batches, args.seconds)[0]
                              * args.batch_size)
    ms = {k: statistics.median(v) for k, v in times.items()}
    profile = {"forward_ms": ms["forward"],
               "backward_ms": ms["forward_backward"] - ms["forward"],
               "clip_and_optimizer_ms": ms["step"] - ms["forward_backward"],
               "step_ms": ms["step"]}
    print(f"\nprofile ({name}), ms per step of {args.batch_size}: " + ", ".join(
        f"{k[:-3]} {v:.1f}" for k, v in profile.items()))
    return {"config": name, **profile}


def main():
    parser, args, names = parse_flags()
    data, batches, results = load_data(args)
    steps, rss = warm_up(names, data, batches, args)
    rounds = timed_rounds(names, steps, rss, args)
    results["configs"].update(config_rows(names, rounds, rss))
    if args.profile:
        if steps[names[0]][1] is None:
            parser.error("--profile needs a first configuration other than 'trainer'")
        results["profile"] = profile_step(names[0], steps, args)
    if args.decode:
        results["decode"] = decode_rates(data, data.module_names[0], args.preset, args.decode_batch,
                                         args.seconds)
        for name, row in results["decode"].items():
            print(f"{name:15s} greedy cached {row['greedy_cached_questions_per_second']:7.0f} "
                  f"q/s  uncached {row['greedy_uncached_questions_per_second']:6.1f} q/s  "
                  f"beam4 {row['beam4_questions_per_second']:6.0f} q/s")
    results["load_average_end"] = os.getloadavg()[0]
    results["peak_rss_process_mib"] = __import__("resource").getrusage(
        __import__("resource").RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"Wrote {args.json}")


if __name__ == "__main__":
    main()
