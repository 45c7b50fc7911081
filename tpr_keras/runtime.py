"""Process settings for the training commands, the model server and library users; importing
this does not import TensorFlow, and nothing here reads command-line flags.

* :func:`limit_malloc_arenas` caps glibc's malloc arenas (before TensorFlow starts).
* :func:`size_onednn_cache` gives oneDNN's primitive cache room for a training step's
  recurring shapes (before TensorFlow runs an op).
* :func:`cpu_vector_extension` names the widest vector instructions the processor has
  (the machine line of a run's ``results.json`` and the step benchmarks record it).
* :func:`quiet_tensorflow_start` is the block to import TensorFlow in: it drops the
  lines of :data:`STARTUP_NOISE` (CUDA probing on a machine without a GPU,
  CPU-feature notes, absl's pre-initialisation banner) from file descriptor 2 and sets
  ``TF_CPP_MIN_LOG_LEVEL=2`` unless the user set it. The model server
  (``serving.core._tf``) imports TensorFlow in it.
* :func:`import_tensorflow` imports TensorFlow and Keras in that block, probes the
  devices, and quiets Python warnings and TensorFlow's Python logger. The ``train.*``
  commands call it through :func:`train.cli.import_tensorflow`, which adds their
  ``--tf_logs`` flag.

``TPR_KERAS_TF_LOGS`` switches all of it: a true value (``1``, ``true``, ``yes``, ``on``)
keeps TensorFlow's logging as TensorFlow writes it; unset, empty, ``0``, ``false``,
``no`` or ``off`` filters it (:func:`truthy`). ``tf_logs=True``/``False`` overrides it.
"""

import contextlib
import ctypes
import os
import re
import sys
import tempfile
import warnings

TF_LOGS_ENV = "TPR_KERAS_TF_LOGS"

_M_ARENA_MAX = -8  # mallopt parameter number in glibc's malloc.h

#: The environment variable oneDNN (TensorFlow's CPU kernels) reads its primitive cache's
#: capacity from (entries; oneDNN's default 1,024), and the capacity
#: ``train.math --group_multiple`` gives it unless it is set.
ONEDNN_CACHE_ENV = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
ONEDNN_CACHE_CAPACITY = 16384

#: TensorFlow start-up lines that say nothing about the user's run: CUDA probing on a
#: machine without a GPU (some at error severity), the CPU-feature note, the banner
#: absl prints before its logging is initialised, oneDNN and TF-TRT notes.
STARTUP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog"
    r"|cudart_stub\.cc|cpu_feature_guard\.cc|To enable the following instructions"
    r"|cuInit|cuda_(platform|executor|diagnostics|driver|dnn|fft|blas)\.cc"
    r"|Unable to register cu(DNN|FFT|BLAS) factory|computation placer already registered"
    r"|TF-TRT Warning|oneDNN custom operations are on|Could not find cuda drivers"
    r"|successful NUMA node read|Unable to (find|load) (cuda|CUDA|TensorRT|libcuda)"
    r"|kernel driver does not appear to be running|no NVIDIA GPU device")


def limit_malloc_arenas(count=2):
    """Caps glibc's malloc arenas at ``count`` unless ``MALLOC_ARENA_MAX`` is set.

    By default glibc gives each thread that allocates concurrently its own
    arena (up to 8 per core), and freed memory stays in the arena that held
    it. TensorFlow's thread pools and tf.data threads then keep several
    partly-empty heaps, so a CPU training process holds 90-120 MB more than it
    uses (measured on the all-tasks bAbI benchmark). Call this first thing,
    before TensorFlow starts its threads. Has no effect off glibc.

    Returns:
        True if the limit was set here.
    """
    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_ARENA_MAX, int(count)))
    except (OSError, AttributeError):  # musl or another libc
        return False


def size_onednn_cache(capacity: int = ONEDNN_CACHE_CAPACITY) -> bool:
    """Sets oneDNN's primitive cache to ``capacity`` entries unless
    ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` is set; call it before TensorFlow runs an op.

    oneDNN prepares a primitive (a kernel planned for one shape) per op and shape and
    keeps the last 1,024 by default. A math step on length groups cut at rounded shapes
    (``sequence_cross_entropy(group_multiple=...)``) runs its products at a few hundred
    recurring shapes, more than that cache holds; ``train.math --group_multiple`` calls
    this. Without rounded shapes a larger cache did not pay: nearly every batch brings new
    shapes (results/studies/math_training_speed.md). Results are unchanged: the cache
    decides when a primitive is made, not which.

    Returns:
        True if the capacity was set here.
    """
    if ONEDNN_CACHE_ENV in os.environ:
        return False
    os.environ[ONEDNN_CACHE_ENV] = str(int(capacity))
    return True


