"""The authors' TP-Transformer training step against the port's, side by side on the same
batches.

    python -m bench.math_authors_step --data_dir ../shared/data/mathematics \\
        --authors_checkout /tmp/tp-transformer-authors --json step.json
    python -m bench.math_authors_step --configs tensorflow,jax --seconds 4 --profile_steps 2

Configurations (``--configs``), each in its own process with one thread (TensorFlow's
intra- and inter-op pools, PyTorch's ``set_num_threads(1)``, XLA's CPU runtime) and
oneDNN's primitive cache as ``train.math`` sizes it (16,384 entries for ``_mK``; the
environment's ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` wins), warmed up over every batch
(tracing; JAX compiles per shape), then timed in windows of ``--seconds`` that the
processes take in turn for ``--repeats`` rounds, the order reversed every other round:

* ``authors``: their step (github.com/ischlag/TP-Transformer, ``models/tp-transformer.py``
  and the loop body of ``utils/trainer.py``: forward, ``CrossEntropyLoss(ignore_index=
  <pad>)``, backward, their accuracy, ``clip_grad_norm_`` 0.1, ``torch.optim.Adam``) from
  the work tree ``--authors_checkout`` on PyTorch's CPU wheel; skipped (saying why) without
  a checkout or PyTorch;
* ``tensorflow`` / ``jax``: the port's ``Trainer`` / ``JaxTrainer`` step under ``train.math
  --recipe authors_code`` (the same loss, PyTorch-form Adam, clip and initialisation);
* ``tensorflow_buckets``: the port's TensorFlow step on its own length-bucketed batches
  (``make_dataset``'s boundaries) of the same data; ``tensorflow_grid`` on its batches of
  a (question, answer) length grid (``train.math --answer_buckets``);
* ``tensorflow_einsum``: ``tensorflow`` with the model's ``attention_form="einsum"`` (the
  attention's projections as one einsum per kernel; ``tensorflow_matmul`` is the default
  ``"matmul"`` form: one matrix product per input stream and a reshape);
* ``tensorflow[_buckets]_grouped``: the loss's model call on 3 / 2 length-sorted parts of
  equal count; ``..._groupedN``: N parts cut at the least padding (``--length_groups N``),
  ``_equal`` of equal count, ``..._groupedNxM`` each cut again into M by answer length
  (``--target_groups M``): the same examples, loss and gradient, less padding computed;
  ``tensorflow_grid_grouped...`` the same on the grid's batches.

All but the ``buckets`` and ``grid`` steps read the same batches: ``--batches`` batches of
``--batch_size`` padded to their longest question and answer, as the authors' torchtext
``Iterator`` pads (the authors' step gets them with its ids for ``<pad>`` and ``<unk>``).

Reported per configuration, on two clocks: ``wall`` (examples per second) and ``cpu``
(examples per second of the worker's CPU time, which a loaded machine disturbs far less:
with one thread it is the rate of one core of its own): the median rate and its ratio to
``authors`` (else the first configuration) in each round; the matmul FLOPs per example of
a training step (:func:`bench.math_steps.matmul_flops` on each batch's padded lengths, 3×
the forward's; ``useful`` on each example's own lengths; PyTorch's ``FlopCounterMode``
count of the authors' step is recorded beside it as a check); the FLOP/s that makes, and
its fraction of this machine's measured float32 matmul peak on the same clock: the fastest
library's one-thread matmuls of the feed-forward's shapes (``[B·S, d] x [d, f]`` and back,
``S`` the mean padded question length), timed after every window. ``--profile_steps N``
also profiles N steps of each TensorFlow and PyTorch configuration op by op
(:mod:`bench.math_step_profile`).
"""

import importlib.util
import json
import os
import resource
import statistics
import sys
import tempfile
import time

from bench import math_batch_sets, math_step_profile, math_steps
from bench.windows import WindowWorker, one_thread_environment, serve_windows
from tpr_keras import runtime

#: The twenty everyday modules the served math preset is trained on.
EVERYDAY_MODULES = (
    "arithmetic__add_or_sub,arithmetic__add_sub_multiple,arithmetic__mul,arithmetic__div,"
    "arithmetic__mixed,arithmetic__mul_div_multiple,comparison__pair,comparison__sort,"
    "comparison__kth_biggest,comparison__closest,numbers__place_value,numbers__round_number,"
    "numbers__gcd,numbers__lcm,numbers__div_remainder,numbers__is_factor,numbers__is_prime,"
    "measurement__conversion,measurement__time,algebra__linear_1d")


