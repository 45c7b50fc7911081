"""Training and inference throughput of the bAbI models, side by side.

    python -m bench.babi_bench --task all --size all_tasks --batch_size 32 --seconds 20
    python -m bench.babi_bench --task 1 --size all_tasks_code --batch_size 128
    python -m bench.babi_bench --task 1 --size single_task --models tpr_rnn,memn2n

Each model runs in its own subprocess, one after the other, so that its peak
RSS is its own: TPR-RNN once per ``--implementations`` entry (the parallel
memory and the dense recurrence it is compared with), then MemN2N. Every run
uses the real training split when ``--data_dir`` (or ``TPR_KERAS_BABI_DIR``)
finds it, else random ids of task-1 shapes, batched as ``train.babi`` batches
it (shuffled, bucketed by story length). It measures the training step exactly
as ``train.babi`` runs it (the Trainer's compiled, strategy-wrapped step:
forward, backward, all-reduce, clip, NaN guard, optimizer) and the compiled
inference call, each after a warm-up that includes tracing, over the same
cycle of batches. Prints one line per model with train and inference
examples/s, peak RSS and the implementation; ``--json`` also writes them.
Like ``train.babi``, each run caps glibc's malloc arenas at 2
(:func:`tpr_keras.runtime.limit_malloc_arenas`; ``MALLOC_ARENA_MAX`` overrides).
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tpr_keras import runtime  # noqa: E402

runtime.limit_malloc_arenas()  # as train.babi does, before TensorFlow starts

def load_split(data_dir, task):
    """The training split of ``task`` (an int or ``"all"``), or random ids."""
    import numpy as np

    from tpr_keras.data import babi

    tasks = "all" if task == "all" else (int(task),)
    try:
        data = babi.load_babi(data_dir, tasks=tasks, download=False)
        return data.train, len(data.vocab), data.max_words, f"real task {task}"
    except (FileNotFoundError, OSError) as exc:
        print(f"(no bAbI data: {exc.__class__.__name__}; using random ids)", file=sys.stderr)
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


def timed(fn, batches, seconds, count):
    """Runs ``fn`` over cycling batches for ``seconds``; returns examples/s."""
    for batch in batches[:3]:  # warm-up: tracing and first runs
        fn(batch)
    examples, start, i = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        batch = batches[i % len(batches)]
        fn(batch)
        examples += count(batch)
        i += 1
    return examples / (time.perf_counter() - start)


def run_one(args):
    """Measures one model in this process; returns its result dict."""
    import keras
    import tensorflow as tf

    from tpr_keras.data import babi
    from tpr_keras.models import TPRRNN, MemN2N
    from tpr_keras.training import Trainer, TrainConfig, get_optimizer, sparse_classification
    from tpr_keras.training import recipes

    split, vocab, words, source = load_split(args.data_dir, args.task)
    dataset = babi.make_dataset(split, args.batch_size, shuffle=True, seed=0,
                                drop_remainder=True, bucket_width=args.bucket_width or None)
    if args.model == "memn2n":
        size = "all_tasks" if args.task == "all" else "single_task"
        recipe = recipes.recipe("memn2n", size)  # each model with its paper's recipe

        def model_fn():
            return MemN2N.from_paper_size(size, vocab, words, linear_start=False)

        def optimizer_fn():
            return keras.optimizers.SGD(recipe["learning_rate"], clipnorm=recipe["clip_norm"])

        implementation = "-"
    else:
        size = args.size
        recipe = recipes.recipe("tpr_rnn", size)

        def model_fn():
            return TPRRNN.from_paper_size(size, vocab, words,
                                          implementation=args.implementation)

        def optimizer_fn():
            return get_optimizer(recipe["optimizer"], recipe["learning_rate"],
                                 recipe["beta_1"], recipe["beta_2"])

        implementation = args.implementation
    keras.utils.set_random_seed(0)
    trainer = Trainer(model_fn, optimizer_fn, sparse_classification("answer"),
                      TrainConfig(verbose=0), tempfile.mkdtemp())
    distributed = trainer.distribute_dataset(dataset)  # what Trainer.fit iterates
    train_batches = list(distributed.take(args.batches))
    step = trainer.make_train_function(distributed.element_spec)

    def count(batch):
        return int(batch[1]["answer"].shape[0])

    train_eps = timed(lambda b: step(b)["loss"].numpy(), train_batches, args.seconds, count)
    model = trainer.model
    infer = tf.function(lambda f: model(f, training=False),
                        input_signature=[dataset.element_spec[0]])
    infer_eps = timed(lambda b: infer(b[0]).numpy(), list(dataset.take(args.batches)),
                      args.seconds, count)
    stories = [int(b[0]["story"].shape[1]) for b in train_batches]
    return {
        "model": args.model, "preset": size, "implementation": implementation,
        "task": args.task, "batch_size": args.batch_size, "source": source,
        "vocabulary": vocab, "parameters": model.count_params(),
        "mean_story_sentences_per_batch": sum(stories) / len(stories),
        "train_examples_per_second": train_eps,
        "inference_examples_per_second": infer_eps,
        # ru_maxrss is in KiB on Linux
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main():
    from serving.command_flags import Command

    parser = Command("python -m bench.babi_bench", __doc__.split("\n\n")[0])
    parser.string("data_dir", None)
    parser.string("task", "1", "a task number 1..20 or 'all'")
    parser.enum("size", "single_task", ["single_task", "all_tasks", "all_tasks_code"],
                "TPR-RNN paper size (TPRRNN.paper_sizes)")
    parser.alias("preset", "size")  # the spelling of earlier command lines
    parser.integer("batch_size", 128)
    parser.float("seconds", 20.0, "measuring time per model, train and inference each")
    parser.string("models", "tpr_rnn,memn2n")
    parser.string("implementations", "parallel,recurrent",
                  "TPR-RNN memory implementations to compare")
    parser.integer("bucket_width", 10, "as train.babi's --bucket_width; 0 = plain random batches")
    parser.integer("batches", 100, "distinct batches cycled through while measuring")
    parser.string("json", None, "also write the numbers here")
    parser.string("model", None, "internal: set by the parent process")  # subprocess
    parser.string("implementation", None, "internal: set by the parent process")
    args = parser.parse()
    if args.task != "all" and not 1 <= int(args.task) <= 20:
        parser.error(f"--task must be 1..20 or 'all'; got {args.task}")

    if args.model:  # one measurement, in a subprocess of the run below
        print("RESULT " + json.dumps(run_one(args)))
        return

    import tensorflow as tf

    runs = []
    for model in args.models.split(","):
        for implementation in (args.implementations.split(",") if model == "tpr_rnn"
                               else [None]):
            runs.append((model, implementation))
    print(f"bAbI task {args.task}; size {args.size}; batch {args.batch_size}; "
          f"TF {tf.__version__}; {os.cpu_count()} CPUs; {args.seconds:g} s per measurement")
    results = {"task": args.task, "preset": args.size, "batch_size": args.batch_size,
               "cpus": os.cpu_count(), "tensorflow": tf.__version__, "runs": []}
    for model, implementation in runs:
        command = [sys.executable, os.path.abspath(__file__), "--model", model,
                   "--task", args.task, "--size", args.size,
                   "--batch_size", str(args.batch_size), "--seconds", str(args.seconds),
                   "--bucket_width", str(args.bucket_width), "--batches", str(args.batches)]
        if args.data_dir:
            command += ["--data_dir", args.data_dir]
        if implementation:
            command += ["--implementation", implementation]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            sys.stderr.write(done.stderr[-3000:])
            raise SystemExit(f"{model}/{implementation} failed (exit {done.returncode})")
        result = json.loads(lines[-1][len("RESULT "):])
        results["runs"].append(result)
        print(f"{model:8s} {result['preset']:15s} {result['implementation']:10s} "
              f"params {result['parameters']:8,d}  train {result['train_examples_per_second']:8.0f}"
              f" ex/s  inference {result['inference_examples_per_second']:8.0f} ex/s  "
              f"peak RSS {result['peak_rss_mb']:6.0f} MB", flush=True)
    base = {r["implementation"]: r for r in results["runs"] if r["model"] == "tpr_rnn"}
    if "parallel" in base and "recurrent" in base:
        ratio = (base["parallel"]["train_examples_per_second"]
                 / base["recurrent"]["train_examples_per_second"])
        results["parallel_over_recurrent_train"] = ratio
        print(f"TPR-RNN train speed, parallel / recurrent: {ratio:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
