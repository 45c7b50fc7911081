"""File names inside a version folder that the exporters write and the server reads.

TF Serving's names (``tensorflow_serving/servables/tensorflow/saved_model_warmup.cc``):
``<version>/assets.extra/tf_serving_warmup_requests`` holds the PredictionLog records
replayed before a version serves. Imports nothing, so the server's modules can use it
without pulling in the exporters or ``tpr_keras``'s models.

The exporters write these names from their own definition,
:mod:`tpr_keras.models.tf_serving_layout` (the training commands export, and ``train``
never imports ``serving``); ``tests/serving/test_servable.py`` asserts the two are equal.
"""

import os

#: Folder of a version's extra files, which TF Serving keeps out of the SavedModel.
EXTRA_ASSETS_DIR = "assets.extra"
#: Name of the warm-up file inside :data:`EXTRA_ASSETS_DIR`.
WARMUP_FILE = "tf_serving_warmup_requests"
#: The warm-up file's path relative to the version folder.
WARMUP_PATH = os.path.join(EXTRA_ASSETS_DIR, WARMUP_FILE)
