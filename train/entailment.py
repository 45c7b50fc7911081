"""Train and evaluate a TPRU, LSTM or GRU model (plain or BiDAF) on logical entailment:
``python -m train.entailment``.

The architecture (``--arch plain|bidaf``) and the encoder cell (``--cell tpru|lstm|gru``)
name a paper size of :mod:`tpr_keras.models.entailment` (``plain_tpru`` ... ``bidaf_gru``):
its sizes (d = 64, N = 32 roles) and its training recipe
(:mod:`tpr_keras.training.recipes.entailment`), Tang, Smolensky & de Sa (2018)
§5.1 (Adam, lr 0.001 divided by 10 every 30 epochs for up to 90 epochs, batch 64,
gradient clipping, symbolic vocabulary permutation as augmentation), which the flags
below override only when given. ``--recipe`` (default ``auto``) runs that recipe as
published when a GPU is visible and, on a CPU, under a 15-minute training budget with XLA
(``--recipe cpu``: about 72 % validation for TPRU-32 on a 2-core CPU; running the same
command again resumes with a fresh budget; ``--recipe paper`` runs all 90 epochs, about
an hour there). The best model on the validation set is kept. Accuracy
on validate and the five test sets goes to ``<model_dir>/results.json``; the model to
``<export_dir>/model.keras`` and, for TF Serving, ``<export_dir>/<model_name>/<version>/``.
"""

import time

from train import backend, cli
from train import flags as train_flags

PROCESS_START = time.time()
EXAMPLE = "python -m train.entailment --cell tpru --arch plain --model_dir runs/entailment/tpru"


def command():
    """``python -m train.entailment``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.entailment", __doc__, EXAMPLE,
                               presets_task="entailment")
    command.group("Data")
    command.string("data_dir", None, "Folder with train.txt, validate.txt, test_*.txt "
                   "(default: $TPR_KERAS_ENTAILMENT_DIR, then the Keras cache).")
    command.boolean("augment", None, "Symbolic vocabulary permutation of the variables "
                    "(default: the recipe's, on).")
    command.integer("train_limit", None, "Use only the first N training pairs.")
    command.group("Model")
    command.enum("cell", "tpru", ["tpru", "lstm", "gru"], "Recurrent unit of the encoder.")
    command.enum("arch", "plain", ["plain", "bidaf"], "Plain shared encoder or BiDAF (§5.2).")
    command.integer("dim", None, "Hidden size d (also the embedding and MLP width; "
                    "default: the size's, 64).")
    command.integer("roles", None, "Number of TPRU role vectors N (default: the size's, 32).")
    command.enum("pooling", None, ["last", "max"], "Sentence vector (default: last for "
                 "plain as in §5.1, max for bidaf).")
    command.enum("features", "full", ["full", "concat"],
                 "full = [u, v, |u-v|, u*v]; concat = [u, v] (the paper's §5.1 wording).")
    command.enum("embedding_init", None, ["uniform", "normal"],
                 "Character embedding initialisation: uniform = Keras' default, ±0.05; "
                 "normal = N(0, 1), PyTorch's default (default: the size's: normal for "
                 "--arch=bidaf --cell=tpru, else uniform).")
    command.group("Training recipe")
    command.enum("recipe", "auto", ["auto", "cpu", "paper"],
                 "paper: the §5.1 recipe as published (up to 90 epochs, no time limit). "
                 "cpu: the same under a 15-minute training budget, compiled with XLA (a "
                 "useful model in minutes; the same command again resumes with a fresh "
                 "budget). auto: paper when a GPU is visible, else cpu. --epochs or --steps "
                 "lifts the time budget; --max_train_minutes and --[no]jit_compile override.")
    command.integer("batch_size", None, "Global batch size (default: the recipe's, 64).")
    command.float("learning_rate", None, "Adam learning rate (default: the recipe's, 0.001).")
    command.integer("decay_every_epochs", None, "Divide the lr by 10 this often (0 = never; "
                    "default: the recipe's, 30).")
    command.float("clip_norm", None, "Global-norm gradient clipping (0 disables; default: "
                  "the recipe's, 5).")
    command.integer("seed", 0, "Seed of initialisation, data order and augmentation.")
    command.group("When to stop")
    command.integer("epochs", None, "Maximum epochs (default: the recipe's, 90).")
    command.integer("steps", None, "Maximum optimizer steps (overrides --epochs).")
    command.integer("patience", None, "Early stopping after N validations without improvement.")
    command.group("Outputs")
    command.string("model_dir", "runs/entailment", "Checkpoints, logs, results.json.")
    command.string("export_dir", None, "Default <model_dir>/export.")
    command.string("model_name", "entailment", "Served model name: the SavedModel goes to "
                   "<export_dir>/<model_name>/<next version>/.")
    train_flags.define_saved_model_flag(command)
    train_flags.define_flags(command)
    return command


def main(args):
    """Trains as ``args`` (:func:`command`'s parsed flags) say. The Keras backend starts
    first; the runner and the task, which import Keras, are imported after it (so
    ``--help`` starts no TensorFlow, and TensorFlow starts quietly)."""
    backend.start(args)
    from train.runner import run
    from train.tasks.entailment import EntailmentTask

    run(EntailmentTask(args), PROCESS_START)


if __name__ == "__main__":
    cli.run(command, main)