#: The x86 vector extensions :func:`cpu_vector_extension` names, widest first, with the
#: ``/proc/cpuinfo`` flag that says the processor has each.
VECTOR_EXTENSIONS = (("AVX-512", "avx512f"), ("AVX2", "avx2"), ("AVX", "avx"))


def cpu_vector_extension(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The widest vector extension of :data:`VECTOR_EXTENSIONS` the processor reports
    (``"AVX-512"``, ``"AVX2"``, ``"AVX"``); ``""`` for none or where ``cpuinfo`` cannot
    be read (another system, another architecture).

    Two machines that share a processor name ("AMD EPYC" on a virtual machine) can differ
    in it, and their speed with it: the TP-Transformer step benchmark timed TensorFlow's
    one-thread float32 matrix product at about 77 GFLOP/s on one such machine and 197 on
    one with AVX-512 (results/studies/math_training_speed.md)."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return ""
    return next((name for name, flag in VECTOR_EXTENSIONS if flag in flags), "")


def truthy(value: str | None) -> bool:
    """An environment variable's value as a switch: unset, empty, 0, false, no, off are off."""
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def tf_logs_enabled() -> bool:
    """Whether ``TPR_KERAS_TF_LOGS`` asks to keep TensorFlow's logging (:func:`truthy`)."""
    return truthy(os.environ.get(TF_LOGS_ENV))


# ------------------------------------------------------------------ TensorFlow noise
@contextlib.contextmanager
def _filtered_stderr():
    """Captures file descriptor 2 (C++ logging writes there) and replays the lines
    that are not :data:`STARTUP_NOISE` when the block ends."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr (embedded, pytest capture)
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode("utf-8", "replace")
            kept = "".join(line for line in text.splitlines(keepends=True)
                           if not STARTUP_NOISE.search(line))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


@contextlib.contextmanager
def quiet_tensorflow_start(tf_logs: bool | None = None):
    """The block to import TensorFlow in: ``TF_CPP_MIN_LOG_LEVEL=2`` unless the user set
    it, and the :data:`STARTUP_NOISE` lines written to file descriptor 2 inside the block
    dropped (the other lines are written when it ends). Does nothing when TensorFlow is
    already imported or its logs are asked for.

    Args:
        tf_logs: Keep TensorFlow's logging (None: :func:`tf_logs_enabled`).
    """
    if (tf_logs_enabled() if tf_logs is None else tf_logs) or "tensorflow" in sys.modules:
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _filtered_stderr():
        yield


def quiet_environment(tf_logs: bool | None = None) -> None:
    """``TF_CPP_MIN_LOG_LEVEL=2`` (errors only) unless set or TF logs are asked for.

    Must run before TensorFlow is imported to have an effect. Level 2 hides
    TensorFlow's INFO and WARNING lines, e.g. tf.data's ``GeneratorDatasetOp ... will
    not be optimized``, printed 8 times per bAbI run.

    Args:
        tf_logs: Keep TensorFlow's logging (None: :func:`tf_logs_enabled`).
    """
    if tf_logs_enabled() if tf_logs is None else tf_logs:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # Python warnings from libraries that are not the user's business, shown once.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(keras|tensorflow)")
    warnings.filterwarnings("once", category=UserWarning)
    default_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if category is UserWarning:  # ours (data notes): one line, no source excerpt
            print(f"warning: {message}", file=file or sys.stderr, flush=True)
        else:
            default_show(message, category, filename, lineno, file, line)

    if getattr(warnings.showwarning, "__name__", "") != "show":
        warnings.showwarning = show


def import_tensorflow(tf_logs: bool | None = None):
    """Imports TensorFlow and Keras and probes the GPUs, quietly (see the module doc).

    Args:
        tf_logs: Keep TensorFlow's start-up and INFO logging (None:
            :func:`tf_logs_enabled`, i.e. ``TPR_KERAS_TF_LOGS``).

    Returns the ``tensorflow`` module. Later calls return it at once.
    """
    tf_logs = tf_logs_enabled() if tf_logs is None else tf_logs
    quiet_environment(tf_logs)
    quiet = not tf_logs and "tensorflow" not in sys.modules
    with quiet_tensorflow_start(tf_logs):
        import keras  # noqa: F401
        import tensorflow as tf

        # CUDA is probed here, once, inside the filter; listing physical devices does
        # not initialise the runtime (MultiWorkerMirroredStrategy can still be created).
        tf.config.list_physical_devices("GPU")
    if quiet:  # TensorFlow's Python INFO lines (SavedModel writing, ...): through its own
        import logging  # logger, and in newer modules through absl's directly

        logging.getLogger("tensorflow").setLevel(logging.WARNING)
        # absl's logger by name (TensorFlow has created it): the library imports no absl.
        if "absl.logging" in sys.modules:
            absl_logger = logging.getLogger("absl")
            if absl_logger.getEffectiveLevel() < logging.WARNING:
                absl_logger.setLevel(logging.WARNING)
    return tf
