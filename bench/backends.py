"""Training throughput of every model family per Keras backend and dtype policy.

    python -m bench.backends [--families tpr_rnn,memn2n,entailment,tp_transformer]
        [--backends tensorflow,tensorflow_xla,jax] [--dtype_policies float32,mixed_bfloat16]
        [--batch_size FAMILY=N ...] [--seconds 5] [--repeats 3] [--json FILE]

Each (family, backend, policy) runs in its own process (the backend is chosen before Keras
is imported): the family's model at the paper's size (TPR-RNN and MemN2N ``all_tasks``,
the plain TPRU-32 entailment model, the TP-Transformer ``tp_transformer`` preset), random
inputs of the paper's shapes, and the train command's own step — the TensorFlow
``Trainer``'s compiled step (``tensorflow``; ``tensorflow_xla``: the same with
``jit_compile=True``, what ``--jit_compile`` does), or ``JaxTrainer``'s ``jax.jit`` step
(``jax``, always XLA) — warmed up, then timed
in windows of ``--seconds``, the processes taking turns for ``--repeats`` rounds. Printed
per configuration: examples/s (and tokens/s for the TP-Transformer: source and target
tokens), peak memory (the device's peak bytes on a GPU under JAX, else the process's peak
RSS) and the time per example relative to ``--baseline`` (default the first backend at
float32) in the same round; the median over rounds. ``--json`` writes every window.

On this project's 2-core CPU the TP-Transformer at the paper's size is measured at a small
batch (``--batch_size tp_transformer=8``); on a GPU use the paper's 128 or more.
"""

import json
import os
import resource
import sys
import tempfile
import time
from statistics import median

import numpy as np

from bench.windows import WindowWorker, serve_windows

FAMILIES = ("tpr_rnn", "memn2n", "entailment", "tp_transformer")
BACKENDS = ("tensorflow", "tensorflow_xla", "jax")
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
#: The recipes' batch sizes (TPR-RNN and MemN2N all tasks, §5.1, the TP-Transformer paper).
BATCH_SIZES = {"tpr_rnn": 32, "memn2n": 32, "entailment": 64, "tp_transformer": 128}
#: The shapes of the papers' data: bAbI (vocabulary 177, 70 sentences of 12 words),
#: entailment pairs (about 40 characters each), math (160 source, 32 target tokens).
BABI = {"vocabulary_size": 177, "max_words": 12, "sentences": 70}
ENTAILMENT_LENGTH = 40
MATH = {"vocabulary_size": 72, "source": 160, "target": 32}


def build(family, batch_size, rng):
    """``(model_fn, compute_fn, batch, tokens_per_example)`` of one family."""
    from tpr_keras import models
    from tpr_keras.training import binary_classification, sparse_classification

    if family in ("tpr_rnn", "memn2n"):
        cls = models.TPRRNN if family == "tpr_rnn" else models.MemN2N
        vocabulary, words, sentences = BABI["vocabulary_size"], BABI["max_words"], BABI[
            "sentences"]
        story = rng.integers(1, vocabulary, size=(batch_size, sentences, words))
        story[:, :, words // 2:] = 0  # sentences of about half the width
        batch = ({"story": story.astype("int32"),
                  "question": rng.integers(1, vocabulary, size=(batch_size, words)).astype(
                      "int32")},
                 {"answer": rng.integers(1, vocabulary, size=(batch_size,)).astype("int32")})
        return (lambda: cls.from_paper_size("all_tasks", vocabulary_size=vocabulary,
                                        max_words=words),
                sparse_classification("answer"), batch, None)
    if family == "entailment":
        from tpr_keras.data.entailment import VOCAB_SIZE

        pair = {side: rng.integers(1, VOCAB_SIZE, size=(batch_size, ENTAILMENT_LENGTH)).astype(
            "int32") for side in ("a", "b")}
        labels = {"label": rng.integers(0, 2, size=(batch_size, 1)).astype("float32")}
        return (lambda: models.PlainEntailmentModel.from_paper_size("plain_tpru", seed=0),
                binary_classification("label"), (pair, labels), None)
    source = rng.integers(4, MATH["vocabulary_size"], size=(batch_size, MATH["source"]))
    target = rng.integers(4, MATH["vocabulary_size"], size=(batch_size, MATH["target"] + 1))
    batch = ({"source": source.astype("int32"), "target_in": target[:, :-1].astype("int32")},
             {"target_out": target[:, 1:].astype("int32")})
    return (lambda: models.TPTransformer.from_paper_size(
                "tp_transformer", vocabulary_size=MATH["vocabulary_size"]),
            models.sequence_compute_fn(), batch, MATH["source"] + MATH["target"])


def peak_memory_mb():
    """The device's peak bytes under JAX on an accelerator, else the peak RSS (MB)."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform != "cpu":
            stats = device.memory_stats() or {}
            if "peak_bytes_in_use" in stats:
                return stats["peak_bytes_in_use"] / 2**20, f"{device.platform} peak"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "peak RSS"


def device_name():
    """The device the step ran on, in words: ``"NVIDIA H100 80GB HBM3 (gpu)"``, ``"cpu"``."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return (f"{device.device_kind} ({device.platform})" if device.platform != "cpu"
                else "cpu")
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return (tf.config.experimental.get_device_details(gpus[0]).get("device_name", "gpu")
            + " (gpu)") if gpus else "cpu"


