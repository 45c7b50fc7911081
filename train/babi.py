"""Train and evaluate TPR-RNN, or the MemN2N baseline (``--model memn2n``), on bAbI:
``python -m train.babi --task 1``.

Single-task runs use the paper's Appendix A recipe (Nadam, lr 0.008, β1 0.6,
β2 0.4, batch 128); ``--task all`` uses the all-tasks one (lr 0.001, default
betas, batch 32, larger model). At the end the test error per task is printed
and written with the validation errors and timings to
``<model_dir>/results.json``, and the trained model is saved to
``<export_dir>/model.keras`` with its vocabulary.
"""

import time

#: When the command started: a run's wall time counts from here (the clock, read first).
PROCESS_START = time.time()

from tpr_keras import runtime  # noqa: E402
from train import backend, cli  # noqa: E402
from train import flags as train_flags  # noqa: E402

#: ``--size``: the paper sizes of TPRRNN.paper_sizes and MemN2N.paper_sizes.
SIZES = ("single_task", "all_tasks", "all_tasks_code", "all_tasks_authors", "joint_paper")
EXAMPLE = "python -m train.babi --task 1 --model tpr_rnn --model_dir runs/babi/task1"


def command():
    """``python -m train.babi``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.babi", __doc__, EXAMPLE, sizes=SIZES,
                               presets_task="babi")
    _data_flags(command)
    _model_flags(command)
    _training_flags(command)
    _output_flags(command)
    train_flags.define_flags(command)
    return command


def _data_flags(command):
    """The ``Data`` flags: which tasks, where their files are, how stories are read."""
    command.group("Data")
    command.string("task", "1", "bAbI task 1-20, a comma-separated list, or 'all'.")
    command.string("data_dir", None, "Folder holding en-10k/ (or the qa*.txt files); "
                   "default: $TPR_KERAS_BABI_DIR, then the Keras cache, then download.")
    command.boolean("download", True, "Download the official archive if no local copy is found.")
    command.enum("setting", "10k", ["10k", "1k"], "Training-set size per task.")
    command.integer("max_story_sentences", None,
                    "Keep the last N sentences of a story (default 70; 130 for task 3; "
                    "MemN2N joint_paper 50, what its memory holds).")
    command.boolean("keep_sentence_ends", None, "'. ? !' are tokens of their own (default: "
                    "the recipe's; on, but MemN2N joint_paper drops them as its authors' "
                    "parser does). The export and preset read text the same way.")
    command.integer("bucket_width", None,
                    "Batch stories of similar length (buckets of N sentences); 0 = off. "
                    "Default 10 (MemN2N joint_paper: 0, uniform batches as the authors').")


def _model_flags(command):
    """The ``Model`` and ``MemN2N`` flags: which model, its size and options (a flat list, one call per flag, as ``--help`` shows them)."""
    command.group("Model")
    command.enum("model", "tpr_rnn", ["tpr_rnn", "memn2n"],
                 "TPR-RNN (Schlag & Schmidhuber 2018) or the MemN2N baseline "
                 "(Sukhbaatar et al. 2015).")
    command.enum("size", None, SIZES,
                 "Paper size of the untrained model (TPRRNN.paper_sizes / MemN2N.paper_sizes;"
                 " default: single_task, or all_tasks for --task all); recorded commands' "
                 "--preset SIZE is read as --size SIZE. MemN2N joint_paper: the authors' joint "
                 "protocol, recipe included (docs/training.md).")
    command.integer("symbol_dim", None, "Width of V_Symbol (default: vocabulary size).")
    command.integer("hidden_dim", None, "Hidden width of the MLPs.")
    command.integer("entity_dim", None, "Width of V_Entity.")
    command.integer("relation_dim", None, "Width of V_Relation.")
    command.enum("operations", "all", ["write", "write+move", "write+backlink", "all"],
                 "Memory operations (Table 3 ablations).")
    command.integer("inference_steps", 3, "Unbinding steps of the inference module.")
    command.enum("implementation", "parallel", ["parallel", "recurrent"],
                 "TPR-RNN memory: one triangular solve per story (parallel) or the dense "
                 "recurrence over sentences (the reference); same model, same weights.")
    command.enum("pad_row", None, ["zero", "trained"],
                 "TPR-RNN: the pad word's embedding row: zero (reads as zeros, no gradient) "
                 "or trained (the authors' code). Default: the recipe's (zero; "
                 "authors_code: trained).")
    command.group("MemN2N (--model memn2n)")
    command.integer("hops", 3, "MemN2N: memory hops K.")
    command.integer("embedding_dim", None, "MemN2N: d (default 20 single-task, 50 joint).")
    command.integer("memory_size", 50, "MemN2N: memory slots (the last N sentences).")
    command.enum("sentence_encoding", None, ["position", "position_code", "bag_of_words"],
                 "MemN2N: the paper's PE, the authors' coded PE, or bag of words (default: "
                 "the preset's; position, joint_paper position_code).")
    command.enum("weight_tying", "adjacent", ["adjacent", "layer_wise"], "MemN2N tying.")
    command.boolean("temporal_encoding", True, "MemN2N: T_A / T_C time embeddings.")
    command.float("random_noise", 0.1, "MemN2N: up to this fraction of empty memories "
                  "inserted at training time (RN); 0 disables.")
    command.boolean("linear_start", True, "MemN2N: start without the hop softmax (LS) until "
                    "the validation loss stops falling (or for --linear_start_epochs).")
    command.integer("linear_start_epochs", None, "MemN2N: LS lasts exactly N epochs, then "
                    "the lr schedule restarts from its first epoch (the authors' joint "
                    "code: 30). Default: the recipe's (joint_paper 30; else until the "
                    "validation loss stops falling).")
    command.boolean("mask_empty_memories", None, "MemN2N: keep empty slots out of the softmax "
                    "(the original code gave them logit 0). Default: the preset's (on; "
                    "joint_paper off).")
    command.boolean("pad_gradient", None, "MemN2N: the pad word's (zero) row gets gradient, "
                    "counted by per-matrix clipping, as the authors' nil word (default: the "
                    "preset's; joint_paper on).")
    command.boolean("answer_time_words", None, "MemN2N: the answer softmax also spans the "
                    "memory's time words, as the authors' code (default: the recipe's; "
                    "off, authors_code on).")


def _training_flags(command):
    """The ``Training recipe`` and ``When to stop`` flags (a flat list, one call per flag)."""
    command.group("Training recipe")
    command.enum("recipe", "size", ["size", "authors_code"], "size: the paper's recipe of "
                 "the setting (or the --size's protocol). authors_code: the authors' "
                 "released training step (TPR-RNN: their Nadam with its random start, "
                 "batch 32, a trained pad word, 70 statements, no buckets; MemN2N: the "
                 "joint_paper protocol with their model options; docs/training.md); "
                 "recipe flags given still override it.")
    command.enum("beta_power_start", None, ["beta", "glorot_uniform"],
                 "nesterov_adam: the first step's beta powers: beta (Adam's) or "
                 "glorot_uniform (random draws, as the authors' TPR-RNN code starts them). "
                 "Default: the recipe's (beta; authors_code: glorot_uniform).")
    command.enum("optimizer", None, ["nadam", "nesterov_adam", "adam", "sgd"],
                 "Default nadam (TPR-RNN; Keras Nadam after Dozat, as in the paper) or "
                 "sgd (MemN2N). nesterov_adam: the TPR-RNN reference code's TF1 Nadam.")
    command.integer("batch_size", None, "Global batch size (default 128 single-task, 32 all).")
    command.float("learning_rate", None, "Default 0.008 single-task, 0.001 all-tasks.")
    command.float("beta_1", None, "Default 0.6 single-task, 0.9 all-tasks.")
    command.float("beta_2", None, "Default 0.4 single-task, 0.999 all-tasks.")
    command.float("clip_norm", None, "TPR-RNN: global-norm clipping (default 5). MemN2N: "
                  "per-matrix clipping of the mean-loss gradient (default 40/32, the "
                  "paper's 40 on the batch-summed loss). 0 disables.")
    command.integer("warmup_steps", None, "Steps at learning_rate * warmup_factor "
                    "(TPR-RNN default 50, MemN2N 0).")
    command.float("warmup_factor", 0.1, "Learning-rate factor during warm-up.")
    command.float("halve_lr_below", None, "Halve the lr once when the valid loss drops below "
                  "this (TPR-RNN default 0.1; MemN2N default never).")
    command.integer("decay_every_epochs", None, "Halve the lr every N epochs (MemN2N "
                    "default 25 on one task, 5 jointly; TPR-RNN default never).")
    command.integer("seed", 0, "Seed of initialisation and data order.")
    command.group("When to stop")
    command.integer("epochs", None, "Maximum epochs (default: the recipe's; TPR-RNN 200 "
                    "with early stopping, MemN2N 100 on one task and 20 jointly, §4.2; "
                    "joint_paper 50: 30 of linear start, then 20).")
    command.integer("steps", None, "Maximum optimizer steps (overrides --epochs).")
    command.integer("patience", 20, "Early stopping: validations without improvement "
                    "(a lower valid error, or an equal one with a valid loss lower by more "
                    "than --min_delta_loss). The paper's protocol: --patience=20 "
                    "--min_delta_loss=0 --patience_at_zero=-1.")
    command.float("min_delta_loss", 1e-3, "Early stopping: at an equal valid error, the "
                  "valid loss must fall by more than this (absolute, nats per example) to "
                  "count as an improvement; 0 counts any decrease.")
    command.integer("patience_at_zero", 5, "Early stopping once the best valid error is "
                    "0 %: stop after this many validations without improvement (the error "
                    "cannot fall any more); -1 uses --patience throughout.")
    command.float("target_valid_error", None,
                  "Also stop once the validation error (%) is at or below this.")


def _output_flags(command):
    """The ``Outputs`` and ``Benchmark`` flags."""
    command.group("Outputs")
    command.string("model_dir", "runs/babi", "Checkpoints, TensorBoard logs, results.json.")
    command.string("export_dir", None, "Where the trained model goes (default <model_dir>/export).")
    command.string("model_name", "babi", "Served model name: the SavedModel goes to "
                   "<export_dir>/<model_name>/<next version>/ (TF Serving's layout).")
    train_flags.define_saved_model_flag(command)
    command.group("Benchmark")
    command.boolean("benchmark_step", False, "After training, also time the compiled training "
                    "step alone on cached training batches (--benchmark_seconds) and print it "
                    "next to the loop's steady-state examples/s and their ratio.")
    command.float("benchmark_seconds", 10.0, "Duration of --benchmark_step.")


def main(args):
    """Trains as ``args`` (:func:`command`'s parsed flags) say. The Keras backend starts
    first; the runner and the task, which import Keras, are imported after it (so
    ``--help`` starts no TensorFlow, and TensorFlow starts quietly)."""
    runtime.limit_malloc_arenas()  # before TensorFlow starts its threads
    backend.start(args)
    from train.runner import run
    from train.tasks.babi import BabiTask

    run(BabiTask(args), PROCESS_START)


if __name__ == "__main__":
    cli.run(command, main)
