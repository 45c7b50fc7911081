"""Train and evaluate TPR-RNN on bAbI: ``python -m train.babi --task 1``.

Single-task runs use the paper's Appendix A recipe (Nadam, lr 0.008, β1 0.6,
β2 0.4, batch 128); ``--task all`` uses the all-tasks one (lr 0.001, default
betas, batch 32, larger model). At the end the test error per task is printed
and written with the validation errors and timings to
``<model_dir>/results.json``, and the trained model is saved to
``<export_dir>/model.keras`` with its vocabulary.
"""

import os
import time

PROCESS_START = time.time()

from tpr_keras import runtime

runtime.limit_malloc_arenas()  # before TensorFlow starts its threads

from absl import app, flags, logging  # noqa: E402

from tpr_keras import cli  # noqa: E402
from tpr_keras.training import flags as train_flags  # noqa: E402
from tpr_keras.training.outputs import export_in_tensorflow  # noqa: E402

FLAGS = flags.FLAGS
train_flags.define_flags()  # --strategy, --checkpoint_every_steps, --deterministic

flags.DEFINE_string("task", "1", "bAbI task 1-20, a comma-separated list, or 'all'.")
flags.DEFINE_string("data_dir", None, "Folder holding en-10k/ (or the qa*.txt files); "
                    "default: $TPR_KERAS_BABI_DIR, then the Keras cache, then download.")
flags.DEFINE_bool("download", True, "Download the official archive if no local copy is found.")
flags.DEFINE_enum("setting", "10k", ["10k", "1k"], "Training-set size per task.")
flags.DEFINE_integer("max_story_sentences", None,
                     "Keep the last N sentences of a story (default 70; 130 for task 3).")
flags.DEFINE_string("model_dir", "runs/babi", "Checkpoints, TensorBoard logs, results.json.")
flags.DEFINE_string("export_dir", None, "Where the trained model goes (default <model_dir>/export).")
flags.DEFINE_string("model_name", "babi", "Served model name: the SavedModel goes to "
                    "<export_dir>/<model_name>/<next version>/ (TF Serving's layout).")
flags.DEFINE_enum("model", "tpr_rnn", ["tpr_rnn", "memn2n"],
                  "TPR-RNN (Schlag & Schmidhuber 2018) or the MemN2N baseline "
                  "(Sukhbaatar et al. 2015).")
flags.DEFINE_enum("preset", None, ["single_task", "all_tasks", "all_tasks_code"],
                  "Model size preset (default: single_task, or all_tasks for --task all).")
flags.DEFINE_integer("symbol_dim", None, "Width of V_Symbol (default: vocabulary size).")
flags.DEFINE_integer("hidden_dim", None, "Hidden width of the MLPs.")
flags.DEFINE_integer("entity_dim", None, "Width of V_Entity.")
flags.DEFINE_integer("relation_dim", None, "Width of V_Relation.")
flags.DEFINE_enum("operations", "all", ["write", "write+move", "write+backlink", "all"],
                  "Memory operations (Table 3 ablations).")
flags.DEFINE_integer("inference_steps", 3, "Unbinding steps of the inference module.")
flags.DEFINE_enum("implementation", "parallel", ["parallel", "recurrent"],
                  "TPR-RNN memory: one triangular solve per story (parallel) or the dense "
                  "recurrence over sentences (the reference); same model, same weights.")
flags.DEFINE_integer("hops", 3, "MemN2N: memory hops K.")
flags.DEFINE_integer("embedding_dim", None, "MemN2N: d (default 20 single-task, 50 joint).")
flags.DEFINE_integer("memory_size", 50, "MemN2N: memory slots (the last N sentences).")
flags.DEFINE_enum("sentence_encoding", "position", ["position", "position_code", "bag_of_words"],
                  "MemN2N: the paper's PE, the authors' coded PE, or bag of words.")
flags.DEFINE_enum("weight_tying", "adjacent", ["adjacent", "layer_wise"], "MemN2N tying.")
flags.DEFINE_bool("temporal_encoding", True, "MemN2N: T_A / T_C time embeddings.")
flags.DEFINE_float("random_noise", 0.1, "MemN2N: up to this fraction of empty memories "
                   "inserted at training time (RN); 0 disables.")
flags.DEFINE_bool("linear_start", True, "MemN2N: start without the hop softmax (LS) until "
                  "the validation loss stops falling.")
