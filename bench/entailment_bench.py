"""Training throughput of the entailment encoders (TPRU variants, LSTM, GRU), side by side.

    python -m bench.entailment_bench --cell tpru,tpru_scan,tpru_rnn,lstm,gru,tpru_jit \\
        --roles 32 --dim 64 --seconds 5 --repeats 7 --data_dir ../shared/data/entailment \\
        --json entailment_bench.json

Each cell runs in its own subprocess (its peak RSS is its own) on the real training file (or
random propositions of the same shapes when none is found): the plain architecture of
``train.entailment`` at width ``--dim``, batches of ``--batch_size`` shuffled pairs padded per
batch, and the Trainer's compiled training step (forward, backward, clip, NaN guard, Adam)
exactly as ``Trainer.fit`` runs it. The subprocesses are started and warmed up one after the
other (a pass over every cached batch: tracing, and for ``_jit`` the XLA compilation of each
batch shape), then timed in windows of ``--seconds``, interleaved: ``--repeats`` rounds of
A B C ..., one subprocess running at a time while the others wait, so that the varying load
of a shared machine falls on all cells alike. Printed per cell: the median training pairs/s
(pairs = examples) over the rounds with its min-max, the peak RSS, and the median over rounds
of its time per pair relative to the ``--reference`` cell's window in the same round (with
min-max); the reference, ``lstm`` unless told otherwise, is added to the cells when missing.

Cells: ``lstm`` and ``gru`` (Keras' layers); ``tpru``, :class:`tpr_keras.layers.TPRU` as the
models use it (its default loop, ``TPRU.loop``); ``tpru_while`` and ``tpru_scan``, the same
layer with its steps in its hand-written ``tf.while_loop`` (the default on TensorFlow) or in
``tf.scan``;
``tpru_rnn``, the generic ``keras.layers.RNN(TPRUCell)`` (same function, same weights, nothing
hoisted). Any cell with ``_jit`` appended runs the same training step compiled with XLA
(``jit_compile=True``). ``_apart`` (before ``_jit``, as in ``tpru_apart_jit``) calls the
shared encoder layers once for A and once for B, as the models did before they stacked the
pair into one batch (``PairToBatch``): two time loops per recurrent layer instead of one.
``--arch bidaf`` times the BiDAF model (§5.2) instead of the plain one, by default with the
presets' ``[h; context]`` input of its second layer (``--attention_output full``: Seo et
al.'s eq. 4, twice as wide, the model before session 11).
``--cells`` is another name for ``--cell``.
"""

import json
import os
import resource
import sys
import tempfile
import time
from statistics import median

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench.windows import WindowWorker, serve_windows  # noqa: E402


def load_train(data_dir):
    import numpy as np

    from tpr_keras.data import entailment

    try:
        return entailment.load_entailment_split("train", data_dir), "real train.txt"
    except (FileNotFoundError, OSError) as exc:
        print(f"(no entailment data: {exc.__class__.__name__}; random propositions)",
              file=sys.stderr)
    rng = np.random.default_rng(0)
    letters = "abcdefgh"

    def prop():
        return "(" + rng.choice(list(letters)) + "&" + rng.choice(list(letters)) + ")"

    a = [prop() for _ in range(4096)]
    b = [prop() for _ in range(4096)]
    labels = rng.integers(0, 2, 4096)
    return entailment.EntailmentData(a, b, labels, np.zeros((4096, 3), int)), "random"


def plain_apart(embedding, a, b, config):
    """``PlainEntailmentModel.encode_pair`` before the pair was stacked: two encoder calls."""
    from tpr_keras.models.entailment import MaskedMaxPooling1D, entailment_layers

    encoder = entailment_layers.make_recurrent_layer(
        config["cell"], config["units"], config["num_roles"], config["seed"],
        return_sequences=config["pooling"] == "max", name="encoder")
    pool = MaskedMaxPooling1D(name="pool") if config["pooling"] == "max" else None

    def encode(x):
        h = encoder(embedding(x))
        return pool(h) if pool is not None else h

    return encode(a), encode(b)


def bidaf_apart(embedding, a, b, config):
    """``BiDAFEntailmentModel.encode_pair`` before the pair was stacked: every shared
    recurrent layer called once for A and once for B."""
    import keras

    from tpr_keras.models.entailment import (BiDAFAttention, MaskedMaxPooling1D,
                                             entailment_layers)

    cell, units, roles, seed = (config[k] for k in ("cell", "units", "num_roles", "seed"))
    max_pool = config["pooling"] == "max"
    contextual = keras.layers.Bidirectional(
        entailment_layers.make_recurrent_layer(cell, units, roles, seed, True),
        name="contextual")
    attention = BiDAFAttention(output_mode=config["attention_output"], name="attention")
    modelling = keras.layers.Bidirectional(
        entailment_layers.make_recurrent_layer(cell, units, roles, seed + 1,
                                               return_sequences=max_pool), name="modelling")
    pool = MaskedMaxPooling1D(name="pool") if max_pool else None
    g_a, g_b = attention([contextual(embedding(a)), contextual(embedding(b))])

    def summarise(g):
        m = modelling(g)
        return pool(m) if pool is not None else m

    return summarise(g_a), summarise(g_b)


