"""Command-line flags and set-up every ``train.*`` entry point shares.

Each entry point calls :func:`define_flags` once at import time and
:func:`setup` first thing in ``main``, so ``--strategy``, checkpoint frequency
and determinism behave the same for every model:

    from absl import app
    from tpr_keras.training import flags as train_flags

    train_flags.define_flags()

    def main(argv):
        strategy = train_flags.setup(global_batch=128)
        ...
        config = TrainConfig(..., **train_flags.trainer_kwargs())

``setup`` must run before anything touches TensorFlow devices:
``MultiWorkerMirroredStrategy`` can only be created at program start-up.
"""

from absl import flags, logging

from tpr_keras.training.distribute import STRATEGIES, make_strategy

FLAGS = flags.FLAGS


def define_flags():
    """Registers the shared flags (idempotent)."""
    if "strategy" in FLAGS:
        return
    flags.DEFINE_enum(
        "strategy", "auto", list(STRATEGIES),
        "tf.distribute strategy. auto: multi_worker when TF_CONFIG names a cluster, "
        "else all local GPUs (mirrored), else the CPU. mirrored: all local GPUs. "
        "multi_worker: MultiWorkerMirroredStrategy, reads TF_CONFIG. one_device: one GPU "
        "or the CPU.")
    flags.DEFINE_integer(
        "checkpoint_every_steps", None,
        "Also checkpoint every N optimizer steps inside an epoch (a checkpoint is always "
        "written at the end of an epoch). A restarted run resumes from the latest one.")
    flags.DEFINE_float(
        "max_train_minutes", None,
        "Time budget for training in this run: stop at the first step past it, keep the "
        "best-validation weights, evaluate and export. Running the same command again "
        "resumes from the checkpoint with a fresh budget.")
    flags.DEFINE_bool(
        "deterministic", False,
        "tf.config.experimental.enable_op_determinism(): bit-identical reruns and resumes "
        "with the same --seed, at some speed cost (most on GPU).")


def setup(global_batch):
    """Determinism, the strategy, and the global/per-replica batch; returns the strategy.

    Raises ``app.UsageError`` when ``global_batch`` does not split evenly over
    the replicas. The split is printed and logged on every worker.
    """
    from absl import app
    import tensorflow as tf

    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    strategy = make_strategy(FLAGS.strategy)
    replicas = strategy.num_replicas_in_sync
    if global_batch % replicas:
        raise app.UsageError(
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


def trainer_kwargs():
    """The :class:`~tpr_keras.training.TrainConfig` fields these flags set."""
    minutes = FLAGS.max_train_minutes
    return {"checkpoint_every_steps": FLAGS.checkpoint_every_steps or None,
            "max_train_seconds": minutes * 60 if minutes else None}
