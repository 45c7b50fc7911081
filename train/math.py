"""Train and evaluate the TP-Transformer on the Mathematics Dataset: ``python -m train.math``.

``--preset`` picks the sizes and the training recipe together (``TPTransformer.presets``,
:mod:`tpr_keras.models.tp_transformer`); the default ``auto`` is the paper's
TP-Transformer when a GPU is visible and the ``tiny`` CPU recipe otherwise, and
is printed at start. The paper's recipe (§4.1): Adam (lr 1e-4, β2 0.995),
global-norm clipping at 0.1, no schedule, no dropout, batch 1024, Table 1's
1,000k steps. Every recipe flag given overrides the recipe.

Train = train-easy + train-medium + train-hard of the selected modules;
evaluation by exact match of the whole greedy answer (end symbol included), per
module, on interpolate and extrapolate. The results table (mean accuracy,
modules above 95 %) is printed and written to ``<model_dir>/results.json``; the
model is exported as a string-in/string-out SavedModel to
``<export_dir>/<model_name>/<version>``.
"""

import os
import time

from absl import flags, logging

PROCESS_START = time.time()
from tpr_keras import cli  # noqa: E402
from tpr_keras.training import flags as train_flags  # noqa: E402
from tpr_keras.training.outputs import export_in_tensorflow  # noqa: E402

FLAGS = flags.FLAGS
train_flags.define_flags()  # --strategy, --checkpoint_every_steps, --deterministic

flags.DEFINE_string("modules", "numbers__place_value",
                    "Comma-separated module names or globs (e.g. 'arithmetic__*'), or 'all'.")
flags.DEFINE_string("data_dir", None, "Folder holding train-easy/ ... extrapolate/ "
                    "(default: $TPR_KERAS_MATH_DIR, then the Keras cache, then download).")
flags.DEFINE_bool("download", True, "Download the official archive if nothing local is found.")
flags.DEFINE_enum("model", "tp_transformer", ["tp_transformer", "transformer"],
                  "With or without the role binding of eq. 4 (same code path).")
flags.DEFINE_string("preset", "auto", "Sizes and training recipe: auto (tp_transformer or "
                    "transformer on a GPU, tiny on a CPU), tiny, small (CPU), tp_transformer, "
                    "tp_transformer_b, tp_transformer_c, transformer (paper).")
flags.DEFINE_integer("limit_per_file", None, "Read at most N examples per file (quick runs).")
flags.DEFINE_bool("balance_modules", True, "Train on every module equally often per epoch, as "
                  "in the dataset, whose modules all have the same size, when the local "
                  "modules differ in size (a plain shuffle when they do not).")
flags.DEFINE_string("model_dir", "runs/math", "Checkpoints, TensorBoard logs, results.json.")
flags.DEFINE_string("export_dir", None, "Default <model_dir>/export.")
flags.DEFINE_string("model_name", "math", "Served model name.")
_RECIPE = " Default: the --preset's recipe"
flags.DEFINE_integer("batch_size", None, "Global batch size." + _RECIPE +
                     " (paper 1024, CPU sizes 128).")
flags.DEFINE_float("learning_rate", None, "Adam learning rate." + _RECIPE +
                   " (paper 1e-4, CPU sizes 1e-3).")
flags.DEFINE_float("beta_1", None, "Adam β1." + _RECIPE + " (0.9).")
flags.DEFINE_float("beta_2", None, "Adam β2." + _RECIPE + " (0.995).")
flags.DEFINE_float("clip_norm", None, "Global-norm gradient clipping (0 disables)." + _RECIPE +
                   " (0.1).")
flags.DEFINE_integer("warmup_steps", 0, "Optional warm-up steps at lr * warmup_factor.")
flags.DEFINE_float("warmup_factor", 0.1, "Learning-rate factor during warm-up.")
flags.DEFINE_integer("epochs", None, "Maximum epochs. Given without --steps, it replaces the "
                     "recipe's step budget.")
flags.DEFINE_integer("steps", None, "Maximum optimizer steps." + _RECIPE +
                     " (paper 1,000k, CPU sizes 2,000).")
flags.DEFINE_integer("patience", None, "Early stopping after N validations without improvement.")
flags.DEFINE_integer("eval_batch_size", 256, "Batch size of the greedy evaluation.")
flags.DEFINE_integer("seed", 0, "Seed of initialisation and data order.")

#: ``--help`` groups (the shared ones follow, from ``train_flags.HELP_GROUPS``).
HELP_GROUPS = [
    ("Data", ["modules", "data_dir", "download", "limit_per_file", "balance_modules"]),
    ("Output folders", ["model_dir", "export_dir", "model_name"]),
    ("Model", ["model", "preset"]),
    ("Optimisation", ["batch_size", "learning_rate", "beta_1", "beta_2", "clip_norm",
                      "warmup_steps", "warmup_factor", "seed"]),
    ("When to stop", ["epochs", "steps", "patience"]),
    ("Evaluation", ["eval_batch_size"]),
]