def worker(spec):
    """One configuration's process: build, warm up, then time windows on demand."""
    family, dtype, batch_size, xla = spec.split(":")
    import keras

    from tpr_keras.training import TrainConfig, get_optimizer

    keras.config.set_dtype_policy(dtype)
    keras.utils.set_random_seed(0)
    model_fn, compute, batch, tokens = build(family, int(batch_size),
                                             np.random.default_rng(0))
    config = TrainConfig(verbose=0, clip_norm=1.0, warmup_steps=0, jit_compile=xla == "xla")
    folder = tempfile.mkdtemp(prefix="bench_backends_")
    if keras.backend.backend() == "jax":
        from tpr_keras.training import JaxTrainer

        trainer = JaxTrainer(model_fn, lambda: get_optimizer("adam", 1e-4), compute, config,
                             folder)
        step = trainer.train_step
    else:
        import tensorflow as tf

        from tpr_keras.training import Trainer

        trainer = Trainer(model_fn, lambda: get_optimizer("adam", 1e-4), compute, config,
                          folder)
        dataset = trainer.distribute_dataset(tf.data.Dataset.from_tensors(batch))
        compiled = trainer.make_train_function(dataset.element_spec)
        batch = next(iter(dataset))

        def step(batch):
            return compiled(batch)["metrics"].numpy().tolist()

    start = time.perf_counter()
    for _ in range(3):  # tracing / compilation
        step(batch)
    backend = keras.backend.backend() + ("_xla" if xla == "xla" and
                                         keras.backend.backend() == "tensorflow" else "")
    info = {"family": family, "backend": backend, "dtype_policy": dtype,
            "batch_size": int(batch_size), "parameters": trainer.model.count_params(),
            "warmup_seconds": time.perf_counter() - start, "device": device_name()}
    def run_window(seconds):
        examples, steps, start = 0, 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            examples += int(step(batch)[4])
            steps += 1
        elapsed = time.perf_counter() - start
        memory, memory_kind = peak_memory_mb()
        result = dict(examples_per_second=examples / elapsed, steps=steps,
                      peak_memory_mb=memory, memory_kind=memory_kind)
        if tokens:
            result["tokens_per_second"] = examples * tokens / elapsed
        return result

    serve_windows(info, run_window)


def start_worker(family, backend, dtype, batch_size):
    """One configuration's subprocess, warmed up once, then timed in windows."""
    keras_backend, xla = backend.split("_") if "_" in backend else (backend, "")
    env = dict(os.environ, KERAS_BACKEND=keras_backend, TF_CPP_MIN_LOG_LEVEL="3")
    worker = WindowWorker([sys.executable, "-m", "bench.backends", "--worker",
                           f"{family}:{dtype}:{batch_size}:{xla}"],
                          f"{family} {backend} {dtype}", env=env)
    worker.key = (family, backend, dtype)
    return worker


def parse_flags():
    """The command's flags: ``(parser, args)``."""
    from serving.command_flags import Command

    parser = Command("python -m bench.backends", __doc__.split("\n\n")[0])
    parser.string("families", ",".join(FAMILIES))
    parser.string("backends", "tensorflow,tensorflow_xla,jax")
    parser.string("dtype_policies", "float32,mixed_bfloat16")
    parser.multi("batch_size", "FAMILY=N overrides a family's batch")
    parser.string("baseline", None,
                  "BACKEND:POLICY the ratios are against (default: the first "
                  "backend at the first policy)")
    parser.float("seconds", 5.0)
    parser.integer("repeats", 3)
    parser.string("json", None)
    parser.string("worker", None, "internal: set by the parent process")
    return parser, parser.parse()


