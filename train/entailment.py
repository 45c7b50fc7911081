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

from absl import flags

from train import cli
from train import flags as train_flags

PROCESS_START = time.time()
FLAGS = flags.FLAGS
train_flags.define_flags()  # --strategy, --checkpoint_every_steps, --deterministic

flags.DEFINE_string("data_dir", None, "Folder with train.txt, validate.txt, test_*.txt "
                    "(default: $TPR_KERAS_ENTAILMENT_DIR, then the Keras cache).")
flags.DEFINE_enum("cell", "tpru", ["tpru", "lstm", "gru"], "Recurrent unit of the encoder.")
flags.DEFINE_enum("recipe", "auto", ["auto", "cpu", "paper"],
                  "paper: the §5.1 recipe as published (up to 90 epochs, no time limit). "
                  "cpu: the same under a 15-minute training budget, compiled with XLA (a "
                  "useful model in minutes; the same command again resumes with a fresh "
                  "budget). auto: paper when a GPU is visible, else cpu. --epochs or --steps "
                  "lifts the time budget; --max_train_minutes and --[no]jit_compile override.")
flags.DEFINE_enum("arch", "plain", ["plain", "bidaf"], "Plain shared encoder or BiDAF (§5.2).")
flags.DEFINE_integer("dim", None, "Hidden size d (also the embedding and MLP width; "
                     "default: the size's, 64).")
flags.DEFINE_integer("roles", None, "Number of TPRU role vectors N (default: the size's, 32).")
flags.DEFINE_enum("pooling", None, ["last", "max"], "Sentence vector (default: last for "
                  "plain as in §5.1, max for bidaf).")
flags.DEFINE_enum("features", "full", ["full", "concat"],
                  "full = [u, v, |u-v|, u*v]; concat = [u, v] (the paper's §5.1 wording).")
flags.DEFINE_enum("embedding_init", None, ["uniform", "normal"],
                  "Character embedding initialisation: uniform = Keras' default, ±0.05; "
                  "normal = N(0, 1), PyTorch's default (default: the size's: normal for "
                  "--arch=bidaf --cell=tpru, else uniform).")
flags.DEFINE_bool("augment", None, "Symbolic vocabulary permutation of the variables "
                  "(default: the recipe's, on).")
flags.DEFINE_integer("train_limit", None, "Use only the first N training pairs.")
flags.DEFINE_string("model_dir", "runs/entailment", "Checkpoints, logs, results.json.")
flags.DEFINE_string("export_dir", None, "Default <model_dir>/export.")
flags.DEFINE_string("model_name", "entailment", "Served model name: the SavedModel goes to "
                    "<export_dir>/<model_name>/<next version>/.")
flags.DEFINE_integer("batch_size", None, "Global batch size (default: the recipe's, 64).")
flags.DEFINE_float("learning_rate", None, "Adam learning rate (default: the recipe's, 0.001).")
flags.DEFINE_integer("epochs", None, "Maximum epochs (default: the recipe's, 90).")
flags.DEFINE_integer("steps", None, "Maximum optimizer steps (overrides --epochs).")
flags.DEFINE_integer("decay_every_epochs", None, "Divide the lr by 10 this often (0 = never; "
                     "default: the recipe's, 30).")
flags.DEFINE_float("clip_norm", None, "Global-norm gradient clipping (0 disables; default: "
                   "the recipe's, 5).")
flags.DEFINE_integer("patience", None, "Early stopping after N validations without improvement.")
flags.DEFINE_integer("seed", 0, "Seed of initialisation, data order and augmentation.")

#: ``--help`` groups (the shared ones follow, from ``train_flags.HELP_GROUPS``).
HELP_GROUPS = [
    ("Data", ["data_dir", "augment", "train_limit"]),
    ("Output folders", ["model_dir", "export_dir", "model_name"]),
    ("Model", ["cell", "arch", "dim", "roles", "pooling", "features", "embedding_init"]),
    ("Optimisation", ["batch_size", "learning_rate", "decay_every_epochs", "clip_norm",
                      "seed"]),
    ("When to stop", ["recipe", "epochs", "steps", "patience"]),
]


def main(argv):
    del argv
    from train.runner import run
    from train.tasks.entailment import EntailmentTask

    run(EntailmentTask(FLAGS), PROCESS_START)


if __name__ == "__main__":
    cli.run(main, "python -m train.entailment", __doc__,
            HELP_GROUPS + train_flags.HELP_GROUPS, presets_task="entailment")