#: Flags whose default is the preset's training recipe (``TPTransformer.preset_recipe``).
RECIPE_FLAGS = ("learning_rate", "beta_1", "beta_2", "clip_norm", "batch_size", "steps", "epochs",
                "max_train_minutes")


def describe_recipe(flag, preset, recipe):
    """The line printed at start: which preset ``--preset flag`` gave, and its recipe."""
    device = ""
    if flag == "auto":
        device = " (a GPU is visible)" if preset in ("tp_transformer", "transformer") else (
            " (no GPU: the CPU recipe; the paper's is --preset tp_transformer)")
    budget = [f"{recipe['steps']:,} steps" if recipe["steps"] else f"{recipe['epochs']} epochs"]
    if recipe.get("max_train_minutes"):
        budget.append(f"at most {recipe['max_train_minutes']:g} min of training")
    return (f"Preset {flag}" + (f" -> {preset}" if flag != preset else "") + device +
            f": Adam lr {recipe['learning_rate']:g}, β {recipe['beta_1']:g}/"
            f"{recipe['beta_2']:g}, clip {recipe['clip_norm']:g}, batch "
            f"{recipe['batch_size']}, " + ", ".join(budget) + ". Flags override each.")


def jax_greedy_accuracy(model, max_length):
    """``batches -> exact match %`` of greedy answers on JAX (whole answer + end symbol,
    as ``tpr_keras.training.evaluation.greedy_scorer``), one ``jax.jit`` decoder for
    every module; the weight-0 filler rows of the batches are left out."""
    import jax
    import numpy as np

    decode = jax.jit(lambda source: model.greedy_decode(source, max_length=max_length)[0])

    def accuracy(batches):
        hits = []
        for features, labels in batches:
            ids = np.asarray(decode(features["source"]))
            target = labels["target_out"][:, :ids.shape[1]]
            target = np.pad(target, ((0, 0), (0, ids.shape[1] - target.shape[1])))
            hits.append((ids == target).all(axis=1)[labels["weight"] > 0])
        return float(100.0 * np.concatenate(hits).mean()) if hits else float("nan")

    return accuracy