def skip_reason(config, checkout):
    """Why ``config`` cannot run here (None when it can)."""
    library = math_steps.config_entry(config)[0]
    if library == "torch":
        if not checkout:
            return "no --authors_checkout given"
        if not os.path.isfile(os.path.join(checkout, math_steps.AUTHORS_MODEL)):
            return f"{checkout} holds no {math_steps.AUTHORS_MODEL}"
    if importlib.util.find_spec(library) is None:
        return f"{library} is not installed"
    return None


def build_step(spec, library, batches):
    """``(step, data, info)`` of a worker: the step of ``library`` and its batches."""
    folder = tempfile.mkdtemp(prefix="math_authors_step_")
    if library == "torch":
        import torch

        torch.set_num_threads(1)
        step, model = math_steps.authors_step(spec["checkout"], spec["sizes"],
                                              spec["vocabulary_size"], spec["recipe"])
        data = [tuple(torch.from_numpy(x) for x in b)
                for b in math_steps.authors_batches(batches)]
        source, target = data[0]  # FlopCounterMode's count beside the formula's
        info = {"parameters": sum(p.numel() for p in model.parameters()),
                "version": torch.__version__,
                "counted_flops_per_example": math_steps.counted_torch_flops(step, data[0]),
                "formula_flops_per_example": 3 * math_steps.matmul_flops(
                    spec["sizes"], spec["vocabulary_size"], source.shape[1],
                    target.shape[1] - 1)}
        return step, data, info
    if library == "jax":
        import jax

        step, trainer = math_steps.jax_step(spec["preset"], spec["vocabulary_size"], folder)
        return step, batches, {"parameters": trainer.model.count_params(),
                               "version": jax.__version__}
    import tensorflow as tf

    step, trainer, data = math_steps.tensorflow_step(
        spec["preset"], spec["vocabulary_size"], folder, batches,
        *math_steps.config_entry(spec["config"])[2:])
    return step, data, {"parameters": trainer.model.count_params(),
                        "version": tf.__version__}


def worker(spec):
    """One configuration's process: build, warm up over every batch, (profile,) then time
    windows on demand."""
    spec = json.loads(spec)
    library, batch_set = math_steps.config_entry(spec["config"])[:2]
    batches = math_batch_sets.load_batches(spec["batches_file"], batch_set)
    step, data, info = build_step(spec, library, batches)
    start = time.perf_counter()
    for batch in data:
        step(batch)
    info.update(config=spec["config"], library=library, batches=batch_set,
                warmup_seconds=time.perf_counter() - start)
    if spec["profile_steps"] and library != "jax":
        profile = (math_step_profile.torch_profile if library == "torch"
                   else math_step_profile.tensorflow_profile)
        info["profile"] = profile(lambda: step(data[0]), spec["profile_steps"])
    sizes = spec["sizes"]

    def run_window(seconds):
        examples, count = 0, 0
        begin, cpu = time.perf_counter(), time.process_time()
        while time.perf_counter() - begin < seconds:
            examples += step(data[count % len(data)])
            count += 1
        wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
        matmul = math_steps.matmul_rate(library, spec["matmul_rows"], sizes["model_dim"],
                                        sizes["feed_forward_dim"], spec["matmul_seconds"])
        return {"steps": count, "peak_rss_mib": resource.getrusage(
                    resource.RUSAGE_SELF).ru_maxrss / 1024,
                **{clock: {"examples_per_second": examples / seconds_,
                           "matmul_flops_per_second": matmul[clock]}
                   for clock, seconds_ in (("wall", wall), ("cpu", max(cpu, 1e-9)))}}

    serve_windows(info, run_window)


def start_worker(config, spec):
    entry = math_steps.config_entry(config)
    rounded = len(entry) > 6 and entry[6] > 1  # _mK: recurring shapes, the cache sized
    return WindowWorker([sys.executable, "-m", "bench.math_authors_step", "--worker",
                         json.dumps(dict(spec, config=config))], config,
                        env=one_thread_environment(entry[0], rounded))


