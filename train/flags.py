"""The flags every ``train.*`` training command shares, and the set-up they drive.

Each command adds them to its own :class:`~serving.command_flags.Command` with
:func:`define_flags` and calls :func:`setup_backend` first thing in ``main``, so
``--strategy``, checkpoint frequency and determinism behave the same for every model:

    from train import cli
    from train import flags as train_flags

    def command():
        command = cli.TrainCommand("python -m train.example", __doc__, "...")
        command.group("Data")
        ...
        train_flags.define_flags(command)
        return command

    def main(args):
        strategy, replicas = train_flags.setup_backend(args, global_batch=128)
        ...
        config = TrainConfig(..., **train_flags.trainer_kwargs(args))

``args`` is what :meth:`Command.parse` returns (the flags as attributes, ``given`` the
names the command line set). ``setup`` must run before anything touches TensorFlow
devices: ``MultiWorkerMirroredStrategy`` can only be created at program start-up.
Importing this module does not import TensorFlow (``--help`` stays fast).
"""

import sys

from absl import logging

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


def verbose_level(value, stream=None):
    """``--verbose`` as 0, 1 or 2: ``auto`` is 1 (progress bar) on a terminal, else 2."""
    if str(value) != "auto":
        return int(value)
    stream = sys.stdout if stream is None else stream
    try:
        return 1 if stream.isatty() else 2
    except (AttributeError, ValueError):
        return 2


def setup(args, global_batch):
    """Determinism, the strategy, and the global/per-replica batch; returns the strategy.

    Raises :class:`train.cli.UsageError` when ``global_batch`` does not split evenly over
    the replicas. The split is printed and logged on every worker.
    """
    from train import cli
    from tpr_keras.training.distribute import make_strategy

    tf = cli.import_tensorflow(args)  # quietly: no CUDA probing noise on CPU-only machines
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()
    apply_dtype_policy(args)
    args.jit_compile = xla_default(args.jit_compile, "jit_compile" in args.given,
                                   tf.config.list_physical_devices("GPU"))
    strategy = make_strategy(args.strategy)
    replicas = strategy.num_replicas_in_sync
    if global_batch % replicas:
        raise cli.UsageError(
            f"--batch_size {global_batch} is the global batch; it is not divisible by "
            f"{replicas} replicas.")
    resolver = getattr(strategy, "cluster_resolver", None)
    task = ""
    if resolver is not None and resolver.cluster_spec().as_dict():
        task = f" (this is {resolver.task_type} {resolver.task_id})"
    line = (f"Strategy {type(strategy).__name__}: {replicas} replica(s){task}; global batch "
            f"{global_batch} = {global_batch // replicas} per replica.")
    logging.info(line)
    print(line)
    return strategy


def setup_jax(args, global_batch):
    """The JAX counterpart of :func:`setup`: checks the flags that only TensorFlow has.

    ``--strategy`` picks a ``tf.distribute`` strategy, which does not exist on JAX: any
    value but ``auto`` is a usage error that says so. One JAX device trains; the
    step is always compiled (``--jit_compile`` changes nothing).
    """
    from train.cli import UsageError

    if args.strategy != "auto":
        raise UsageError(
            f"--strategy {args.strategy} is a tf.distribute strategy and Keras runs on "
            "JAX (KERAS_BACKEND=jax): leave --strategy out (the JAX trainer is data "
            "parallel over every JAX device, through keras.distribution), or set "
            "KERAS_BACKEND=tensorflow to train with tf.distribute.")
    apply_dtype_policy(args)
    import jax
    import keras

    devices = jax.devices()
    device = devices[0]
    if len(devices) > 1:
        if global_batch % len(devices):
            raise UsageError(
                f"--batch_size {global_batch} is the global batch; it is not divisible by "
                f"the {len(devices)} JAX devices.")
        keras.distribution.set_distribution(keras.distribution.DataParallel(
            devices=keras.distribution.list_devices()))
    line = (f"Backend JAX {jax.__version__}: {len(devices)} {device.platform.upper()} "
            f"device(s) ({device.device_kind}"
            + (", keras.distribution.DataParallel" if len(devices) > 1 else "")
            + f"); batch {global_batch}"
            + (f" = {global_batch // len(devices)} per device." if len(devices) > 1 else "."))
    logging.info(line)
    print(line)


def setup_backend(args, global_batch):
    """:func:`setup` on TensorFlow, :func:`setup_jax` on JAX; returns ``(strategy,
    replicas)``, the strategy None on JAX (replicas: its data-parallel devices)."""
    if keras_backend() == "jax":
        setup_jax(args, global_batch)
        import keras

        distribution = keras.distribution.distribution()
        return None, len(distribution.device_mesh.devices.flatten()) if distribution else 1
    strategy = setup(args, global_batch)
    return strategy, strategy.num_replicas_in_sync


def xla_default(jit_compile, given, gpus):
    """``--jit_compile`` as given, else on where a GPU is: XLA pays most on accelerators
    (on JAX every step is compiled anyway). On a CPU it stays off unless asked for or a
    recipe turns it on (``train.entailment``'s): ``results/backends.md`` measures it."""
    return bool(jit_compile) if given else bool(jit_compile or gpus)


def apply_dtype_policy(args):
    """Makes ``--dtype_policy`` Keras' global policy: the models built next take it (and
    keep it in their config)."""
    import keras

    keras.config.set_dtype_policy(args.dtype_policy)
    if args.dtype_policy != "float32":
        print(f"Dtype policy {args.dtype_policy}.")


def keras_backend():
    """The Keras backend this process will run, found as Keras finds it
    (``KERAS_BACKEND``, then ``backend`` in ``$KERAS_HOME/keras.json`` or
    ``~/.keras/keras.json``, then TensorFlow) without importing Keras, so that
    TensorFlow is still imported quietly afterwards (``cli.import_tensorflow``)."""
    import json
    import os

    if "keras" in sys.modules:
        return sys.modules["keras"].backend.backend()
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json")) as f:
            return json.load(f).get("backend", "tensorflow")
    except (OSError, ValueError):
        return "tensorflow"


def trainer_kwargs(args):
    """The :class:`~tpr_keras.training.TrainConfig` fields these flags set."""
    minutes = args.max_train_minutes
    return {"checkpoint_every_steps": args.checkpoint_every_steps or None,
            "max_train_seconds": minutes * 60 if minutes else None,
            "verbose": verbose_level(args.verbose),
            "jit_compile": args.jit_compile,
            "steps_per_execution": args.steps_per_execution}


_CONTINUE_HINT = {"epochs": "a larger --epochs", "steps": "a larger --steps",
                  "early_stopping": "a larger --patience",
                  "target_error": "a lower target error"}


def report_if_finished(args, config, summary):
    """Says so and returns True when ``--model_dir`` holds a finished run for ``config``.

    ``summary(results) -> str`` describes the run's results (``test error 0.00 %``).
    A run stopped by ``--max_train_minutes`` or killed is not finished (see
    :func:`tpr_keras.training.checkpoints.finished_run`): the command then resumes it.
    """
    from tpr_keras.training.checkpoints import finished_run
    from tpr_keras.training.early_stopping import STOP_REASONS

    done = finished_run(args.model_dir, config)
    if done is None:
        return False
    results, reason = done
    import os

    print(f"Already trained: {results.get('epochs', '?')} epochs, {summary(results)} "
          f"(stopped by {STOP_REASONS[reason]}); results in "
          f"{os.path.join(args.model_dir, 'results.json')}, nothing exported again. "
          f"Use a new --model_dir, or {_CONTINUE_HINT[reason]} to continue.", flush=True)
    return True
