"""TensorFlow, imported once for the server's modules with its start-up noise filtered.

TensorFlow's start-up lines on a machine without a GPU (CUDA probing, CPU-feature note,
absl's pre-initialisation banner) are kept out of the server's log unless
``TPR_KERAS_TF_LOGS=1``. (The server imports nothing from tpr_keras; same list as
``tpr_keras.runtime``.)
"""

from __future__ import annotations

import contextlib
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

_STARTUP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|cudart_stub\.cc|cpu_feature_guard\.cc"
    r"|To enable the following instructions|cuInit|Could not find cuda drivers"
    r"|Unable to register cu(DNN|FFT|BLAS) factory|computation placer already registered"
    r"|TF-TRT Warning|oneDNN custom operations are on")


@contextlib.contextmanager
def _quiet_tensorflow_start():
    if "tensorflow" in sys.modules or os.environ.get("TPR_KERAS_TF_LOGS", "0") not in ("", "0"):
        yield
        return
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().decode("utf-8", "replace").splitlines(True)
                    if not _STARTUP_NOISE.search(line)]
            if kept:
                sys.stderr.write("".join(kept))


with _quiet_tensorflow_start():
    import tensorflow as tf  # noqa: E402

    tf.config.list_physical_devices("GPU")  # CUDA probing; the runtime is not started yet

__all__ = ["tf"]