APART = {"plain": plain_apart, "bidaf": bidaf_apart}


def run_one(args):
    import keras
    import tensorflow as tf

    from tpr_keras.data import entailment
    from tpr_keras.layers import TPRUCell
    from tpr_keras.models import BiDAFEntailmentModel, PlainEntailmentModel
    from tpr_keras.models.entailment import entailment_layers as entailment_models
    from tpr_keras.training import Trainer, TrainConfig, binary_classification, get_optimizer

    data, source = load_train(args.data_dir)
    name = args.worker
    jit = name.endswith("_jit")
    cell = name[:-len("_jit")] if jit else name
    model_class = BiDAFEntailmentModel if args.arch == "bidaf" else PlainEntailmentModel
    if cell.endswith("_apart"):
        cell = cell[:-len("_apart")]
        model_class = type(model_class.__name__, (model_class,), {
            "encode_pair": staticmethod(APART[args.arch])})
    if cell == "tpru_rnn":  # the generic loop that make_recurrent_layer used before TPRU
        def generic(cell, units, num_roles=32, seed=None, return_sequences=False, name=None):
            return keras.layers.RNN(TPRUCell(units, num_roles=num_roles, seed=seed),
                                    return_sequences=return_sequences, name=name)

        entailment_models.make_recurrent_layer = generic
        cell = "tpru"
    elif cell in ("tpru_while", "tpru_scan"):
        make = entailment_models.make_recurrent_layer
        loop = cell[len("tpru_"):]

        def with_loop(*a, **k):
            layer = make(*a, **k)
            layer.loop = loop
            return layer

        entailment_models.make_recurrent_layer = with_loop
        cell = "tpru"

    def model_fn():
        extra = {"attention_output": args.attention_output} if args.arch == "bidaf" else {}
        return model_class(vocabulary_size=entailment.VOCAB_SIZE, units=args.dim,
                           cell=cell, num_roles=args.roles, seed=0, **extra)

    keras.utils.set_random_seed(0)
    trainer = Trainer(model_fn, lambda: get_optimizer("adam", 1e-3),
                      binary_classification(), TrainConfig(verbose=0, clip_norm=1.0),
                      tempfile.mkdtemp())
    dataset = entailment.make_dataset(data, args.batch_size, shuffle=True, seed=0,
                                      drop_remainder=True)
    batches = trainer.distribute_dataset(dataset)
    cached = list(batches.take(args.batches))
    step = trainer.make_train_function(batches.element_spec)
    if jit:
        step = tf.function(step.python_function, input_signature=[batches.element_spec],
                           jit_compile=True)
    start = time.perf_counter()
    for batch in cached:  # tracing, and for XLA one compilation per batch shape
        step(batch)["metrics"].numpy()
    info = {"cell": name, "dim": args.dim, "roles": args.roles, "source": source,
            "batch_size": args.batch_size, "parameters": trainer.model.count_params(),
            "warmup_seconds": time.perf_counter() - start}
    position = [0]

    def run_window(seconds):
        pairs, steps, start = 0, 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            pairs += int(step(cached[position[0] % len(cached)])["metrics"].numpy()[4])
            position[0] += 1
            steps += 1
        return dict(train_pairs_per_second=pairs / (time.perf_counter() - start), steps=steps,
                    peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    serve_windows(info, run_window)


def start_worker(cell, args):
    """One cell's subprocess: built and warmed up once, then timed in windows on demand."""
    command = [sys.executable, "-m", "bench.entailment_bench", "--worker", cell,
               "--arch", args.arch, "--attention_output", args.attention_output,
               "--roles", str(args.roles), "--dim", str(args.dim),
               "--batch_size", str(args.batch_size), "--batches", str(args.batches)]
    if args.data_dir:
        command += ["--data_dir", args.data_dir]
    return WindowWorker(command, cell)


def parse_flags():
    """The command's flags."""
    from serving.command_flags import Command

    parser = Command("python -m bench.entailment_bench", __doc__.split("\n\n")[0])
    parser.string("cells", "tpru,tpru_rnn,lstm,gru",
                  "comma-separated cells (see the module docstring)")
    parser.alias("cell", "cells")
    parser.string("reference", "lstm",
                  "cell added when missing, to which time ratios refer ('none': no "
                  "reference)")
    parser.enum("arch", "plain", ("plain", "bidaf"))
    parser.enum("attention_output", "context", ("context", "full"),
                "with --arch bidaf: the second layer's input, [h; context] as "
                "in the bidaf presets (§5.2), or Seo et al.'s eq. 4 (the "
                "model before session 11)")
    parser.integer("roles", 32)
    parser.integer("dim", 64)
    parser.integer("batch_size", 64)
    parser.float("seconds", 5.0, "length of one window")
    parser.integer("repeats", 5, "rounds of windows, one per cell, interleaved (A B C A B C ...)")
    parser.integer("batches", 60)
    parser.string("data_dir", None)
    parser.string("json", None)
    parser.string("worker", None, "internal: set by the parent process")  # one subprocess
    return parser.parse()


def run_rounds(cells, args, runs):
    """Start one worker per cell (one after the other, so that warm-ups do not compete),
    then ``--repeats`` rounds of one window per cell; each window's result goes to
    ``runs``."""
    workers = []
    try:
        for cell in cells:
            workers.append(start_worker(cell, args))
            print(f"{cell:10s} ready: params {workers[-1].info['parameters']:8,d}, warm-up "
                  f"{workers[-1].info['warmup_seconds']:5.1f} s "
                  f"({workers[-1].info['source']})", flush=True)
        for round_ in range(args.repeats):
            for worker in workers:  # only one worker runs at a time; the others wait
                result = worker.window(args.seconds)
                result["round"] = round_
                runs.append(result)
                print(f"round {round_ + 1}  {worker.label:10s} train "
                      f"{result['train_pairs_per_second']:7.0f} pairs/s  peak RSS "
                      f"{result['peak_rss_mb']:5.0f} MB", flush=True)
    finally:
        for worker in workers:
            worker.close()


def summarise(cells, runs_all, reference):
    """Per cell: median, min and max pairs/s, median peak RSS, parameters, and (with the
    reference among the cells) time per pair relative to it, same round."""
    summary = {}
    for cell in cells:
        runs = [r for r in runs_all if r["cell"] == cell]
        rates = [r["train_pairs_per_second"] for r in runs]
        summary[cell] = {"median_pairs_per_second": median(rates), "min_pairs_per_second":
                         min(rates), "max_pairs_per_second": max(rates),
                         "median_peak_rss_mb": median([r["peak_rss_mb"] for r in runs]),
                         "parameters": runs[0]["parameters"]}
        if reference in cells:  # time per pair relative to the reference, same round
            reference_rates = {r["round"]: r["train_pairs_per_second"] for r in runs_all
                               if r["cell"] == reference}
            ratios = [reference_rates[r["round"]] / r["train_pairs_per_second"] for r in runs]
            summary[cell].update(time_ratio_to_reference_median=median(ratios),
                                 time_ratio_to_reference_min=min(ratios),
                                 time_ratio_to_reference_max=max(ratios))
    return summary


def print_summary(summary, reference, cells):
    """The summary as a table."""
    print(f"\n{'cell':10s} {'pairs/s median':>14s} {'(min-max)':>13s} {'peak RSS MB':>11s}"
          + (f"   time/pair vs {reference}, median (min-max)"
             if reference in cells else ""))
    for cell, row in summary.items():
        line = (f"{cell:10s} {row['median_pairs_per_second']:14.0f} "
                f"{row['min_pairs_per_second']:6.0f}-{row['max_pairs_per_second']:<6.0f} "
                f"{row['median_peak_rss_mb']:11.0f}")
        if reference in cells:
            line += (f"   {row['time_ratio_to_reference_median']:.2f}x "
                     f"({row['time_ratio_to_reference_min']:.2f}-"
                     f"{row['time_ratio_to_reference_max']:.2f})")
        print(line)


def main():
    args = parse_flags()
    if args.worker:
        print("RESULT " + json.dumps(run_one(args)))
        return
    import tensorflow as tf

    cells = [c.strip() for c in args.cells.split(",") if c.strip()]
    if args.reference != "none" and args.reference not in cells:
        cells.append(args.reference)  # the ratio needs its windows in the same rounds
    print(f"entailment, {args.arch} architecture, d={args.dim}, N={args.roles}, batch "
          f"{args.batch_size}; {args.repeats} interleaved rounds of a {args.seconds:g} s window "
          f"per cell"
          f"; TF {tf.__version__}; {os.cpu_count()} CPUs; load average "
          f"{os.getloadavg()[0]:.1f}")
    results = {"reference": args.reference, "arch": args.arch, "dim": args.dim, "roles": args.roles,
               "batch_size": args.batch_size,
               "seconds": args.seconds, "repeats": args.repeats, "cpus": os.cpu_count(),
               "tensorflow": tf.__version__, "command": " ".join(sys.argv),
               "load_average_start": os.getloadavg(), "runs": []}
    run_rounds(cells, args, results["runs"])
    results["load_average_end"] = os.getloadavg()
    results["summary"] = summary = summarise(cells, results["runs"], args.reference)
    print_summary(summary, args.reference, cells)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
