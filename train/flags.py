"""The flags every ``train.*`` training command shares, and the trainer settings they make.

Each command adds them to its own :class:`~serving.command_flags.Command` with
:func:`define_flags`; :func:`train.runner.run` hands them to
:func:`train.backend.setup_backend` first and to the trainer through
:func:`trainer_kwargs`, so ``--strategy``, checkpoint frequency and determinism behave the
same for every model:

    from train import cli
    from train import flags as train_flags

    def command():
        command = cli.TrainCommand("python -m train.example", __doc__, "...")
        command.group("Data")
        ...
        train_flags.define_flags(command)
        return command

    def main(args):
        strategy, replicas = backend.setup_backend(args, global_batch=128)
        ...
        config = TrainConfig(..., **train_flags.trainer_kwargs(args))

``args`` is what :meth:`Command.parse` returns (the flags as attributes, ``given`` the
names the command line set). Importing this module does not import TensorFlow (``--help``
stays fast).
"""

import sys

from tpr_keras.training.distribute import STRATEGIES

#: The titles of the shared flags' ``--help`` groups.
RUN_GROUP = "Run control: distribution, checkpoints, time budget (every train.* command)"
OUTPUT_GROUP = "Terminal output (every train.* command)"


def define_flags(command):
    """Adds the shared flags to ``command`` (a :class:`~serving.command_flags.Command`),
    in two ``--help`` groups of their own."""
    command.group(RUN_GROUP)
    command.enum(
        "strategy", "auto", list(STRATEGIES),
        "tf.distribute strategy. auto: multi_worker when TF_CONFIG names a cluster, "
        "else all local GPUs (mirrored), else the CPU. mirrored: all local GPUs. "
        "multi_worker: MultiWorkerMirroredStrategy, reads TF_CONFIG. one_device: one GPU "
        "or the CPU.")
    command.integer(
        "checkpoint_every_steps", None,
        "Also checkpoint every N optimizer steps inside an epoch (a checkpoint is always "
        "written at the end of an epoch). A restarted run resumes from the latest one.")
    command.float(
        "max_train_minutes", None,
        "Time budget for training in this run: stop at the first step past it, keep the "
        "best-validation weights, evaluate and export. Running the same command again "
        "resumes from the checkpoint with a fresh budget.")
    command.string(
        "sitting_dir", None,
        "A folder, committed with the code, that carries the run across machines: when "
        "this process stops (--max_train_minutes, or the end), the latest checkpoint, the "
        "best weights and the epoch records are packed into it with a record of this "
        "sitting; the same command on a fresh clone, whose --model_dir is empty, resumes "
        "from it (train/sittings.py).")
    command.boolean(
        "deterministic", False,
        "tf.config.experimental.enable_op_determinism(): bit-identical reruns and resumes "
        "with the same --seed, at some speed cost (most on GPU).")
    command.boolean(
        "jit_compile", False,
        "Compile the training step with XLA: it fuses the step's small ops, which speeds up "
        "small recurrent models on a CPU most; every new batch shape is compiled once. "
        "Default: on where a GPU is, else off.")
    command.string(
        "jax_cache_dir", None,
        "On JAX: the folder of JAX's persistent compilation cache, where the compiled "
        "training and evaluation steps are kept, so that a resumed or repeated run on the "
        "same machine does not compile them again (each batch shape's step compiles once; "
        "on an H200 the small TP-Transformer's took 20-30 s each, results/gpu.md). "
        "Default: $JAX_COMPILATION_CACHE_DIR, else ~/.cache/tpr_keras/jax; none: off. "
        "TensorFlow ignores it.")
    command.integer(
        "steps_per_execution", 8,
        "Training steps per compiled call (Keras' option of that name): the loop's Python "
        "work and host transfers happen once per call. The progress, TensorBoard scalars "
        "and the time budget then act once per call; the steps and their losses, the "
        "warm-up, --steps and --checkpoint_every_steps stay exact. 1: a call per step.",
        lower_bound=1)
    command.enum(
        "dtype_policy", "float32", ["float32", "mixed_bfloat16", "mixed_float16"],
        "Keras dtype policy of the model. mixed_*: matrix products in bfloat16/float16 "
        "with float32 variables; the TPR memory, TPRU's recurrence, MemN2N's hops, softmax, "
        "layer norms and losses stay float32. mixed_float16 scales the loss dynamically. "
        "Meant for GPUs; on a CPU it rarely helps (results/backends.md).")
    command.group(OUTPUT_GROUP)
    command.enum(
        "verbose", "auto", ["auto", "0", "1", "2"],
        "auto: a progress bar when stdout is a terminal, else 2. 0: silent; 1: progress "
        "bar; 2: plain lines (one per epoch, and one per minute inside long epochs), "
        "each with examples/s and the time left; made for log files.")
    command.boolean(
        "debug", False,
        "Show the full traceback when the command fails (also TPR_KERAS_DEBUG=1); "
        "otherwise an error is one message.")
    command.boolean(
        "tf_logs", False,
        "Keep TensorFlow's start-up and INFO/WARNING logging (also TPR_KERAS_TF_LOGS=1); "
        "by default TF_CPP_MIN_LOG_LEVEL=2 unless you set it, and CUDA probing on a "
        "machine without a GPU is not shown.")
    command.boolean(
        "list_presets", False,
        "Print the trained presets this command's task ships (name, model, recorded "
        "scores) and its paper sizes, then exit without starting TensorFlow.")


def define_saved_model_flag(command):
    """Adds ``--[no]saved_model`` to ``command``'s current group (each training command's
    ``Outputs``, beside ``--export_dir`` and ``--model_name``)."""
    command.boolean(
        "saved_model", True,
        "Write the TF Serving SavedModel <export_dir>/<model_name>/<version>/ at the end "
        "of the run (and on a rerun of a finished run that lacks it). Off: none is "
        "written and results.json names none; model.keras and vocab.txt still are, and "
        "python -m train.export --keras_model <export_dir>/model.keras --export_dir "
        "<export_dir> --model_name <model_name> writes it later (the run prints the "
        "command with the run's own options).")


def verbose_level(value, stream=None):
    """``--verbose`` as 0, 1 or 2: ``auto`` is 1 (progress bar) on a terminal, else 2."""
    if str(value) != "auto":
        return int(value)
    stream = sys.stdout if stream is None else stream
    try:
        return 1 if stream.isatty() else 2
    except (AttributeError, ValueError):
        return 2


def trainer_kwargs(args):
    """The :class:`~tpr_keras.training.TrainConfig` fields these flags set."""
    minutes = args.max_train_minutes
    return {"checkpoint_every_steps": args.checkpoint_every_steps or None,
            "max_train_seconds": minutes * 60 if minutes else None,
            "verbose": verbose_level(args.verbose),
            "jit_compile": args.jit_compile,
            "steps_per_execution": args.steps_per_execution}
