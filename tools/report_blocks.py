"""The generated blocks of ``results/*.md``, the README and ``docs/``: block name -> Markdown
made from committed JSON (or, for the ``help-*`` blocks of docs/flags.md, from the code:
each ``train.*`` command's ``--help``). Each generator takes the repository root and returns
Markdown text. Those of entailment Table 1, the bAbI Table 1 and the math per-module tables
call the code that already renders them (``experiments/entailment_table1.py``,
``tools/babi_table1.py``, ``tpr_keras.analysis.modules``); the others are small tables of one
committed file each.
"""

import os
import types

from experiments import babi_paper_runs, entailment_table1, memn2n_joint_runs
from tools import (babi_recipes, babi_table1, math_continue, math_curves, math_fit,
                   math_heldout, math_sizes, math_steps, memn2n_ls_check)
from tools.report_presets import (parent_lines, preset_block,  # noqa: F401  (re-exported)
                                  preset_modules_block, presets_block, presets_served_block)
from tools.report_bench_blocks import (TRAIN_COMMANDS, backends_babi_task1_block,
                                       backends_block, command_help_block, gpu_block,
                                       serving_batching_block)
from tools.report_common import demote
from tools.report_common import load_json as _load
from tools.report_common import portable_command  # noqa: F401  (re-exported)
from tpr_keras.analysis import modules
from tpr_keras.presets import TRAINED_PRESET_NAMES

FOCUS_MODELS = ("tp_transformer", "transformer")
FOCUS_SEEDS = (0, 1, 2)
ENTAILMENT_ROWS = ("tpru32", "tpru8", "lstm", "gru", "bidaf-tpru32", "bidaf-tpru32-normal",
                   "bidaf-lstm")


# ----------------------------------------------------------------------- entailment
def entailment_table1_block(root):
    """Table 1 of Tang et al. (2018): the kept rows beside the paper's."""
    keep = os.path.join(root, "results", "entailment", "table1")
    args = types.SimpleNamespace(rows=list(ENTAILMENT_ROWS), runs=keep, keep=keep)
    return entailment_table1.report_markdown(args)


#: (label, results.json under results/entailment) of the validation-curve table.
CURVES = (
    ("BiDAF TPRU-32, `uniform` embedding", "table1/bidaf-tpru32"),
    ("BiDAF TPRU-32, `normal` embedding", "table1/bidaf-tpru32-normal"),
    ("BiDAF LSTM", "table1/bidaf-lstm"),
    ("plain TPRU-32, `uniform` embedding", "table1/tpru32"),
    ("plain TPRU-32, `normal` embedding", "plain-tpru32-normal"),
)
CURVE_EPOCHS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 25, 30, 40, 50, 60)


def validation_accuracy(history):
    """``{epoch: validation accuracy %}``; a resumed epoch's last record counts."""
    return {h["epoch"]: 100.0 - h["valid_error_percent"] for h in history
            if h.get("valid_error_percent") is not None}


def entailment_curves_block(root):
    """Validation accuracy after selected epochs of the BiDAF and plain TPRU-32 runs."""
    lines = ["| model | " + " | ".join(map(str, CURVE_EPOCHS)) + " |",
             "|---|" + "---:|" * len(CURVE_EPOCHS)]
    for label, folder in CURVES:
        result = _load(root, "results", "entailment", folder, "results.json")
        accuracy = validation_accuracy(result["history"])
        lines.append(f"| {label} | " + " | ".join(
            f"{accuracy[e]:.1f}" if e in accuracy else "–" for e in CURVE_EPOCHS) + " |")
    return "\n".join(lines)


def _scores_row(label, result):
    accuracy = result["accuracy_percent"]
    best = entailment_table1.best_epoch(result["history"])
    stop = entailment_table1.STOPS.get(result["stopped"], result["stopped"])
    return (f"| {label} | " + " | ".join(f"{accuracy[s]:.1f}" for s in entailment_table1.SPLITS)
            + f" | {result['epochs']} ({stop}; {best}) | {result['train_seconds']:,.0f} |")


def entailment_default_block(root):
    """The no-flag command's run (``--recipe auto`` -> ``cpu``) and the plain `normal` run."""
    head = ("| run | " + " | ".join(s.replace("test_", "") for s in entailment_table1.SPLITS)
            + " | epochs (stop; best) | training s |")
    rows = (("no flags (`--recipe cpu`, TPRU-32)", "default-cpu-recipe"),
            ("plain TPRU-32, `--embedding_init=normal`", "plain-tpru32-normal"))
    lines = [head, "|---|" + "---:|" * len(entailment_table1.SPLITS) + "---|---:|"]
    for label, folder in rows:
        lines.append(_scores_row(label, _load(root, "results", "entailment", folder,
                                              "results.json")))
    return "\n".join(lines)


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


# ----------------------------------------------------------------------------- math
def _math_all(root):
    folder = os.path.join(root, "results", "math", "all")
    return {"TP-Transformer": modules.load_run(os.path.join(folder, "tp_transformer")),
            "Transformer": modules.load_run(os.path.join(folder, "transformer"))}