flags.DEFINE_bool("mask_empty_memories", True, "MemN2N: keep empty slots out of the softmax "
                  "(the original code gave them logit 0).")
flags.DEFINE_enum("optimizer", None, ["nadam", "nesterov_adam", "adam", "sgd"],
                  "Default nadam (TPR-RNN; Keras Nadam after Dozat, as in the paper) or "
                  "sgd (MemN2N). nesterov_adam: the TPR-RNN reference code's TF1 Nadam.")
flags.DEFINE_integer("batch_size", None, "Global batch size (default 128 single-task, 32 all).")
flags.DEFINE_float("learning_rate", None, "Default 0.008 single-task, 0.001 all-tasks.")
flags.DEFINE_float("beta_1", None, "Default 0.6 single-task, 0.9 all-tasks.")
flags.DEFINE_float("beta_2", None, "Default 0.4 single-task, 0.999 all-tasks.")
flags.DEFINE_float("clip_norm", None, "TPR-RNN: global-norm clipping (default 5). MemN2N: "
                   "per-matrix clipping of the mean-loss gradient (default 40/32, the "
                   "paper's 40 on the batch-summed loss). 0 disables.")
flags.DEFINE_integer("decay_every_epochs", None, "Halve the lr every N epochs (MemN2N "
                     "default 25 on one task, 5 jointly; TPR-RNN default never).")
flags.DEFINE_integer("warmup_steps", None, "Steps at learning_rate * warmup_factor "
                     "(TPR-RNN default 50, MemN2N 0).")
flags.DEFINE_float("warmup_factor", 0.1, "Learning-rate factor during warm-up.")
flags.DEFINE_float("halve_lr_below", None, "Halve the lr once when the valid loss drops below "
                   "this (TPR-RNN default 0.1; MemN2N default never).")
flags.DEFINE_integer("epochs", None, "Maximum epochs (default: the recipe's; TPR-RNN 200 "
                     "with early stopping, MemN2N 100 on one task and 20 jointly, §4.2).")
flags.DEFINE_integer("steps", None, "Maximum optimizer steps (overrides --epochs).")
flags.DEFINE_integer("patience", 20, "Early stopping: validations without improvement "
                     "(a lower valid error, or an equal one with a valid loss lower by more "
                     "than --min_delta_loss). The paper's protocol: --patience=20 "
                     "--min_delta_loss=0 --patience_at_zero=-1.")
flags.DEFINE_float("min_delta_loss", 1e-3, "Early stopping: at an equal valid error, the "
                   "valid loss must fall by more than this (absolute, nats per example) to "
                   "count as an improvement; 0 counts any decrease.")
flags.DEFINE_integer("patience_at_zero", 5, "Early stopping once the best valid error is "
                     "0 %: stop after this many validations without improvement (the error "
                     "cannot fall any more); -1 uses --patience throughout.")
flags.DEFINE_bool("benchmark_step", False, "After training, also time the compiled training "
                  "step alone on cached training batches (--benchmark_seconds) and print it "
                  "next to the loop's steady-state examples/s and their ratio.")
flags.DEFINE_float("benchmark_seconds", 10.0, "Duration of --benchmark_step.")
flags.DEFINE_float("target_valid_error", None,
                   "Also stop once the validation error (%) is at or below this.")
flags.DEFINE_integer("bucket_width", 10,
                     "Batch stories of similar length (buckets of N sentences); 0 = off.")
flags.DEFINE_integer("seed", 0, "Seed of initialisation and data order.")

#: ``--help`` groups (the shared ones follow, from ``train_flags.HELP_GROUPS``).
HELP_GROUPS = [
    ("Data", ["task", "data_dir", "download", "setting", "max_story_sentences",
              "bucket_width"]),
    ("Output folders", ["model_dir", "export_dir", "model_name"]),
    ("Model", ["model", "preset", "symbol_dim", "hidden_dim", "entity_dim", "relation_dim",
               "operations", "inference_steps", "implementation"]),
    ("MemN2N (--model memn2n)", ["hops", "embedding_dim", "memory_size",
                                 "sentence_encoding", "weight_tying", "temporal_encoding",
                                 "random_noise", "linear_start", "mask_empty_memories"]),
    ("Optimisation", ["optimizer", "batch_size", "learning_rate", "beta_1", "beta_2",
                      "clip_norm", "warmup_steps", "warmup_factor", "halve_lr_below",
                      "decay_every_epochs", "seed"]),
    ("When to stop", ["epochs", "steps", "patience", "min_delta_loss", "patience_at_zero",
                      "target_valid_error"]),
    ("Benchmark", ["benchmark_step", "benchmark_seconds"]),
]