def summarize(infos, windows, baseline, counts, peaks):
    """``{config: row}`` from every window, per clock (``wall``: examples per second;
    ``cpu``: per second of the process's CPU time): the median rate, the ratios to
    ``baseline`` in each round, the FLOP/s and its fraction of that clock's ``peaks``."""
    rows = {}
    for name, info in infos.items():
        mine = [w for w in windows if w["config"] == name]
        count = counts[math_steps.config_entry(name)[1]]
        row = dict(info)
        row.update(flops_per_example=count["flops_per_example"],
                   useful_flops_per_example=count["useful_flops_per_example"],
                   steps=sum(w["steps"] for w in mine),
                   peak_rss_mib=max(w["peak_rss_mib"] for w in mine))
        for clock in ("wall", "cpu"):
            base = {w["round"]: w[clock]["examples_per_second"] for w in windows
                    if w["config"] == baseline}
            rates = [w[clock]["examples_per_second"] for w in mine]
            ratios = [w[clock]["examples_per_second"] / base[w["round"]] for w in mine]
            rate = statistics.median(rates)
            row[clock] = dict(
                examples_per_second=rate, examples_per_second_rounds=rates,
                ratio_to_baseline=statistics.median(ratios), ratio_to_baseline_rounds=ratios,
                flops_per_second=rate * count["flops_per_example"],
                fraction_of_matmul_peak=rate * count["flops_per_example"] / peaks[clock],
                useful_fraction_of_matmul_peak=(rate * count["useful_flops_per_example"]
                                                / peaks[clock]))
        rows[name] = row
    return rows


def matmul_peaks(windows):
    """Per clock: each library's median matmul FLOP/s over its windows, and the fastest."""
    peaks = {}
    for clock in ("wall", "cpu"):
        by_library = {}
        for w in windows:
            by_library.setdefault(w["library"], []).append(w[clock]["matmul_flops_per_second"])
        by_library = {k: statistics.median(v) for k, v in by_library.items()}
        peaks[clock] = {"by_library": by_library, "flops_per_second": max(by_library.values())}
    return peaks


def print_rows(rows, baseline, peaks):
    for clock, unit in (("wall", "examples/s"), ("cpu", "ex/CPU s")):
        print(f"\n{clock} clock; matmul peak (one thread) " + ", ".join(
            f"{k} {v / 1e9:.1f}" for k, v in peaks[clock]["by_library"].items())
            + " GFLOP/s")
        print(f"{'config':19s} {unit:>10s} {'vs ' + baseline:>14s} {'GFLOP/ex':>9s} "
              f"{'GFLOP/s':>8s} {'of peak':>8s}  ratio per round")
        for name, row in rows.items():
            r = row[clock]
            print(f"{name:19s} {r['examples_per_second']:10.1f} "
                  f"{r['ratio_to_baseline']:13.2f}x {row['flops_per_example'] / 1e9:9.3f} "
                  f"{r['flops_per_second'] / 1e9:8.2f} "
                  f"{100 * r['fraction_of_matmul_peak']:7.1f}%  "
                  + " ".join(f"{x:.2f}" for x in r["ratio_to_baseline_rounds"]))
    print("warm-up s: " + ", ".join(f"{n} {r['warmup_seconds']:.0f}" for n, r in rows.items()))
    for name, row in rows.items():
        if "profile" in row:
            print("\n".join(math_step_profile.format_profile(name, row["profile"])))


def parse_flags():
    from serving.command_flags import Command

    parser = Command("python -m bench.math_authors_step", __doc__.split("\n\n")[0])
    parser.string("data_dir", None)
    parser.string("modules", EVERYDAY_MODULES, "comma-separated, or all")
    parser.integer("limit_per_file", 200)
    parser.string("preset", "tiny", "a TP-Transformer size")
    parser.string("configs", "authors,tensorflow,tensorflow_buckets",
                  f"from {','.join(math_steps.CONFIGS)}, tensorflow[_buckets]_groupedN; jax "
                  "compiles once per batch shape (minutes)")
    parser.string("authors_checkout", None,
                  "work tree of github.com/ischlag/TP-Transformer (else authors is skipped)")
    parser.integer("batch_size", 128)
    parser.integer("batches", 6, "distinct batches per batch set")
    parser.float("seconds", 8.0, "per configuration per round")
    parser.integer("repeats", 3, "rounds")
    parser.float("matmul_seconds", 0.5, "the matmul peak's timing after every window")
    parser.integer("profile_steps", 0, "profile this many steps op by op (0: none)")
    parser.string("json", None, "write the results to this file")
    parser.string("worker", None, "internal: set by the parent process")
    args = parser.parse()
    names = args.configs.split(",")
    unknown = [n for n in names if math_steps.config_entry(n) is None]
    if unknown:
        parser.error(f"unknown configs {unknown}; see --help")
    return args, names


