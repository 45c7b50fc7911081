"""Train and evaluate the TP-Transformer, or the Transformer baseline (``--model
transformer``), on the Mathematics Dataset: ``python -m train.math``.

``--size`` picks a model size and its training recipe together
(``TPTransformer.paper_sizes``, :mod:`tpr_keras.training.recipes.tp_transformer`); the
default ``auto`` is the paper's TP-Transformer when a GPU is visible and the ``tiny`` CPU
recipe otherwise, and is printed at start. The paper's recipe (§4.1): Adam (lr 1e-4, β2 0.995),
global-norm clipping at 0.1, no schedule, no dropout, batch 1024, Table 1's
1,000k steps. Every recipe flag given overrides the recipe.

Train = train-easy + train-medium + train-hard of the selected modules, less the
validation questions held out of them (``--validation_source``: the kept epoch is the
one of the lowest error on those, not on a test file); evaluation by exact match of the
whole greedy answer (end symbol included), per module, on interpolate and extrapolate. The results table (mean accuracy,
modules above 95 %) is printed and written to ``<model_dir>/results.json``; the
model is exported as a string-in/string-out SavedModel to
``<export_dir>/<model_name>/<version>``.
"""

import time

PROCESS_START = time.time()
from tpr_keras.training.recipes.tp_transformer import RECIPES  # noqa: E402
from tpr_keras import runtime  # noqa: E402
from train import backend, cli  # noqa: E402
from train import flags as train_flags  # noqa: E402

#: ``--size``: ``auto`` or a size of TPTransformer.paper_sizes (each has its recipe).
SIZES = ("auto", *RECIPES)
EXAMPLE = ("python -m train.math --size tiny --modules numbers__place_value --steps 2000 "
           "--model_dir runs/math/tiny")
_RECIPE = " Default: the --size's recipe"


