"""File names inside a version folder that the exporters write and the server reads.

TF Serving's names (``tensorflow_serving/servables/tensorflow/saved_model_warmup.cc``):
``<version>/assets.extra/tf_serving_warmup_requests`` holds the PredictionLog records
replayed before a version serves.

These are the objects of :mod:`tpr_keras.export.layout`, their one definition, which the
exporters write with: that module imports nothing but :mod:`os` (and its package nothing
eagerly), so the server's modules use it without TensorFlow, the exporters or
``tpr_keras``'s models (``tests/serving/test_layout_of_package.py``).
"""

from tpr_keras.export.layout import (
    EXPORT_INFO_FILE,
    EXTRA_ASSETS_DIR,
    WARMUP_FILE,
    WARMUP_PATH,
)

__all__ = ["EXPORT_INFO_FILE", "EXTRA_ASSETS_DIR", "WARMUP_FILE", "WARMUP_PATH"]
