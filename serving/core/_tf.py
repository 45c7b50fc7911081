"""TensorFlow, imported once for the server's modules with its start-up noise filtered.

TensorFlow is imported inside :func:`tpr_keras.runtime.quiet_tensorflow_start`, so the
server's log shows the lines the training commands show: TensorFlow's start-up lines on a
machine without a GPU (CUDA probing, CPU-feature note, absl's pre-initialisation banner)
are dropped and ``TF_CPP_MIN_LOG_LEVEL`` is 2 unless the user set it, while
``TPR_KERAS_TF_LOGS=1`` keeps it all (the variable is described in
:mod:`tpr_keras.runtime`, which imports only the standard library).
"""

from __future__ import annotations

from tpr_keras.runtime import quiet_tensorflow_start

with quiet_tensorflow_start():
    import tensorflow as tf

    tf.config.list_physical_devices("GPU")  # CUDA probing; the runtime is not started yet

__all__ = ["tf"]