def math_all_summary_block(root):
    """Table 1's columns of the all-modules runs, one row per model."""
    lines = ["| model | parameters | steps of 128 (stop) | training s | interpolate mean % | "
             "> 95 % | extrapolate mean % | > 95 % |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, run in _math_all(root).items():
        s = run["summary"]
        stop = entailment_table1.STOPS.get(run["stopped"], run["stopped"])
        lines.append(
            f"| {label} (`{run['config'].get('preset', '?')}`) | {run['parameters']:,} | "
            f"{run['steps']:,} ({stop}) | {run['train_seconds']:,.0f} | "
            f"{s['interpolate']['mean']:.2f} ({s['interpolate']['modules']}) | "
            f"{s['interpolate']['above_95']} | {s['extrapolate']['mean']:.2f} "
            f"({s['extrapolate']['modules']}) | {s['extrapolate']['above_95']} |")
    return "\n".join(lines)


def math_all_modules_block(root):
    """Figures 4/5 as numbers: every module of both all-modules runs, side by side."""
    runs = _math_all(root)
    tables = {regime: modules.compare(runs, regime) for regime in modules.REGIMES}
    return demote(modules.compare_markdown(tables, list(runs)), 1)


def _focus(root):
    folder = os.path.join(root, "results", "math", "focus")
    return {m: [modules.load_run(os.path.join(folder, f"{m}-seed{s}")) for s in FOCUS_SEEDS]
            for m in FOCUS_MODELS}


def math_focus_runs_block(root):
    """Every focus run: exact match per module, training time."""
    seeds = _focus(root)
    first = seeds[FOCUS_MODELS[0]][0]
    columns = [(regime, m) for regime in modules.REGIMES
               for m in sorted(modules.accuracy(first, regime))]
    short = [m.split("__", 1)[1] if m.startswith("numbers__") or m.startswith("arithmetic__")
             else m for _, m in columns]
    lines = ["| run | " + " | ".join(short) + " | steps | training s |",
             "|---|" + "---:|" * (len(columns) + 2)]
    for model, runs in seeds.items():
        for run in runs:
            cells = [modules.accuracy(run, regime).get(m) for regime, m in columns]
            lines.append(f"| {model} seed {run['config']['seed']} | "
                         + " | ".join("–" if c is None else f"{c:.1f}" for c in cells)
                         + f" | {run['steps']:,} | {run['train_seconds']:,.0f} |")
    return "\n".join(lines)


def math_focus_seeds_block(root):
    """Mean ± std over seeds per module, the verdict and Welch's t (needs scipy for p)."""
    seeds = _focus(root)
    modules.check_seeds(seeds)
    tables = {regime: modules.seed_table(seeds, regime) for regime in modules.REGIMES}
    return demote(modules.seeds_markdown(tables, seeds), 1)


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


# ----------------------------------------------------------------------------- bAbI
def babi_table1_block(name):
    """A generator of the bAbI Table 1 block ``name`` (``tools/babi_table1.py``'s TABLES)."""
    def block(root):
        return babi_table1.table_markdown(root, name)
    block.__doc__ = f"bAbI Table 1 {name}."
    return block


#: block name -> generator(root) -> Markdown.
def babi_costs_block(root):
    """``tools.babi_costs``: each bAbI table's committed runs in hours and CPU-hours."""
    from tools import babi_costs

    return babi_costs.markdown(root)


BLOCKS = {
    "backends": backends_block,
    "babi-costs": babi_costs_block,
    "gpu": gpu_block("gpu.json"),
    "gpu-large-batch": gpu_block("gpu_large_batch.json"),
    "gpu-h200": gpu_block("gpu_h200.json"),
    "gpu-h200-large-batch": gpu_block("gpu_h200_large_batch.json"),
    "gpu-h200-tpr_rnn-bf16-gather": gpu_block("gpu_h200_tpr_rnn_bf16_gather.json"),
    "gpu-h200-tpr_rnn-f32-gather": gpu_block("gpu_h200_tpr_rnn_f32_gather.json"),
    "gpu-h100-tpr_rnn": gpu_block("gpu_h100_tpr_rnn.json"),
    "gpu-h100-tp_transformer": gpu_block("gpu_h100_tp_transformer.json"),
    "gpu-h100-large-batch": gpu_block("gpu_h100_large_batch.json"),
    "backends-babi-task1": backends_babi_task1_block,
    "presets": presets_block,
    "presets-served": presets_served_block,
    "preset-modules-tp_transformer_math_routed": preset_modules_block(
        "tp_transformer_math_routed"),
    **{f"preset-{name}": preset_block(name) for name in TRAINED_PRESET_NAMES},
    **{f"babi-table1-{name}": babi_table1_block(name) for name in babi_table1.TABLES},
    "babi-recipes": babi_recipes.markdown,
    "babi-memn2n-joint": memn2n_joint_runs.markdown,
    "babi-memn2n-ls-check": memn2n_ls_check.markdown,
    "entailment-table1": entailment_table1_block,
    "entailment-curves": entailment_curves_block,
    "entailment-default": entailment_default_block,
    "entailment-bench": entailment_bench_block,
    "math-all-summary": math_all_summary_block,
    "math-all-modules": math_all_modules_block,
    "math-focus-runs": math_focus_runs_block,
    "math-focus-seeds": math_focus_seeds_block,
    "math-steps": math_steps.markdown,
    "math-fit": math_fit.markdown,
    "math-sizes": math_sizes.markdown,
    "math-continued": math_continue.markdown,
    "math-curves": math_curves.markdown,
    "math-heldout": math_heldout.markdown,
    "babi-table2": lambda root: babi_paper_runs.markdown(root, 2),
    "babi-table3": lambda root: babi_paper_runs.markdown(root, 3),
    "babi-table3-authors-step": babi_paper_runs.comparison_markdown,
    "math-bench-all-modules": math_bench_block("math_bench_all_modules"),
    "math-bench-place-value": math_bench_block("math_bench_place_value"),
    "serving-batching": serving_batching_block,
    **{f"help-{module}": command_help_block(module) for module in TRAIN_COMMANDS},
}
