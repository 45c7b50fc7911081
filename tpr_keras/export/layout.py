"""The file names of TF Serving's export layout: the one definition, which the exporters
(:mod:`tpr_keras.export.versions`) write and the server (``serving/core/layout.py``
re-exports these objects) reads::

    <export_dir>/<model_name>/<version>/saved_model.pb
                                        variables/
                                        assets/...
                                        assets.extra/tf_serving_warmup_requests
                                        assets.extra/export_info.json

Imports nothing but :mod:`os`, and ``tpr_keras/export/__init__.py`` imports nothing eagerly,
so the server takes these names before TensorFlow loads and without the exporters or any
model code; no other module of ``tpr_keras``, ``serving``, ``train``, ``tools`` or ``bench``
assigns them (both checked by ``tests/serving/test_layout_of_package.py``).

The names are TF Serving's (``tensorflow_serving/servables/tensorflow/
saved_model_warmup.cc``).
"""

import os

#: Folder of a version's extra files, which TF Serving keeps out of the SavedModel.
EXTRA_ASSETS_DIR = "assets.extra"
#: Name of the warm-up file inside :data:`EXTRA_ASSETS_DIR`: PredictionLog records that the
#: server replays before the version serves.
WARMUP_FILE = "tf_serving_warmup_requests"
#: The warm-up file's path relative to the version folder.
WARMUP_PATH = os.path.join(EXTRA_ASSETS_DIR, WARMUP_FILE)
#: What an export says about itself (signatures, sizes, versions), in :data:`EXTRA_ASSETS_DIR`.
EXPORT_INFO_FILE = "export_info.json"
