"""Turn a finished training run into a trained preset: ``python -m train.save_preset``.

    python -m train.save_preset --model_dir runs/babi-all --output my_presets/babi_all \
        --data_dir ../shared/data/babi

Reads the run's ``results.json`` and ``export/{model.keras,vocab.txt}``, recomputes the
evaluation table on the official test files with the functions ``train.evaluate`` uses
(and checks it against the run's own numbers), records a sample table (the first N
questions of every test file, what CI re-checks), and writes the preset folder with the
one preset writer (:mod:`tpr_keras.presets.preset_writer`): config, weights, vocabulary (and for math the templates of its modules'
training questions, ``modules.json``) and metadata.json (the training command,
commit, seed, data files' SHA-256, wall time, machine and both tables).

This module holds the command line; the work is :mod:`train.run_preset`, imported once
TensorFlow has started (so ``--help`` starts no TensorFlow).
"""

import os

from train import backend, cli

EXAMPLE = ("python -m train.save_preset --model_dir runs/babi/all --output presets/mine "
           "--description 'TPR-RNN, all bAbI tasks'")


def command():
    """``python -m train.save_preset``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.save_preset", __doc__, EXAMPLE)
    command.group("Run and preset")
    command.string("model_dir", None, "The finished run's folder (results.json, export/).")
    command.string("output", None, "The preset folder to write.")
    command.boolean("overwrite", False, "Replace an existing preset folder.")
    command.string("description", "", "One line: what the model is and how it was trained.")
    command.string("model_name", None, "Served model name for train.export (default: the "
                   "task: babi, entailment, math).")
    command.string("command", None, "The training command, when results.json predates "
                   "recording it.")
    command.string("results_json", None, "Where the run's results.json is committed "
                   "(recorded in metadata.json).")
    command.boolean("allow_dirty", False, "Save a run trained from a tree with uncommitted "
                    "changes (tests, experiments); a shipped preset never is.")
    command.group("Evaluation")
    command.string("data_dir", None, "Where the task's official files are.")
    command.integer("sample", None, "Questions per test file in the sample table (default "
                    "50 for bAbI and math, 200 for entailment).")
    cli.define_output_flags(command, list_presets=False)
    return command


def main(args):
    """Checks the flags, starts TensorFlow, then :func:`train.run_preset.save_run_preset`
    (imported here: it imports TensorFlow, which ``--help`` does not start)."""
    if not args.model_dir or not args.output:
        raise cli.UsageError("--model_dir and --output are required")
    if os.path.exists(args.output) and not args.overwrite:
        raise FileExistsError(f"{args.output} already exists; pass --overwrite to replace it")
    backend.import_tensorflow(args)
    from train.run_preset import save_run_preset

    save_run_preset(args)


if __name__ == "__main__":
    cli.run(command, main)
