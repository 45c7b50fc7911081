"""Training and inference throughput of the bAbI models (task-1 configuration).

    python bench/babi_bench.py [--data_dir ../shared/data/babi] [--seconds 20]

Uses the real task-1 training split when ``--data_dir`` (or
``TPR_KERAS_BABI_DIR``) finds it, else random ids of the same shapes. Measures
the training step exactly as ``train.babi`` runs it (the Trainer's compiled,
strategy-wrapped step: forward, backward, all-reduce, clip, NaN guard, Nadam)
and the compiled inference call, after a warm-up that includes tracing.
Prints examples/second; ``--json`` also writes them to a file.
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
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tpr_keras.data import babi  # noqa: E402
from tpr_keras.models import TPRRNN, MemN2N  # noqa: E402
from tpr_keras.training import Trainer, TrainConfig, get_optimizer, sparse_classification  # noqa: E402


def load_split(args):
    try:
        data = babi.load_babi(args.data_dir, tasks=(args.task,), download=False)
        return data.train, len(data.vocab), data.max_words, "real task %d" % args.task
    except (FileNotFoundError, OSError) as exc:
        print(f"(no bAbI data: {exc.__class__.__name__}; using random ids)")
    rng = np.random.default_rng(0)
    n, words, sentences, vocab = 9000, 7, 10, 23
    lengths = rng.integers(2, sentences + 1, size=n).astype("int32")
    split = babi.EncodedSplit(
        sentences=rng.integers(1, vocab, size=(int(lengths.sum()), words)).astype("int32"),
        story_offsets=np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("int64"),
        story_lengths=lengths,
        questions=rng.integers(1, vocab, size=(n, words)).astype("int32"),
        answers=rng.integers(1, vocab, size=n).astype("int32"),
        tasks=np.ones(n, "int32"),
        story_ids=np.arange(n, dtype="int32"),
    )
    return split, vocab, words, "random ids, task-1 shapes"


def timed(fn, batches, seconds):
    """Runs ``fn`` over cycling batches for ``seconds``; returns examples/s."""
    for batch in batches[:3]:  # warm-up: tracing and first runs
        fn(batch)
    examples, start, i = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        batch = batches[i % len(batches)]
        fn(batch)
        examples += int(tf.shape(batch[0]["question"])[0])
        i += 1
    return examples / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--task", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--models", default="tpr_rnn,memn2n")
    parser.add_argument("--bucket_widths", default="0,10",
                        help="comma list; 0 = plain random batches")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args()

    split, vocab, words, source = load_split(args)
    results = {"source": source, "batch_size": args.batch_size, "cpus": os.cpu_count(),
               "tensorflow": tf.__version__, "models": {}}
    print(f"data: {source}; batch {args.batch_size}; TF {tf.__version__}; {os.cpu_count()} CPUs")
    runs = [(name, int(w)) for name in args.models.split(",")
            for w in args.bucket_widths.split(",")]
    for name, width in runs:
        dataset = babi.make_dataset(split, args.batch_size, shuffle=True, seed=0,
                                    drop_remainder=True, bucket_width=width or None)
        batches = list(dataset.take(40))
        # Each model with its own default recipe (train.babi): TPR-RNN Nadam, MemN2N SGD.
        builders = {
            "tpr_rnn": (lambda: TPRRNN.from_preset("single_task", vocab, words),
                        lambda: get_optimizer("nadam", 0.008, 0.6, 0.4)),
            "memn2n": (lambda: MemN2N.from_preset("single_task", vocab, words, linear_start=False),
                       lambda: keras.optimizers.SGD(0.32, clipnorm=1.25)),
        }
        keras.utils.set_random_seed(0)
        trainer = Trainer(builders[name][0], builders[name][1],
                          sparse_classification("answer"), TrainConfig(verbose=0),
                          tempfile.mkdtemp())
        distributed = list(trainer.strategy.experimental_distribute_dataset(dataset).take(40))
        step = trainer._build_train_step(
            trainer.strategy.experimental_distribute_dataset(dataset).element_spec)
        train_eps = timed(lambda b: step(b)["loss"].numpy(),
                          [(b[0], b[1]) for b in distributed], args.seconds)
        model = trainer.model
        infer = tf.function(lambda f: model(f, training=False),
                            input_signature=[dataset.element_spec[0]])
        infer_eps = timed(lambda b: infer(b[0]).numpy(), batches, args.seconds)
        label = f"{name}/bucket{width}"
        results["models"][label] = {
            "parameters": model.count_params(),
            "train_examples_per_second": train_eps,
            "inference_examples_per_second": infer_eps,
        }
        print(f"{label:18s} params {model.count_params():7,d}  train {train_eps:9.0f} ex/s  "
              f"inference {infer_eps:9.0f} ex/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
