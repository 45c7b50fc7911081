"""Training throughput of the entailment encoders (TPRU, LSTM, GRU), side by side.

    python bench/entailment_bench.py --cells tpru,tpru_rnn,lstm,gru --roles 32 --dim 64 \\
        --seconds 15 --data_dir ../shared/data/entailment --json entailment_bench.json

Each cell runs in its own subprocess (its peak RSS is its own), one after the other, on the
real training file (or random propositions of the same shapes when none is found): the plain
architecture of ``train.entailment`` at width ``--dim``, batches of ``--batch_size`` shuffled
pairs padded per batch, and the Trainer's compiled training step (forward, backward, clip,
NaN guard, Adam) exactly as ``Trainer.fit`` runs it, timed for ``--seconds`` after a warm-up
that includes tracing. ``tpru`` is :class:`tpr_keras.layers.TPRU`, the layer the models use;
``tpru_rnn`` is the generic ``keras.layers.RNN(TPRUCell)`` it replaced (same function, same
weights), the baseline. Prints training pairs/s and peak RSS per cell and the ratio of each to
the LSTM; ``--json`` also writes them.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


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


def run_one(args):
    import keras

    from tpr_keras.data import entailment
    from tpr_keras.layers import TPRUCell
    from tpr_keras.models import PlainEntailmentModel
    from tpr_keras.models import entailment as entailment_models
    from tpr_keras.training import Trainer, TrainConfig, binary_classification, get_optimizer

    data, source = load_train(args.data_dir)
    cell = args.cell
    if cell == "tpru_rnn":  # the generic loop that make_recurrent_layer used before TPRU
        def generic(cell, units, num_roles=32, seed=None, return_sequences=False, name=None):
            return keras.layers.RNN(TPRUCell(units, num_roles=num_roles, seed=seed),
                                    return_sequences=return_sequences, name=name)

        entailment_models.make_recurrent_layer = generic
        cell = "tpru"

    def model_fn():
        return PlainEntailmentModel(vocabulary_size=entailment.VOCAB_SIZE, units=args.dim,
                                    cell=cell, num_roles=args.roles, seed=0)

    keras.utils.set_random_seed(0)
    trainer = Trainer(model_fn, lambda: get_optimizer("adam", 1e-3),
                      binary_classification(), TrainConfig(verbose=0, clip_norm=1.0),
                      tempfile.mkdtemp())
    dataset = entailment.make_dataset(data, args.batch_size, shuffle=True, seed=0,
                                      drop_remainder=True)
    batches = trainer.distribute_dataset(dataset)
    cached = list(batches.take(args.batches))
    step = trainer.make_train_function(batches.element_spec)
    for batch in cached[:3]:
        step(batch)["metrics"].numpy()
    pairs, i, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        pairs += int(step(cached[i % len(cached)])["metrics"].numpy()[4])
        i += 1
    rate = pairs / (time.perf_counter() - start)
    return {"cell": args.cell, "dim": args.dim, "roles": args.roles, "source": source,
            "batch_size": args.batch_size, "parameters": trainer.model.count_params(),
            "train_pairs_per_second": rate,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default="tpru,tpru_rnn,lstm,gru")
    parser.add_argument("--roles", type=int, default=32)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--cell", default=None, help=argparse.SUPPRESS)  # subprocess
    args = parser.parse_args()
    if args.cell:
        print("RESULT " + json.dumps(run_one(args)))
        return
    import tensorflow as tf

    print(f"entailment, plain architecture, d={args.dim}, N={args.roles}, batch "
          f"{args.batch_size}; TF {tf.__version__}; {os.cpu_count()} CPUs")
    results = {"dim": args.dim, "roles": args.roles, "batch_size": args.batch_size,
               "cpus": os.cpu_count(), "tensorflow": tf.__version__, "runs": []}
    for cell in args.cells.split(","):
        command = [sys.executable, os.path.abspath(__file__), "--cell", cell,
                   "--roles", str(args.roles), "--dim", str(args.dim),
                   "--batch_size", str(args.batch_size), "--seconds", str(args.seconds),
                   "--batches", str(args.batches)]
        if args.data_dir:
            command += ["--data_dir", args.data_dir]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
        if done.returncode or not lines:
            sys.stderr.write(done.stderr[-3000:])
            raise SystemExit(f"{cell} failed (exit {done.returncode})")
        result = json.loads(lines[-1][len("RESULT "):])
        results["runs"].append(result)
        print(f"{cell:9s} params {result['parameters']:8,d}  train "
              f"{result['train_pairs_per_second']:8.0f} pairs/s  peak RSS "
              f"{result['peak_rss_mb']:5.0f} MB  ({result['source']})", flush=True)
    rates = {r["cell"]: r["train_pairs_per_second"] for r in results["runs"]}
    if "lstm" in rates:
        for cell, rate in rates.items():
            if cell != "lstm":
                print(f"{cell} / lstm: {rate / rates['lstm']:.2f}x")
        results["ratio_to_lstm"] = {c: r / rates["lstm"] for c, r in rates.items()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
