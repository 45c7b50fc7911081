"""Train and evaluate a recurrent encoder on logical entailment: ``python -m train.entailment``.

The architecture (``--arch plain|bidaf``) and the encoder cell (``--cell tpru|lstm|gru``)
name a preset of :mod:`tpr_keras.models.entailment` (``plain_tpru`` ... ``bidaf_gru``):
its sizes (d = 64, N = 32 roles) and its training recipe, Tang, Smolensky & de Sa (2018)
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

import os
import time

from absl import flags, logging

from tpr_keras import cli
from tpr_keras.training import flags as train_flags
from tpr_keras.training.outputs import export_in_tensorflow

PROCESS_START = time.time()
FLAGS = flags.FLAGS
train_flags.define_flags()  # --strategy, --checkpoint_every_steps, --deterministic
#: Flags that override the preset's training recipe when given.
RECIPE_FLAGS = ("batch_size", "learning_rate", "epochs", "decay_every_epochs", "clip_norm",
                "augment")

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
                     "default: the preset's, 64).")
flags.DEFINE_integer("roles", None, "Number of TPRU role vectors N (default: the preset's, 32).")
flags.DEFINE_enum("pooling", None, ["last", "max"], "Sentence vector (default: last for "
                  "plain as in §5.1, max for bidaf).")
flags.DEFINE_enum("features", "full", ["full", "concat"],
                  "full = [u, v, |u-v|, u*v]; concat = [u, v] (the paper's §5.1 wording).")
flags.DEFINE_enum("embedding_init", None, ["uniform", "normal"],
                  "Character embedding initialisation: uniform = Keras' default, ±0.05; "
                  "normal = N(0, 1), PyTorch's default (default: the preset's: normal for "
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


def describe_recipe(flag, recipe, hp, limits):
    """The line printed at start: which recipe ``--recipe flag`` gave, and its limits."""
    note = ""
    if flag == "auto":
        note = (" (a GPU is visible)" if recipe == "paper" else
                " (no GPU: a time budget; all 90 epochs with --recipe paper)")
    budget = [f"up to {hp['epochs']} epochs"]
    if limits["max_train_minutes"]:
        budget.append(f"at most {limits['max_train_minutes']:g} min of training")
    return (f"Recipe {flag}" + (f" -> {recipe}" if flag != recipe else "") + note + ": Adam lr "
            f"{hp['learning_rate']:g}, batch {hp['batch_size']}, " + ", ".join(budget)
            + (", XLA" if limits["jit_compile"] else "") + ".")


def main(argv):
    del argv
    if FLAGS.verbosity <= 0:
        logging.set_verbosity(logging.WARNING)
    on_jax = train_flags.keras_backend() == "jax"
    if not on_jax:
        cli.import_tensorflow()
    import keras

    from tpr_keras.data import entailment
    from tpr_keras.models import BiDAFEntailmentModel, PlainEntailmentModel
    from tpr_keras.models.entailment import resolve_recipe
    from tpr_keras.training import (TrainConfig, binary_classification, get_optimizer,
                                    make_trainer, save_run, training_time_line)
    from tpr_keras.training.evaluation import ENTAILMENT_SPLITS

    model_class = PlainEntailmentModel if FLAGS.arch == "plain" else BiDAFEntailmentModel
    preset = f"{FLAGS.arch}_{FLAGS.cell}"
    hp = model_class.preset_recipe(preset)  # §5.1; the recipe flags override it when given
    hp.update({k: getattr(FLAGS, k) for k in RECIPE_FLAGS if getattr(FLAGS, k) is not None})
    recipe, limits = resolve_recipe(
        FLAGS.recipe, max_train_minutes=FLAGS.max_train_minutes,
        jit_compile=FLAGS.jit_compile if FLAGS["jit_compile"].present else None,
        budget_given=FLAGS.epochs is not None or FLAGS.steps is not None)
    FLAGS.max_train_minutes, FLAGS.jit_compile = limits["max_train_minutes"], limits["jit_compile"]
    print(describe_recipe(FLAGS.recipe, recipe, hp, limits))
    strategy, replicas = train_flags.setup_backend(global_batch=hp["batch_size"])
    config = TrainConfig(
        learning_rate=hp["learning_rate"], epochs=hp["epochs"], max_steps=FLAGS.steps,
        clip_norm=hp["clip_norm"] or None, warmup_steps=0, halve_lr_below=None,
        decay_every_epochs=hp["decay_every_epochs"] or None, decay_factor=hp["decay_factor"],
        patience=FLAGS.patience, **train_flags.trainer_kwargs())
    if train_flags.report_if_finished(config, lambda r: "validate accuracy {:.1f} %".format(
            r.get("accuracy_percent", {}).get("validate", float("nan")))):
        return
    keras.utils.set_random_seed(FLAGS.seed)

    train = entailment.load_entailment_split("train", FLAGS.data_dir)
    if FLAGS.train_limit:
        train = entailment.EntailmentData(
            train.a[:FLAGS.train_limit], train.b[:FLAGS.train_limit],
            train.labels[:FLAGS.train_limit], train.heuristics[:FLAGS.train_limit])
    evals = {split: entailment.load_entailment_split(split, FLAGS.data_dir)
             for split in ENTAILMENT_SPLITS}
    print(f"train {len(train.labels):,} pairs; " + ", ".join(
        f"{k} {len(v.labels):,}" for k, v in evals.items()))

    def model_fn():
        return model_class.from_preset(preset, units=FLAGS.dim, num_roles=FLAGS.roles,
                                       pooling=FLAGS.pooling, features=FLAGS.features,
                                       embedding_init=FLAGS.embedding_init, seed=FLAGS.seed)

    def optimizer_fn():
        return get_optimizer(hp["optimizer"], hp["learning_rate"])

    trainer = make_trainer(model_fn, optimizer_fn,
                           binary_classification("label" if on_jax else None), config,
                           FLAGS.model_dir, strategy=strategy)
    model = trainer.model
    params = model.count_params()
    trainable = sum(int(w.numpy().size) for w in model.trainable_weights)
    print(f"{FLAGS.arch} {FLAGS.cell} d={model.units}"
          + (f" N={model.num_roles}" if FLAGS.cell == "tpru" else "")
          + f": {params:,} parameters ({trainable:,} trainable).")

    # Under XLA each new batch shape is a new compilation of the training step (train.txt's
    # batches of 64 come in about 20 shapes per epoch, 20-60 s each on a 2-core CPU, paid again
    # by every resumed process). One shape, the longest training proposition (41 symbols),
    # costs about 2 % more recurrent steps than padding each batch to its own longest (40.2
    # on average). Masks make the two paddings give the same outputs.
    pad_to = "longest" if config.jit_compile else None

    if on_jax:  # numpy batches of a few fixed shapes: JAX compiles once per shape
        from tpr_keras.data.entailment_batches import EntailmentBatches

        train_fn = EntailmentBatches(train, hp["batch_size"], shuffle=True,
                                     augment=hp["augment"], seed=FLAGS.seed).batches
        eval_ds = {k: EntailmentBatches(v, 256) for k, v in evals.items()}
    else:
        def train_fn(epoch):
            return entailment.make_dataset(train, hp["batch_size"], shuffle=True,
                                           augment=hp["augment"], pad_to=pad_to,
                                           seed=FLAGS.seed * 100_003 + epoch)

        eval_ds = {k: entailment.make_dataset(v, 256) for k, v in evals.items()}
    started = time.time()
    history = trainer.fit(train_fn, eval_ds["validate"],
                          steps_per_epoch=-(-len(train.labels) // hp["batch_size"]))
    process_train_seconds = time.time() - started
    train_seconds = trainer.train_seconds  # every process of the run (resumes included)
    accuracy = {k: 100.0 - trainer.evaluate(ds)["error_percent"] for k, ds in eval_ds.items()}
    print("\n" + " | ".join(f"{k} {v:.1f}" for k, v in accuracy.items()))
    results = {
        "accuracy_percent": accuracy,
        "parameters": params,
        "trainable_parameters": trainable,
        "train_seconds": train_seconds,
        "process_train_seconds": process_train_seconds,
        "wall_seconds": time.time() - PROCESS_START,
        "epochs": len(history),
        "stopped": trainer.stop_reason,
        "steps": trainer.state.value("global_step"),
        "history": history,
        "config": {k: getattr(FLAGS, k) for k in (
            "cell", "arch", "features", "train_limit", "steps", "seed")} | hp | limits | {
            "recipe": recipe,
            "preset": preset, "dim": model.units, "roles": model.num_roles,
            "pooling": model.pooling, "replicas": replicas,
            "backend": keras.backend.backend()},
    }
    if trainer.chief:
        saved = save_run(FLAGS.model_dir, FLAGS.export_dir, results, trainer.model,
                         entailment.save_vocabulary)
        if on_jax:  # the SavedModel is TensorFlow's: written by a TensorFlow process
            served = export_in_tensorflow(saved, os.path.dirname(saved), FLAGS.model_name)
        else:
            from tpr_keras.models.entailment import export_entailment_model

            served = export_entailment_model(
                keras.models.load_model(saved), os.path.dirname(saved), FLAGS.model_name)
        if served:
            print(f"SavedModel for TF Serving: {served}")
    print(training_time_line(train_seconds, process_train_seconds,
                             time.time() - PROCESS_START))


if __name__ == "__main__":
    cli.run(main, "python -m train.entailment", __doc__,
            HELP_GROUPS + train_flags.HELP_GROUPS, presets_task="entailment")
