"""The generated blocks of ``results/*.md``, the README and ``docs/``: block name -> Markdown
made from committed JSON (or, for the ``help-*`` blocks of docs/flags_<task>.md, from the code:
each ``train.*`` command's ``--help``), and the figures those pages show. Each generator
takes the repository root and returns Markdown text. The experiments' own tables (entailment
Table 1, bAbI Tables 2 and 3, the MemN2N joint runs) are made by the experiments' modules,
which know their runs' layout; the others by this package's modules or, for small tables of
one committed file each, here.
"""

import os
import types

from experiments import babi_paper_runs, entailment_table1, memn2n_joint_runs
from tools.report import (babi, babi_table1, math_curves, math_devices, math_everyday,
                          math_everyday_experts, math_tables, modules, serving_soak,
                          test_times)
from tools.report.bench import (TRAIN_COMMANDS, authors_step_block, backends_babi_task1_block,
                                backends_block, command_help_block, entailment_bench_block,
                                gpu_block, math_bench_block, serving_batching_block)
from tools.report.common import load_json as _load
from tools.report.presets import (preset_block, preset_claims_block, preset_modules_block,
                                  presets_block,
                                  presets_served_block)
from tpr_keras.presets import TRAINED_PRESET_NAMES

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


# ----------------------------------------------------------------------------- bAbI
def babi_table1_block(name):
    """A generator of the bAbI Table 1 block ``name`` (:data:`babi_table1.TABLES`)."""
    def block(root):
        return babi_table1.table_markdown(root, name)
    block.__doc__ = f"bAbI Table 1 {name}."
    return block


#: block name -> generator(root) -> Markdown.
BLOCKS = {
    "backends": backends_block,
    "babi-costs": babi.costs_markdown,
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
    "preset-claims": preset_claims_block,
    "preset-modules-tp_transformer_math_routed": preset_modules_block(
        "tp_transformer_math_routed"),
    "preset-modules-tp_transformer_math_everyday": preset_modules_block(
        "tp_transformer_math_everyday"),
    **{f"preset-{name}": preset_block(name) for name in TRAINED_PRESET_NAMES},
    **{f"babi-table1-{name}": babi_table1_block(name) for name in babi_table1.TABLES},
    "babi-recipes": babi.recipes_markdown,
    "babi-memn2n-joint": memn2n_joint_runs.markdown,
    "babi-memn2n-ls-check": babi.ls_check_markdown,
    "entailment-table1": entailment_table1_block,
    "entailment-curves": entailment_curves_block,
    "entailment-default": entailment_default_block,
    "entailment-bench": entailment_bench_block,
    "math-all-summary": modules.math_all_summary_block,
    "math-all-modules": modules.math_all_modules_block,
    "math-focus-runs": modules.math_focus_runs_block,
    "math-focus-seeds": modules.math_focus_seeds_block,
    "math-focus-authors-runs": lambda root: modules.math_focus_runs_block(root, "focus_authors"),
    "math-focus-authors-seeds": lambda root: modules.math_focus_seeds_block(root,
                                                                          "focus_authors"),
    "math-focus-recipes": modules.math_focus_recipes_block,
    "math-steps": math_tables.steps_markdown,
    "math-fit": math_tables.fit_markdown,
    "math-answer-buckets": math_tables.answer_buckets_markdown,
    "math-sizes": math_curves.sizes_markdown,
    "math-continued": math_tables.continued_markdown,
    "math-curves": math_curves.curves_markdown,
    "math-everyday": math_everyday.everyday_markdown,
    "math-everyday-experts": math_everyday_experts.experts_markdown,
    "math-everyday-fresh": math_everyday_experts.fresh_markdown,
    "math-devices": math_devices.devices_markdown,
    "math-heldout": math_tables.heldout_markdown,
    "babi-table2": lambda root: babi_paper_runs.markdown(root, 2),
    "babi-table3": lambda root: babi_paper_runs.markdown(root, 3),
    "babi-table3-authors-step": babi_paper_runs.comparison_markdown,
    "math-bench-all-modules": math_bench_block("math_bench_all_modules"),
    "math-bench-place-value": math_bench_block("math_bench_place_value"),
    "math-authors-step-target-groups": authors_step_block("math_authors_step_target_groups"),
    "math-authors-step-24-batches": authors_step_block("math_authors_step_24_batches"),
    "math-authors-step-24-batches-onednn-off":
        authors_step_block("math_authors_step_24_batches_onednn_off"),
    "math-authors-step-group-multiple": authors_step_block("math_authors_step_group_multiple"),
    "math-authors-step-group-shapes": authors_step_block("math_authors_step_group_shapes"),
    "math-authors-step-avx512": authors_step_block("math_authors_step_avx512"),
    "math-authors-step-avx2": authors_step_block("math_authors_step_avx2"),
    "math-authors-step-all-avx2": authors_step_block("math_authors_step_all_modules_avx2"),
    "math-authors-step-all-48-avx2":
        authors_step_block("math_authors_step_all_modules_48_batches_avx2"),
    "math-authors-step-all-48-m8-avx2":
        authors_step_block("math_authors_step_all_modules_48_batches_m8_avx2"),
    "math-authors-step-grid-avx2": authors_step_block("math_authors_step_grid_avx2"),
    "math-authors-step-all-avx512": authors_step_block("math_authors_step_all_modules_avx512"),
    "serving-batching": serving_batching_block,
    "serving-soak": serving_soak.markdown,
    "tests-times": test_times.markdown,
    **{f"help-{module}": command_help_block(module) for module in TRAIN_COMMANDS},
}

#: figure name -> draw(root, path): the figures the pages show, each drawn on request
#: (``python -m tools.report --figure NAME --out PNG``).
FIGURES = {
    "babi-all-tasks-curve": babi_table1.plot_curves,
    "math-sizes": math_curves.plot_sizes,
    "math-curves": math_curves.plot_curves,
}
