"""TP-Transformer throughput: training tokens/second and decoding questions/second.

    python bench/math_bench.py [--data_dir ../shared/data/mathematics] [--preset tiny]

Training: the Trainer's compiled step (forward, backward, all-reduce, clip, Adam) on real
``numbers__place_value`` batches; tokens = non-pad target symbols. Decoding: greedy with the
key/value cache (one ``tf.while_loop``, compiled), greedy without it (the full decoder re-run on
the growing prefix every step, the reference the tests compare against), and beam search (4),
all on the same questions, reported as questions/second. Both model variants (with and without
role binding) are measured side by side in one process.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from tpr_keras.data import mathematics  # noqa: E402
from tpr_keras.models import TPTransformer, sequence_compute_fn  # noqa: E402
from tpr_keras.training import Trainer, TrainConfig, get_optimizer  # noqa: E402


def rate(fn, batches, seconds, count):
    for batch in batches[:2]:  # tracing and warm-up
        fn(batch)
    done, start, i = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        fn(batches[i % len(batches)])
        done += count(batches[i % len(batches)])
        i += 1
    return done / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--module", default="numbers__place_value")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--decode_batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    data = mathematics.load_mathematics(args.data_dir, modules=(args.module,),
                                        limit_per_file=4000, download=False)
    train_ds = mathematics.make_dataset(data.train, args.batch_size, shuffle=True, seed=0,
                                        drop_remainder=True)
    train = list(train_ds.take(20))
    questions = list(mathematics.make_dataset(
        data.interpolate[args.module], args.decode_batch, drop_remainder=True).take(4))
    results = {"module": args.module, "preset": args.preset, "cpus": os.cpu_count(),
               "tensorflow": tf.__version__, "models": {}}
    print(f"{args.module}; preset {args.preset}; train batch {args.batch_size}; decode batch "
          f"{args.decode_batch}; TF {tf.__version__}; {os.cpu_count()} CPUs")
    for use_role in (True, False):
        name = "tp_transformer" if use_role else "transformer"

        def build(use_role=use_role):
            keras.utils.set_random_seed(0)
            return TPTransformer.from_preset(args.preset, vocabulary_size=len(data.vocab),
                                             use_role=use_role)

        trainer = Trainer(build, lambda: get_optimizer("adam", 1e-3, 0.9, 0.995),
                          sequence_compute_fn(), TrainConfig(verbose=0, clip_norm=0.1),
                          tempfile.mkdtemp())
        step = trainer.make_train_function(train_ds.element_spec)
        tokens = rate(lambda b: step(b)["loss"].numpy(), train, args.seconds,
                      lambda b: int(tf.math.count_nonzero(b[1]["target_out"])))
        model = trainer.model
        source_spec = tf.TensorSpec([None, None], tf.int32)
        cached = tf.function(lambda s: model.greedy_decode(s, max_length=31)[0],
                             input_signature=[source_spec])
        beam = tf.function(lambda s: model.beam_search(s, 4, 31)[0],
                           input_signature=[source_spec])
        count = lambda b: int(b[0]["source"].shape[0])  # noqa: E731
        row = {
            "parameters": model.count_params(),
            "train_target_tokens_per_second": tokens,
            "greedy_cached_questions_per_second": rate(
                lambda b: cached(b[0]["source"]).numpy(), questions, args.seconds, count),
            "greedy_uncached_questions_per_second": rate(
                lambda b: model.greedy_decode(b[0]["source"], max_length=31,
                                              use_cache=False)[0].numpy(),
                questions, args.seconds, count),
            "beam4_questions_per_second": rate(
                lambda b: beam(b[0]["source"]).numpy(), questions, args.seconds, count),
        }
        results["models"][name] = row
        print(f"{name:15s} params {row['parameters']:8,d}  train "
              f"{row['train_target_tokens_per_second']:8.0f} tokens/s  greedy cached "
              f"{row['greedy_cached_questions_per_second']:7.0f} q/s  uncached "
              f"{row['greedy_uncached_questions_per_second']:6.1f} q/s  beam4 "
              f"{row['beam4_questions_per_second']:6.0f} q/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
