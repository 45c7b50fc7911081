"""The generated blocks of measured speed: serving with and without batching, training
throughput per backend and dtype policy (CPU and lent GPUs), the task-1 command per
backend, the math and entailment training benchmarks, and the ``train.*`` commands'
``--help`` (:data:`tools.report.blocks.BLOCKS` names them)."""

import os
import re
import statistics
import subprocess
import sys

from tools.report.common import load_json as _load
from tools.report.common import ReportError, portable_command


# -------------------------------------------------------------------------- serving
def serving_batching_block(root):
    """``bench/serving_batching.py``: QPS and latency without and with batching."""
    bench = _load(root, "results", "bench", "serving-batching.json")
    lines = ["| clients | batching | QPS (each run) | client p50 ms | client p99 ms | server "
             "p50 / p99 ms | errors | server peak RSS MiB | QPS / unbatched |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    unbatched = {r["clients"]: r["qps"] for r in bench["rows"] if r["config"] == "unbatched"}
    for r in bench["rows"]:
        each = ", ".join(f"{run['qps']:,.0f}" for run in r["runs"])
        lines.append(f"| {r['clients']} | {'on' if r['config'] == 'batched' else 'off'} | "
                     f"{r['qps']:,.0f} ({each}) | {r['client_p50_ms']:.2f} | "
                     f"{r['client_p99_ms']:.2f} | {r['server_handler_p50_ms']:.2f} / "
                     f"{r['server_handler_p99_ms']:.2f} | {r['errors']} | "
                     f"{r['peak_rss_mib_server']:.0f} | {r['qps'] / unbatched[r['clients']]:.2f} |")
    params = " ".join(line.strip() for line in bench["batching_parameters"].splitlines())
    lines += ["", f"`{portable_command(bench['command'])}`: means of two runs per row (order "
              f"off, on, on, off), {bench['seconds']:g} s of load per run, batch "
              f"{bench['batch']} per request, {bench['cpus']} CPUs "
              f"({bench['machine']}), load average {bench['load_average_start']:.1f} at the "
              f"start; batching parameters `{params}`."]
    return "\n".join(lines)


# -------------------------------------------------------------------------- backends
def backends_block(root, name="backends.json"):
    """``bench/backends.py``: training throughput per family, backend and dtype policy."""
    bench = _load(root, "results", "bench", name)
    lines = ["| family | batch | backend | dtype policy | examples/s | tokens/s | peak MiB | "
             f"time per example vs {bench['baseline']} |",
             "|---|---:|---|---|---:|---:|---:|---:|"]
    for r in bench["rows"]:
        tokens = f"{r['tokens_per_second']:,.0f}" if r["tokens_per_second"] else ""
        lines.append(f"| {r['family']} | {r['batch_size']} | {r['backend']} | "
                     f"{r['dtype_policy']} | {r['examples_per_second']:,.1f} | {tokens} | "
                     f"{r['peak_memory_mb']:,.0f} | {r['time_ratio']:.2f}x |")
    kinds = sorted({r["memory_kind"] for r in bench["rows"]})
    devices = ", ".join(bench.get("devices", []))
    where = f"{devices} (host: {bench['machine']})" if devices else bench["machine"]
    lines += ["", f"`{portable_command(bench['command'])}` on {where}: medians of "
              f"{bench['repeats']} rounds of {bench['seconds']:g} s per configuration, the "
              f"configurations of a family taking turns; ratios within the same round. Peak "
              f"memory: {', '.join(kinds)} of the configuration's own process."]
    return "\n".join(lines)


def gpu_block(name):
    """A generator of ``bench/backends.py --backends jax`` on a lent GPU:
    ``results/bench/<name>``."""
    return lambda root: backends_block(root, name)


def backends_babi_task1_block(root):
    """``results/backends/babi-task1-<backend>-r<round>.json``: the task-1 command per backend,
    round by round, and the test error of its export served over gRPC
    (``tools.babi_serving_check --all``, ``...-served.json``) where recorded."""
    folder = os.path.join(root, "results", "backends")
    runs = sorted((int(m[2]), m[1], m[0]) for m in (
        re.fullmatch(r"babi-task1-(\w+)-r(\d+)\.json", n) for n in os.listdir(folder)) if m)
    lines = ["| round | backend | epochs | test error % | served test error % | "
             "training examples/s | commit |", "|---:|---|---:|---:|---:|---:|---|"]
    commands = []
    for round_, backend, name in runs:
        run = _load(folder, name)
        served, served_name = "–", name.replace(".json", "-served.json")
        if os.path.exists(os.path.join(folder, served_name)):
            task = _load(folder, served_name)["tasks"]["1"]
            served = f"{task['error_percent']:.2f} of {task['questions']:,}"
        lines.append(f"| {round_} | {backend} | {run['epochs']} | "
                     f"{run['test_error_percent']['1']:.2f} | {served} | "
                     f"{run['train_examples_per_second']:,.0f} | {run['source']['commit'][:7]} |")
        if round_ == runs[-1][0]:
            commands.append(f"KERAS_BACKEND={backend} {portable_command(run['command'])}")
            if served != "–":
                commands.append(portable_command(_load(folder, served_name)["command"]))
    lines += ["", "The newest round's commands, in order: "
              + "; ".join(f"`{c}`" for c in commands) + "."]
    return "\n".join(lines)


# --------------------------------------------------------------------- command flags
#: The commands whose every flag docs/flags_<task>.md lists, generated from their ``--help``.
TRAIN_COMMANDS = ("train.babi", "train.math", "train.entailment")


def command_help_block(module):
    """``python -m MODULE --help`` as a text block: every flag the command defines, grouped,
    with its default and help, made from the flag definitions themselves (``--help`` starts
    no TensorFlow, and its layout does not depend on the terminal)."""
    def block(root):
        env = dict(os.environ, PYTHONPATH=root)
        done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise ReportError(f"python -m {module} --help failed: {done.stderr[-2000:]}")
        return f"```text\n{done.stdout.rstrip()}\n```"
    return block


# -------------------------------------------------------------- training speed
def entailment_bench_block(root):
    """``bench/entailment_bench.py``: pairs/s of the default cells, time per pair vs LSTM."""
    bench = _load(root, "results", "entailment", "bench", "default_cells.json")
    reference = bench["reference"]
    lines = [f"| cell | parameters | pairs/s, median (min–max) | peak RSS MB | time per pair / "
             f"{reference}'s, median (min–max) |", "|---|---:|---:|---:|---:|"]
    for cell, s in bench["summary"].items():
        ratio = (f"{s['time_ratio_to_reference_median']:.2f} "
                 f"({s['time_ratio_to_reference_min']:.2f}–"
                 f"{s['time_ratio_to_reference_max']:.2f})")
        lines.append(f"| `{cell}` | {s['parameters']:,} | {s['median_pairs_per_second']:,.0f} "
                     f"({s['min_pairs_per_second']:,.0f}–{s['max_pairs_per_second']:,.0f}) | "
                     f"{s['median_peak_rss_mb']:.0f} | {ratio} |")
    lines += ["", f"{bench['repeats']} rounds of {bench['seconds']:g} s per cell, "
              f"{bench['cpus']} CPUs, TensorFlow {bench['tensorflow']}; load average "
              f"{bench['load_average_start'][0]:.1f} at the start."]
    return "\n".join(lines)


CONFIG_LABELS = {
    "baseline": "baseline (bucketed)", "batch_max": "batch_max (no bucketing)",
    "fixed_max": "fixed_max (one padded shape)", "trainer": "trainer (the Trainer's step)",
    "jit_bucketed": "jit_bucketed (XLA)", "jit_fixed": "jit_fixed (XLA, one shape)",
    "trainer_jit": "trainer_jit", "trainer_jit_fixed": "trainer_jit_fixed",
    "matmul": "matmul attention",
}


def math_bench_block(name):
    """A generator of ``results/bench/<name>.json``'s table (``bench/math_bench.py``)."""
    def block(root):
        bench = _load(root, "results", "bench", f"{name}.json")
        lines = ["| config | examples/s | target tokens/s | ratio to baseline, per round | "
                 "warm-up s | peak RSS MiB |", "|---|---:|---:|---|---:|---:|"]
        for config, c in bench["configs"].items():
            rounds = ", ".join(f"{r:.2f}" for r in c["ratio_to_baseline_rounds"])
            lines.append(f"| {CONFIG_LABELS.get(config, config)} | "
                         f"{c['examples_per_second']:,.0f} | {c['tokens_per_second']:,.0f} | "
                         f"{'1' if config == 'baseline' else rounds} | "
                         f"{c['warmup_seconds']:.0f} | {c['peak_rss_mib']:,.0f} |")
        padded = bench["mean_padded_source_length"]
        chosen = bench["modules"]
        chosen = ", ".join(chosen) if isinstance(chosen, list) else chosen
        lines += ["", f"Modules: {chosen}; `{bench['preset']}` {bench['model']}, "
                  f"batch {bench['batch_size']}; {bench['repeats']} rounds of "
                  f"{bench['seconds']:g} s; mean padded question length "
                  + ", ".join(f"{k} {v:.1f}" for k, v in padded.items())
                  + f"; load average {bench['load_average_start']:.1f} at the start."]
        return "\n".join(lines)
    block.__doc__ = f"``results/bench/{name}.json`` as a table."
    return block


def _useful_work(bench, batch_set):
    """How much work an example of ``batch_set`` is against one of the baseline's set: the
    ratio of their matmul FLOPs per example on the examples' own lengths (a set drawn from
    the bucketed batches holds other questions than the same batches: longer or shorter
    ones). None when the JSON does not count them."""
    sets = bench.get("batch_sets", {})
    baseline = bench["configs"].get(bench["baseline"], {}).get("batches", "same")
    try:
        return (sets[batch_set]["useful_flops_per_example"]
                / sets[baseline]["useful_flops_per_example"])
    except KeyError:
        return None


def _modules_said(bench):
    """Which questions an authors-step bench drew its batches from, and how long the
    batches pad on average (question / decoder input, characters)."""
    modules = bench.get("modules", "")
    said = ("all 56 modules" if modules == "all" else
            f"{len(modules.split(','))} modules" if modules else "the default modules")
    padded = ", ".join(f"{name} {s['mean_source_length']:.0f}/{s['mean_target_length']:.0f}"
                       for name, s in bench.get("batch_sets", {}).items())
    return f"Questions of {said}" + (f" (padded lengths: {padded})" if padded else "")


def authors_step_block(name):
    """A generator of ``results/bench/<name>.json``'s table (``bench/math_authors_step.py``):
    each configuration's rate on the CPU clock and its ratio to the authors' step in every
    round, with the median of those ratios."""
    def block(root):
        bench = _load(root, "results", "bench", f"{name}.json")
        lines = ["| step | batches | examples per CPU s | ratio to the authors' step, per "
                 "round | median | median per useful FLOP | of the matmul peak | "
                 "peak RSS MiB |",
                 "|---|---|---:|---|---:|---:|---:|---:|"]
        for config, c in bench["configs"].items():
            median = statistics.median(c["cpu"]["ratio_to_baseline_rounds"])
            each = ", ".join(f"{r:.2f}" for r in c["cpu"]["ratio_to_baseline_rounds"])
            work = _useful_work(bench, c["batches"])
            lines.append(f"| `{config}` | {c['batches']} | "
                         f"{c['cpu']['examples_per_second']:,.0f} | "
                         f"{'1' if config == bench['baseline'] else each} | "
                         f"{median:.2f}× | "
                         + ("–" if work is None else f"{median * work:.2f}×") +
                         f" | {c['cpu']['fraction_of_matmul_peak']:.0%} | "
                         f"{c['peak_rss_mib']:,.0f} |")
        load = bench["load_average_start"]
        load = load[0] if isinstance(load, list) else load
        vector = bench.get("cpu_vector_extension")
        lines += ["", f"{_modules_said(bench)}; `{bench['preset']}`, batch "
                  f"{bench['batch_size']}, {bench['batches']} "
                  f"batches per set, {bench['repeats']} rounds of {bench['seconds']:g} s "
                  f"per step, one thread each" + (f" of a CPU with {vector}" if vector else "")
                  + f"; load average {load:.1f} at the start. "
                  f"Command: `{portable_command(bench['command'])}`."]
        return "\n".join(lines)
    block.__doc__ = f"``results/bench/{name}.json`` as a table."
    return block