def parse_tasks(value):
    if value == "all":
        return "all"
    tasks = tuple(int(t) for t in value.split(","))
    bad = [t for t in tasks if not 1 <= t <= 20]
    if bad:
        raise app.UsageError(f"--task must be 1..20, a list of them, or 'all'; got {bad}.")
    return tasks


def leave_linear_start(trainer, history):
    """MemN2N §4.2: "when the validation loss stopped decreasing, the softmax layers
    were re-inserted" (and the lr goes from 0.005 to 0.01, paper scale). The switch is
    a model variable and the lr factor a trainer variable, so both are checkpointed."""
    model = trainer.model
    if not model.linear_start or len(history) < 2:
        return
    if history[-1]["valid_loss"] >= history[-2]["valid_loss"]:
        model.set_linear_start(False)
        trainer.set_lr_factor(1.0)
        print(f"Validation loss stopped falling at epoch {history[-1]['epoch']}: "
              "linear start ends, the hop softmax is back.")


def main(argv):
    del argv
    if FLAGS.verbosity <= 0:  # keep TF's per-checkpoint INFO lines out of the output
        logging.set_verbosity(logging.WARNING)
    on_jax = train_flags.keras_backend() == "jax"
    tf = None if on_jax else cli.import_tensorflow()
    import keras

    from tpr_keras.data import babi
    from tpr_keras.models import TPRRNN, MemN2N
    from tpr_keras.training import (TrainConfig, get_optimizer, make_trainer, save_run,
                                    sparse_classification, training_time_line)

    tasks = parse_tasks(FLAGS.task)
    joint = tasks == "all" or len(tasks) > 1
    memn2n = FLAGS.model == "memn2n"
    model_class = MemN2N if memn2n else TPRRNN
    # The recipe follows the training setting (one task or all jointly), the sizes
    # follow --preset: --preset all_tasks_code on one task keeps the one-task recipe.
    defaults = model_class.preset_recipe("all_tasks" if joint else "single_task")
    hp = {k: getattr(FLAGS, k) if getattr(FLAGS, k) is not None else v
          for k, v in defaults.items()}
    preset = FLAGS.preset or ("all_tasks" if joint else "single_task")
    if memn2n and preset not in MemN2N.presets:
        raise app.UsageError(f"--preset {preset} is a TPR-RNN preset; MemN2N has "
                             f"{sorted(MemN2N.presets)}.")

    strategy, replicas = train_flags.setup_backend(global_batch=hp["batch_size"])
    config = TrainConfig(
        learning_rate=hp["learning_rate"], epochs=hp["epochs"], max_steps=FLAGS.steps,
        clip_norm=None if hp["optimizer"] == "sgd" else hp["clip_norm"] or None,
        warmup_steps=hp["warmup_steps"], decay_every_epochs=hp["decay_every_epochs"],
        warmup_factor=FLAGS.warmup_factor, halve_lr_below=hp["halve_lr_below"],
        patience=FLAGS.patience, min_delta_loss=FLAGS.min_delta_loss,
        patience_at_zero=None if FLAGS.patience_at_zero < 0 else FLAGS.patience_at_zero,
        target_error=FLAGS.target_valid_error, **train_flags.trainer_kwargs())
    if train_flags.report_if_finished(
            config, lambda r: f"test error {r['test_error_percent_mean']:.2f} %"):
        return

    keras.utils.set_random_seed(FLAGS.seed)
    data = babi.load_babi(FLAGS.data_dir, tasks=tasks, setting=FLAGS.setting,
                          max_story_sentences=FLAGS.max_story_sentences,
                          download=FLAGS.download)
    print(data)
    truncated = data.stats.get("truncated", {})
    print(f"Vocabulary {len(data.vocab)} symbols; {data.max_words} words per sentence; "
          f"longest story {data.max_sentences} sentences; truncated samples {truncated}.")

    def model_fn():
        if memn2n:
            return MemN2N.from_preset(
                preset, vocabulary_size=len(data.vocab), max_words=data.max_words,
                embedding_dim=FLAGS.embedding_dim, num_hops=FLAGS.hops,
                memory_size=FLAGS.memory_size, sentence_encoding=FLAGS.sentence_encoding,
                temporal_encoding=FLAGS.temporal_encoding, weight_tying=FLAGS.weight_tying,
                random_noise=FLAGS.random_noise, mask_empty_memories=FLAGS.mask_empty_memories,
                linear_start=FLAGS.linear_start, seed=FLAGS.seed)
        return TPRRNN.from_preset(
            preset, vocabulary_size=len(data.vocab), max_words=data.max_words,
            symbol_dim=FLAGS.symbol_dim, hidden_dim=FLAGS.hidden_dim,
            entity_dim=FLAGS.entity_dim, relation_dim=FLAGS.relation_dim,
            operations=FLAGS.operations, inference_steps=FLAGS.inference_steps,
            implementation=FLAGS.implementation)

    def optimizer_fn():
        if hp["optimizer"] == "sgd":
            # Per-matrix clipping (Keras clipnorm clips each gradient on its own),
            # applied by the Trainer to the all-reduced gradient.
            return keras.optimizers.SGD(hp["learning_rate"], clipnorm=hp["clip_norm"] or None)
        return get_optimizer(hp["optimizer"], hp["learning_rate"], hp["beta_1"], hp["beta_2"])

    trainer = make_trainer(model_fn, optimizer_fn, sparse_classification("answer"), config,
                           FLAGS.model_dir, strategy=strategy)
    trainer.model.summary(print_fn=lambda line, **_: logging.info(line))
    if memn2n and FLAGS.linear_start:
        trainer.set_lr_factor(0.5)  # LS: 0.005 instead of 0.01 (§4.2)
    if memn2n:
        print(f"MemN2N ({preset}, {FLAGS.hops} hops, {FLAGS.sentence_encoding}, "
              f"{FLAGS.weight_tying}, LS={FLAGS.linear_start}, RN={FLAGS.random_noise}): "
              f"{trainer.model.count_params():,} parameters.")
    else:
        print(f"TPR-RNN ({preset}, operations={FLAGS.operations}): "
              f"{trainer.model.count_params():,} parameters.")

    eval_batch = max(hp["batch_size"], 256)
    bucket_width = FLAGS.bucket_width or None
    if on_jax:  # numpy batches of a few fixed shapes: JAX compiles once per shape
        train_batches = babi.NumpyBatches(data.train, hp["batch_size"], shuffle=True,
                                          seed=FLAGS.seed, bucket_width=bucket_width)
        train_fn = train_batches.batches
        valid_ds, test_ds = (babi.NumpyBatches(split, eval_batch, bucket_width=bucket_width)
                             for split in (data.valid, data.test))
    elif trainer.host_only:
        # One pipeline for every epoch, the epoch's order chosen through a variable:
        # building and tracing a pipeline per epoch is a visible share of a short epoch.
        epoch_variable = tf.Variable(0, dtype=tf.int64, trainable=False)
        train_ds = babi.make_dataset(data.train, hp["batch_size"], shuffle=True,
                                     seed=FLAGS.seed, bucket_width=FLAGS.bucket_width or None,
                                     epoch=epoch_variable)

        def train_fn(epoch):
            epoch_variable.assign(epoch)
            return train_ds
    else:  # distributed input is auto-sharded/rebatched: a pipeline per epoch
        def train_fn(epoch):
            return babi.make_dataset(data.train, hp["batch_size"], shuffle=True,
                                     seed=FLAGS.seed * 100_003 + epoch,
                                     bucket_width=FLAGS.bucket_width or None)

    if not on_jax:
        valid_ds = babi.make_dataset(data.valid, eval_batch, shuffle=False,
                                     bucket_width=bucket_width)
        test_ds = babi.make_dataset(data.test, eval_batch, shuffle=False,
                                    bucket_width=bucket_width)
    steps_per_epoch = -(-len(data.train) // hp["batch_size"])

    started = time.time()
    history = trainer.fit(train_fn, valid_ds, steps_per_epoch=steps_per_epoch,
                          after_validation=leave_linear_start if memn2n else None)
    process_train_seconds = time.time() - started
    train_seconds = trainer.train_seconds  # every process of the run (resumes included)
    loop_rate = trainer.train_examples_per_second  # epochs 2+, validation excluded
    step_rate = None
    if FLAGS.benchmark_step:  # the same compiled step, on cached batches of this data
        step_rate = trainer.benchmark_train_step(train_fn(0), seconds=FLAGS.benchmark_seconds)

    valid = trainer.evaluate(valid_ds, group_key="task")
    test = trainer.evaluate(test_ds, group_key="task")
    rows = sorted(test["error_percent_by_group"])
    print("\ntask | valid error % | test error %")
    for task in rows:
        print(f"{task:4d} | {valid['error_percent_by_group'].get(task, float('nan')):13.2f} | "
              f"{test['error_percent_by_group'][task]:11.2f}")
    if len(rows) > 1:
        print(f"mean | {valid['error_percent']:13.2f} | {test['error_percent']:11.2f}"
              f"   (failed tasks > 5%: "
              f"{sum(e > 5 for e in test['error_percent_by_group'].values())})")

    results = {
        "test_error_percent": {str(k): v for k, v in test["error_percent_by_group"].items()},
        "valid_error_percent": {str(k): v for k, v in valid["error_percent_by_group"].items()},
        "test_error_percent_mean": test["error_percent"],
        "train_seconds": train_seconds,
        "process_train_seconds": process_train_seconds,
        "wall_seconds": time.time() - PROCESS_START,
        "epochs": len(history),
        "stopped": trainer.stop_reason,
        "train_examples_per_second": loop_rate,
        "step_examples_per_second": step_rate,
        "steps": trainer.state.value("global_step"),
        "history": history,
        "data": {"train": len(data.train), "valid": len(data.valid), "test": len(data.test),
                 "vocabulary": len(data.vocab), "max_words": data.max_words,
                 "truncated": truncated},
        "config": {"task": FLAGS.task, "model": FLAGS.model, "preset": preset,
                   "operations": FLAGS.operations, "seed": FLAGS.seed,
                   "implementation": FLAGS.implementation,
                   "bucket_width": FLAGS.bucket_width, "setting": FLAGS.setting,
                   "max_story_sentences": {str(t): n for t, n in
                                           data.stats["max_story_sentences"].items()},
                   "backend": keras.backend.backend(),
                   "strategy": type(strategy).__name__ if strategy else None,
                   "replicas": replicas,
                   "parameters": trainer.model.count_params(), **hp},
    }
    if trainer.chief:
        saved = save_run(FLAGS.model_dir, FLAGS.export_dir, results, trainer.model,
                         data.vocab.save)
        export_dir = os.path.dirname(saved)
        print(f"Results: {os.path.join(FLAGS.model_dir, 'results.json')}; model: {saved}")
        limits = set(data.stats["max_story_sentences"].values())
        limit = None if None in limits else max(limits)
        if on_jax:  # the SavedModel is TensorFlow's: written by a TensorFlow process
            served = export_in_tensorflow(saved, export_dir, FLAGS.model_name,
                                          max_story_sentences=limit or 0)
        else:
            # String-in/string-out SavedModel for TF Serving, from the saved file so that
            # no distribution-strategy variables end up in it.
            from tpr_keras.models.babi import export_babi_model

            served = export_babi_model(keras.models.load_model(saved), data.vocab,
                                       export_dir, FLAGS.model_name,
                                       max_story_sentences=limit)
        if served:
            print(f"SavedModel for TF Serving: {served} (serve with python -m "
                  f"serving.server --model_name={FLAGS.model_name} "
                  f"--model_base_path={os.path.abspath(os.path.dirname(served))})")
    if loop_rate is not None:
        line = (f"Training loop: {loop_rate:.0f} examples/s (steady state: epochs after the "
                f"first; validation and end-of-epoch checkpoints excluded)")
        if step_rate is not None:
            line += (f"; compiled step alone on cached batches: {step_rate:.0f} examples/s; "
                     f"loop/step = {loop_rate / step_rate:.2f}")
        print(line + ".")
    print(training_time_line(train_seconds, process_train_seconds,
                             time.time() - PROCESS_START))
    del tf


if __name__ == "__main__":
    cli.run(main, "python -m train.babi", __doc__, HELP_GROUPS + train_flags.HELP_GROUPS,
            presets_task="babi")