def prepare(args):
    """Loads the data, builds and saves both batch sets, and counts their FLOPs: the
    workers' common ``spec`` and the counts."""
    from tpr_keras.data import mathematics
    from tpr_keras.models.tp_transformer import PAPER_SIZES
    from tpr_keras.training.recipes.tp_transformer import resolve_size

    modules = "all" if args.modules == "all" else tuple(args.modules.split(","))
    data = mathematics.load_mathematics(args.data_dir, modules=modules,
                                        limit_per_file=args.limit_per_file, download=False)
    used = {math_steps.config_entry(name)[1] for name in args.configs.split(",")}
    sets = math_batch_sets.make_batch_sets(
        data.train, args.batch_size, args.batches,
        [name for name in ("same", "buckets", "grid") if name == "same" or name in used])
    sizes = dict(PAPER_SIZES[args.preset].config)
    counts = {k: math_batch_sets.flop_counts(v, sizes, len(data.vocab)) for k, v in sets.items()}
    path = os.path.join(tempfile.mkdtemp(prefix="math_authors_step_"), "batches.npz")
    math_batch_sets.save_batches(sets, path)
    recipe = resolve_size(args.preset, recipe_name="authors_code")[1]
    spec = {"batches_file": path, "preset": args.preset, "sizes": sizes,
            "vocabulary_size": len(data.vocab), "checkout": args.authors_checkout,
            "recipe": {k: recipe[k] for k in ("learning_rate", "beta_1", "beta_2",
                                              "clip_norm")},
            "matmul_rows": args.batch_size * round(counts["same"]["mean_source_length"]),
            "matmul_seconds": args.matmul_seconds, "profile_steps": args.profile_steps}
    return spec, counts


def run_rounds(names, spec, seconds, repeats):
    """Every configuration's ``READY`` record, and every window (its rates, config,
    library and round), the processes taking turns."""
    workers = [start_worker(name, spec) for name in names]
    windows = []
    try:
        for round_ in range(repeats):
            for w in (workers if round_ % 2 == 0 else workers[::-1]):
                record = w.window(seconds)
                windows.append({k: v for k, v in record.items()
                                if k not in w.info or k in ("config", "library")})
                windows[-1]["round"] = round_
                wall, cpu = record["wall"], record["cpu"]
                print(f"round {round_ + 1} {w.label:19s} {wall['examples_per_second']:7.1f} "
                      f"ex/s {cpu['examples_per_second']:7.1f} ex/CPU s; matmul "
                      f"{wall['matmul_flops_per_second'] / 1e9:5.1f} GFLOP/s "
                      f"{cpu['matmul_flops_per_second'] / 1e9:5.1f} GFLOP/CPU s", flush=True)
    finally:
        for w in workers:
            w.close()
    return {w.label: w.info for w in workers}, windows


def main():
    args, names = parse_flags()
    if args.worker:
        return worker(args.worker)
    skipped = {n: r for n in names if (r := skip_reason(n, args.authors_checkout))}
    for name, reason in skipped.items():
        print(f"{name}: skipped ({reason})")
    running = [n for n in names if n not in skipped]
    if not running:
        raise SystemExit("no configuration can run here")
    spec, counts = prepare(args)
    load = os.getloadavg()[0]
    extension = runtime.cpu_vector_extension()
    named = extension or "no x86 vector extension named"
    print(f"{args.modules}; {args.preset}; batch {args.batch_size}; {os.cpu_count()} CPUs "
          f"({named}); load average {load:.2f}; padded lengths " + ", ".join(
              f"{k} {c['mean_source_length']:.1f}/{c['mean_target_length']:.1f}"
              for k, c in counts.items()), flush=True)
    infos, windows = run_rounds(running, spec, args.seconds, args.repeats)
    peaks = matmul_peaks(windows)
    baseline = "authors" if "authors" in running else running[0]
    shape = [spec["matmul_rows"], spec["sizes"]["model_dim"],
             spec["sizes"]["feed_forward_dim"]]
    results = {
        "command": "python -m bench.math_authors_step " + " ".join(sys.argv[1:]),
        "modules": args.modules, "preset": args.preset, "sizes": spec["sizes"],
        "vocabulary_size": spec["vocabulary_size"], "batch_size": args.batch_size,
        "batches": args.batches, "cpus": os.cpu_count(), "threads": 1,
        "cpu_vector_extension": extension,
        "onednn_cache_environment": os.environ.get(runtime.ONEDNN_CACHE_ENV),
        "seconds": args.seconds, "repeats": args.repeats, "load_average_start": load,
        "load_average_end": os.getloadavg()[0], "baseline": baseline,
        "batch_sets": counts, "skipped": skipped, "matmul_peak": dict(shape=shape, **peaks),
        "configs": summarize(infos, windows, baseline, counts,
                             {k: v["flops_per_second"] for k, v in peaks.items()}),
        "windows": windows}
    print_rows(results["configs"], baseline, peaks)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"Wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