def main(argv):
    del argv
    if FLAGS.verbosity <= 0:
        logging.set_verbosity(logging.WARNING)
    on_jax = train_flags.keras_backend() == "jax"
    if not on_jax:
        cli.import_tensorflow()
    import keras

    from tpr_keras.data import mathematics
    from tpr_keras.models.tp_transformer import TPTransformer, resolve_preset, sequence_compute_fn
    from tpr_keras.training import (TrainConfig, get_optimizer, make_trainer, save_run,
                                    training_time_line)

    preset, recipe = resolve_preset(
        FLAGS.preset, use_role=FLAGS.model == "tp_transformer",
        **{k: getattr(FLAGS, k) for k in RECIPE_FLAGS})
    for key, value in recipe.items():
        setattr(FLAGS, key, value)
    print(describe_recipe(FLAGS.preset, preset, recipe))
    strategy, replicas = train_flags.setup_backend(global_batch=FLAGS.batch_size)
    config = TrainConfig(
        learning_rate=FLAGS.learning_rate, epochs=FLAGS.epochs, max_steps=FLAGS.steps,
        clip_norm=FLAGS.clip_norm or None, warmup_steps=FLAGS.warmup_steps,
        warmup_factor=FLAGS.warmup_factor, halve_lr_below=None, patience=FLAGS.patience,
        **train_flags.trainer_kwargs())
    if train_flags.report_if_finished(config, lambda r: "interpolate accuracy {:.2f} %".format(
            r.get("summary", {}).get("interpolate", {}).get("mean", float("nan")))):
        return
    keras.utils.set_random_seed(FLAGS.seed)
    modules = FLAGS.modules if FLAGS.modules == "all" else tuple(FLAGS.modules.split(","))
    data = mathematics.load_mathematics(FLAGS.data_dir, modules=modules,
                                        limit_per_file=FLAGS.limit_per_file,
                                        download=FLAGS.download)
    print(data)

    def model_fn():
        return TPTransformer.from_preset(preset, vocabulary_size=len(data.vocab),
                                         vocabulary=data.vocab.tokens,
                                         use_role=FLAGS.model == "tp_transformer")

    def optimizer_fn():
        return get_optimizer("adam", FLAGS.learning_rate, FLAGS.beta_1, FLAGS.beta_2)

    trainer = make_trainer(model_fn, optimizer_fn, sequence_compute_fn(), config,
                           FLAGS.model_dir, strategy=strategy)
    model = trainer.model
    print(f"{FLAGS.model} ({preset}): {model.count_params():,} parameters.")

    interpolate = mathematics.MathSplit.concatenate(list(data.interpolate.values()),
                                                    data.module_names)
    if on_jax:  # numpy batches of a few fixed shapes: JAX compiles once per shape
        from tpr_keras.data.mathematics.batches import MathBatches

        train_fn = MathBatches(data.train, FLAGS.batch_size, shuffle=True, seed=FLAGS.seed,
                               balance_modules=FLAGS.balance_modules).batches
        valid_ds = MathBatches(interpolate, FLAGS.eval_batch_size)
    else:
        def train_fn(epoch):
            return mathematics.make_dataset(data.train, FLAGS.batch_size, shuffle=True,
                                            seed=FLAGS.seed * 100_003 + epoch,
                                            balance_modules=FLAGS.balance_modules)

        valid_ds = mathematics.make_dataset(interpolate, FLAGS.eval_batch_size)
    started = time.time()
    history = trainer.fit(train_fn, valid_ds,
                          steps_per_epoch=-(-len(data.train) // FLAGS.batch_size))
    process_train_seconds = time.time() - started
    train_seconds = trainer.train_seconds  # every process of the run (resumes included)

    max_length = model.max_decode_length
    if on_jax:
        from tpr_keras.data.mathematics.batches import MathBatches

        score = jax_greedy_accuracy(model, max_length)

        def accuracy(split):
            return score(MathBatches(split, FLAGS.eval_batch_size))
    else:
        from tpr_keras.training.evaluation import greedy_accuracy, greedy_scorer

        scorer = greedy_scorer(model, max_length)

        def accuracy(split):
            return greedy_accuracy(scorer, mathematics.make_dataset(split,
                                                                    FLAGS.eval_batch_size))
    results = {"interpolate_accuracy_percent": {}, "extrapolate_accuracy_percent": {}}
    for regime in ("interpolate", "extrapolate"):
        for module, split in getattr(data, regime).items():
            results[f"{regime}_accuracy_percent"][module] = accuracy(split)
    print("\nregime      | modules | mean accuracy % | modules > 95 %")
    summary = {}
    for regime in ("interpolate", "extrapolate"):
        scores = list(results[f"{regime}_accuracy_percent"].values())
        if scores:
            summary[regime] = {"modules": len(scores), "mean": sum(scores) / len(scores),
                               "above_95": sum(s > 95 for s in scores)}
            print(f"{regime:11s} | {len(scores):7d} | {summary[regime]['mean']:15.2f} | "
                  f"{summary[regime]['above_95']:14d}")
    for regime in ("interpolate", "extrapolate"):
        for module, score in results[f"{regime}_accuracy_percent"].items():
            print(f"  {regime:11s} {module:45s} {score:6.2f}")
    results.update({
        "summary": summary,
        "train_seconds": train_seconds,
        "process_train_seconds": process_train_seconds,
        "wall_seconds": time.time() - PROCESS_START,
        "epochs": len(history),
        "stopped": trainer.stop_reason,
        "steps": trainer.state.value("global_step"),
        "history": history,
        "parameters": model.count_params(),
        "data": data.stats.get("counts", {}) if isinstance(data.stats, dict) else {},
        "config": {k: getattr(FLAGS, k) for k in (
            "modules", "model", "batch_size", "learning_rate", "beta_1", "beta_2",
            "clip_norm", "warmup_steps", "epochs", "steps", "max_train_minutes", "seed",
            "limit_per_file", "balance_modules")}
        | {"preset": preset, "preset_flag": FLAGS.preset, "replicas": replicas,
           "strategy": type(strategy).__name__ if strategy else None,
           "backend": keras.backend.backend()},
    })
    if trainer.chief:
        saved = save_run(FLAGS.model_dir, FLAGS.export_dir, results, model, data.vocab.save)
        if on_jax:  # the SavedModel is TensorFlow's: written by a TensorFlow process
            served = export_in_tensorflow(saved, os.path.dirname(saved), FLAGS.model_name)
        else:
            from tpr_keras.models.tp_transformer import export_math_model

            served = export_math_model(keras.models.load_model(saved), data.vocab,
                                       os.path.dirname(saved), FLAGS.model_name)
        if served:
            print(f"SavedModel for TF Serving: {served}")
    print(training_time_line(train_seconds, process_train_seconds,
                             time.time() - PROCESS_START))


if __name__ == "__main__":
    cli.run(main, "python -m train.math", __doc__, HELP_GROUPS + train_flags.HELP_GROUPS,
            presets_task="math")
