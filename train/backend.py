"""The Keras backend a ``train.*`` command runs on, and its set-up: TensorFlow started
quietly, determinism, the dtype policy, XLA, and the data parallelism of the run.

* :func:`import_tensorflow` is :func:`tpr_keras.runtime.import_tensorflow` (TensorFlow
  imported with its start-up noise filtered out) with the ``--tf_logs`` flag honoured
  besides ``TPR_KERAS_TF_LOGS=1``; :func:`quiet_environment` sets the environment that
  keeps it quiet, before anything imports it.
* :func:`keras_backend` names the backend without importing Keras.
* :func:`setup_backend`, first thing a training command does with its flags (through
  :func:`train.runner.run`): on TensorFlow (:func:`setup`) the ``tf.distribute`` strategy
  of ``--strategy`` over its replicas; on JAX (:func:`setup_jax`) Keras'
  ``DataParallel`` distribution over every JAX device when there are more than one, and
  JAX's persistent compilation cache (``--jax_cache_dir``, :func:`jax_cache_dir`).

Keras, TensorFlow and JAX are imported inside the functions, never at import: importing
Keras starts the backend, which must happen after the command line is parsed (``--help``
and ``--list_presets`` start no TensorFlow, and ``--tf_logs`` decides how quietly it starts).
"""

import json
import os
import sys

from absl import logging

from tpr_keras import runtime
from tpr_keras.training.distribute import make_strategy
from train.errors import UsageError


def tf_logs_enabled(args=None) -> bool:
    """``--tf_logs`` (when ``args`` has it) or ``TPR_KERAS_TF_LOGS=1``."""
    return runtime.tf_logs_enabled() or bool(getattr(args, "tf_logs", False))


def quiet_environment(args=None) -> None:
    """:func:`tpr_keras.runtime.quiet_environment`, ``--tf_logs`` honoured."""
    runtime.quiet_environment(tf_logs=tf_logs_enabled(args))


def start(args=None) -> bool:
    """Starts the Keras backend the command runs on; returns whether it is JAX.

    Keeps TensorFlow's per-checkpoint INFO lines out of the output (absl's verbosity at
    WARNING unless raised), and on TensorFlow imports it quietly (:func:`import_tensorflow`);
    on JAX TensorFlow is not imported at all. Later calls return at once.
    """
    if logging.get_verbosity() <= 0:
        logging.set_verbosity(logging.WARNING)
    on_jax = keras_backend() == "jax"
    if not on_jax:
        import_tensorflow(args)
    return on_jax


def import_tensorflow(args=None):
    """:func:`tpr_keras.runtime.import_tensorflow`, ``--tf_logs`` honoured; a quiet start
    also caps absl's logging verbosity at WARNING (TensorFlow's INFO lines go through it).

    Returns the ``tensorflow`` module.
    """
    tf_logs = tf_logs_enabled(args)
    tf = runtime.import_tensorflow(tf_logs=tf_logs)
    if not tf_logs:
        if logging.get_verbosity() > logging.WARNING:
            logging.set_verbosity(logging.WARNING)
    return tf


def setup(args, global_batch):
    """Determinism, the strategy, and the global/per-replica batch; returns the strategy.

    Raises :class:`train.cli.UsageError` when ``global_batch`` does not split evenly over
    the replicas. The split is printed and logged on every worker.
    """
    tf = import_tensorflow(args)  # quietly: no CUDA probing noise on CPU-only machines
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()
    apply_dtype_policy(args)
    args.jit_compile = xla_default(args.jit_compile, "jit_compile" in args.given,
                                   tf.config.list_physical_devices("GPU"))
    strategy = make_strategy(args.strategy)
    replicas = strategy.num_replicas_in_sync
    if global_batch % replicas:
        raise UsageError(
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


#: ``--jax_cache_dir``'s default when ``$JAX_COMPILATION_CACHE_DIR`` is not set.
DEFAULT_JAX_CACHE_DIR = os.path.join("~", ".cache", "tpr_keras", "jax")


def jax_cache_dir(flag, environ=None):
    """The absolute folder of JAX's persistent compilation cache for ``--jax_cache_dir
    flag``, or None when it is off (``none``, or an empty ``$JAX_COMPILATION_CACHE_DIR``).

    The flag when given, else ``$JAX_COMPILATION_CACHE_DIR``, else
    :data:`DEFAULT_JAX_CACHE_DIR`.
    """
    environ = os.environ if environ is None else environ
    value = flag if flag is not None else environ.get("JAX_COMPILATION_CACHE_DIR",
                                                      DEFAULT_JAX_CACHE_DIR)
    if not value or value.lower() == "none":
        return None
    return os.path.abspath(os.path.expanduser(value))


def enable_jax_cache(folder):
    """Points JAX's persistent compilation cache at ``folder`` and, unless
    ``$JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` says otherwise, keeps every compiled
    program in it (JAX's default keeps only those that took a second or more: the CPU's
    steps of the small models compile faster than that, and would compile again on every
    run). Its size is JAX's to limit (``$JAX_COMPILATION_CACHE_MAX_SIZE``, which needs the
    ``filelock`` package: without it JAX disables the cache)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)


def setup_jax(args, global_batch):
    """The JAX counterpart of :func:`setup`: checks the flags that only TensorFlow has,
    and turns on JAX's persistent compilation cache (:func:`jax_cache_dir`).

    ``--strategy`` picks a ``tf.distribute`` strategy, which does not exist on JAX: any
    value but ``auto`` is a usage error that says so. The step is always compiled (``--jit_compile`` changes nothing).
    """
    if args.strategy != "auto":
        raise UsageError(
            f"--strategy {args.strategy} is a tf.distribute strategy and Keras runs on "
            "JAX (KERAS_BACKEND=jax): leave --strategy out (the JAX trainer is data "
            "parallel over every JAX device, through keras.distribution), or set "
            "KERAS_BACKEND=tensorflow to train with tf.distribute.")
    apply_dtype_policy(args)
    import jax
    import keras

    cache = jax_cache_dir(getattr(args, "jax_cache_dir", None))
    if cache:
        enable_jax_cache(cache)

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
            + (f" = {global_batch // len(devices)} per device." if len(devices) > 1 else ".")
            + (f" Compiled steps cached in {cache}." if cache else ""))
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
    TensorFlow is still imported quietly afterwards (:func:`import_tensorflow`)."""
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