def checked_choices(parser, args):
    """``(families, batch sizes, backends, policies)`` of the flags; an unknown name is a
    usage error."""
    families = args.families.split(",")
    unknown = set(families) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; choose from {list(FAMILIES)}")
    batches = dict(BATCH_SIZES)
    for item in args.batch_size:
        family, _, value = item.partition("=")
        if family not in FAMILIES or not value.isdigit():
            parser.error(f"--batch_size wants FAMILY=N with FAMILY in {list(FAMILIES)}")
        batches[family] = int(value)
    backends, policies = args.backends.split(","), args.dtype_policies.split(",")
    for given, valid, flag in ((backends, BACKENDS, "backends"),
                               (policies, POLICIES, "dtype_policies")):
        if set(given) - set(valid):
            parser.error(f"unknown --{flag} {sorted(set(given) - set(valid))}; choose from "
                         f"{list(valid)}")
    return families, batches, backends, policies


def run_windows(families, batches, backends, policies, args):
    """Per family, one worker per backend and policy, ``--repeats`` interleaved rounds of
    one window each: every window's result."""
    windows = []
    for family in families:
        workers = [start_worker(family, backend, dtype, batches[family])
                   for backend in backends for dtype in policies]
        try:
            for round_ in range(args.repeats):
                for w in workers:
                    result = dict(w.window(args.seconds), round=round_)
                    windows.append(result)
                    print(f"round {round_ + 1}  {family:14s} {w.key[1]:10s} {w.key[2]:15s} "
                          f"{result['examples_per_second']:9.1f} ex/s  "
                          f"{result['peak_memory_mb']:7.0f} MB {result['memory_kind']}",
                          flush=True)
        finally:
            for w in workers:
                w.close()
    return windows


def summary_rows(families, backends, policies, windows, baseline):
    """Per family, backend and policy: median rates, peak memory and the median time per
    example relative to ``baseline`` in the same round (printed as a table too)."""
    print(f"\n{'family':14s} {'backend':10s} {'policy':15s} {'examples/s':>10s} "
          f"{'tokens/s':>9s} {'peak MB':>8s}  time/example vs {':'.join(baseline)}")
    rows = []
    for family in families:
        mine = [w for w in windows if w["family"] == family]
        base = {w["round"]: w["examples_per_second"] for w in mine
                if (w["backend"], w["dtype_policy"]) == baseline}
        for backend in backends:
            for dtype in policies:
                runs = [w for w in mine if (w["backend"], w["dtype_policy"]) == (backend, dtype)]
                rate = median([w["examples_per_second"] for w in runs])
                ratio = median([base[w["round"]] / w["examples_per_second"] for w in runs
                                if w["round"] in base]) if base else float("nan")
                tokens = median([w.get("tokens_per_second", 0.0) for w in runs])
                row = {"family": family, "backend": backend, "dtype_policy": dtype,
                       "examples_per_second": rate, "tokens_per_second": tokens or None,
                       "peak_memory_mb": max(w["peak_memory_mb"] for w in runs),
                       "memory_kind": runs[0]["memory_kind"], "time_ratio": ratio,
                       "batch_size": runs[0]["batch_size"],
                       "parameters": runs[0]["parameters"]}
                rows.append(row)
                print(f"{family:14s} {backend:10s} {dtype:15s} {rate:10.1f} "
                      f"{tokens:9.0f} {row['peak_memory_mb']:8.0f}  {ratio:.2f}x")
    return rows


def main():
    parser, args = parse_flags()
    if args.worker:
        return worker(args.worker)
    families, batches, backends, policies = checked_choices(parser, args)
    baseline = tuple((args.baseline or f"{backends[0]}:{policies[0]}").split(":"))
    windows = run_windows(families, batches, backends, policies, args)
    rows = summary_rows(families, backends, policies, windows, baseline)
    if args.json:
        import platform

        with open(args.json, "w") as f:
            json.dump({"command": "python -m bench.backends " + " ".join(sys.argv[1:]),
                       "machine": f"{platform.processor() or platform.machine()}, "
                                  f"{os.cpu_count()} CPUs",
                       "devices": sorted({w.get("device", "cpu") for w in windows}),
                       "baseline": ":".join(baseline), "seconds": args.seconds,
                       "repeats": args.repeats, "rows": rows, "windows": windows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