def command():
    """``python -m train.math``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.math", __doc__, EXAMPLE, sizes=SIZES,
                               presets_task="math")
    _data_flags(command)
    _training_flags(command)
    _output_flags(command)
    train_flags.define_flags(command)
    return command


def _data_flags(command):
    """The ``Data`` and ``Model`` flags: which modules, where their files are, the model."""
    command.group("Data")
    command.string("modules", "numbers__place_value",
                   "Comma-separated module names or globs (e.g. 'arithmetic__*'), or 'all'.")
    command.string("data_dir", None, "Folder holding train-easy/ ... extrapolate/ "
                   "(default: $TPR_KERAS_MATH_DIR, then the Keras cache, then download).")
    command.boolean("download", True, "Download the official archive if nothing local is found.")
    command.integer("limit_per_file", None, "Read at most N examples per file (quick runs).")
    command.boolean("balance_modules", True, "Train on every module equally often per epoch, as "
                    "in the dataset, whose modules all have the same size, when the local "
                    "modules differ in size (a plain shuffle when they do not).")
    command.string("module_weights", None, "Comma-separated module=weight (e.g. "
                   "'comparison__pair=3'): each epoch draws the modules in these proportions "
                   "(a module not named weighs 1). Needs --balance_modules.")
    command.group("Model")
    command.enum("model", "tp_transformer", ["tp_transformer", "transformer"],
                 "With or without the role binding of eq. 4 (same code path).")
    command.enum("size", "auto", SIZES, "Paper size of the untrained model and its training "
                   "recipe: auto (tp_transformer or transformer on a GPU, tiny on a CPU), "
                   "tiny, small (CPU), tp_transformer, tp_transformer_b, tp_transformer_c, "
                   "transformer (paper); recorded commands' --preset SIZE is read as --size SIZE.")
    command.string("init_from", None, "Start from a trained preset's weights (a shipped name, "
                   "e.g. tp_transformer_math_focus, or a preset folder) instead of fresh "
                   "ones: same size as --size; the questions are read with the preset's "
                   "vocabulary, so --modules may be a subset of its modules. The optimizer "
                   "starts fresh; a resumed run restores its own checkpoint instead.")


def _training_flags(command):
    """The ``Training recipe``, ``When to stop`` and ``Validation`` flags (a flat list, one call per flag, as ``--help`` shows them)."""
    command.group("Training recipe")
    command.enum("recipe", "size", ["size", "authors_code"], "size: the --size's recipe. "
                 "authors_code: the authors' released training step (PyTorch-form Adam, "
                 "token-mean loss, their initialisation, batch 128, plain batches; "
                 "docs/training.md); recipe flags given still override it.")
    command.integer("batch_size", None, "Global batch size." + _RECIPE +
                    " (paper 1024, CPU sizes 128).")
    command.float("learning_rate", None, "Adam learning rate." + _RECIPE +
                  " (paper 1e-4, CPU sizes 1e-3).")
    command.float("beta_1", None, "Adam β1." + _RECIPE + " (0.9).")
    command.float("beta_2", None, "Adam β2." + _RECIPE + " (0.995).")
    command.float("clip_norm", None, "Global-norm gradient clipping (0 disables)." + _RECIPE +
                  " (0.1).")
    command.integer("length_groups", 1, "Run the training step's model call on up to N "
                    "parts of each batch: its questions sorted by length, cut where the "
                    "fewest padded positions remain, each part padded only to its own longest "
                    "question and answer. The same loss and gradient, less padding computed "
                    "(1: the whole batch at once). TensorFlow only.", lower_bound=1)
    command.integer("target_groups", 1, "Cut each of those parts again into up to N by answer "
                    "length, each padded only to its own longest answer: a batch sorted by "
                    "question length pads its answers to about three times their length. The "
                    "same loss and gradient (1: no second cut); more part shapes, and measured "
                    "slower end to end (docs/training.md). TensorFlow only.",
                    lower_bound=1)
    command.integer("group_multiple", 1, "Cut those parts at row counts, and pad them to "
                    "lengths, that are multiples of N, so that batches share part shapes and "
                    "the CPU kernels planned per shape (oneDNN's cache, then sized to "
                    "16,384) are reused (1: exact cuts). The same loss and gradient; with "
                    "--target_groups 2 and N 8 measured about 12 % faster in steady "
                    "training (docs/training.md). TensorFlow only.", lower_bound=1)
    command.boolean("length_buckets", True, "Batch questions of similar length together "
                    "(the recipe's boundaries), so a batch pads to little more than its "
                    "longest question. --nolength_buckets: plain shuffled batches padded to "
                    "their longest question and answer, as the authors' torchtext Iterator "
                    "batches, which learn per step what theirs learn; on all 56 modules with "
                    "--length_groups 5 --target_groups 2 about as fast as the buckets "
                    "(docs/training.md). TensorFlow only.")
    command.boolean("answer_buckets", False, "Batch questions by answer length too: each "
                    "batch holds one cell of a (question length in steps of 8, answer length) "
                    "grid and pads to little more than its own examples. Measured about 1.1x "
                    "the examples/s but less learnt per step than the default batches, so not "
                    "recommended (docs/training.md). TensorFlow only.")
    command.integer("warmup_steps", 0, "Optional warm-up steps at lr * warmup_factor.")
    command.float("warmup_factor", 0.1, "Learning-rate factor during warm-up.")
    command.integer("cooldown_steps", 0, "Decay the rate linearly to 0 over the last N of "
                    "--steps (0: constant). A constant-rate run resumed with a larger "
                    "--steps and N = the added steps cools down from its checkpoint.")
    command.integer("seed", 0, "Seed of initialisation and data order.")
    command.group("When to stop")
    command.integer("epochs", None, "Maximum epochs. Given without --steps, it replaces the "
                    "recipe's step budget.")
    command.integer("steps", None, "Maximum optimizer steps." + _RECIPE +
                    " (paper 1,000k, CPU sizes 2,000).")
    command.integer("patience", None, "Early stopping after N validations without improvement.")
    command.group("Validation (chooses the kept epoch)")
    command.enum("validation_source", "heldout_train",
                 ["heldout_train", "sample_dir", "test_interpolate"],
                 "The questions whose validation error chooses the kept epoch (the weights "
                 "evaluated, saved and exported) and drives --patience. heldout_train: "
                 "--validation_questions questions of each module's training files, drawn "
                 "with a fixed seed (the same for every --seed) and removed from training "
                 "with every training question of the same text. sample_dir: the files of "
                 "--validation_dir (giving that folder selects it). test_interpolate: the "
                 "interpolate/ test files, which then choose the epoch whose test scores "
                 "are reported; runs whose results.json has no 'validation' record (the "
                 "committed ones and the shipped presets') validated so, and their "
                 "commands rerun as recorded with this value.")
    command.integer("validation_questions", 1000, "heldout_train: questions held out of "
                    "each module's training files for validation (at most 5 % of a "
                    "module's questions).", lower_bound=1)
    command.string("validation_dir", None, "A folder of questions no training file holds, "
                   "to validate on: <dir>/interpolate/<module>.txt (else <dir>/<module>.txt) "
                   "for every trained module, e.g. a fresh generator sample written by "
                   "experiments/math_heldout_sample.py. Selects --validation_source "
                   "sample_dir; nothing is held out of training.")


def _output_flags(command):
    """The ``Evaluation`` and ``Outputs`` flags."""
    command.group("Evaluation")
    command.integer("eval_batch_size", 256, "Batch size of the greedy evaluation.")
    command.integer("curve_questions", 0, "After every epoch, score the greedy answers to "
                    "the first N interpolate (test-file) questions of each module and record "
                    "their exact match % in the epoch's history (learning curves per module; "
                    "they choose no epoch; 0: off).",
                    lower_bound=0)
    command.group("Outputs")
    command.string("model_dir", "runs/math", "Checkpoints, TensorBoard logs, results.json.")
    command.string("export_dir", None, "Default <model_dir>/export.")
    command.string("model_name", "math", "Served model name.")
    train_flags.define_saved_model_flag(command)


def main(args):
    """Trains as ``args`` (:func:`command`'s parsed flags) say. The Keras backend starts
    first; the runner and the task, which import Keras, are imported after it (so
    ``--help`` starts no TensorFlow, and TensorFlow starts quietly). With
    ``--group_multiple`` > 1 oneDNN's primitive cache is sized first: the rounded part
    shapes recur, and its default 1,024 entries do not hold them."""
    if args.group_multiple > 1:
        runtime.size_onednn_cache()
    backend.start(args)
    from train.runner import run
    from train.tasks.math import MathTask

    run(MathTask(args), PROCESS_START)


if __name__ == "__main__":
    cli.run(command, main)
