"""The reusable core of the model server, along TF Serving's seams; no front end, no model code.

* :mod:`serving.core.servable`: one loaded version and its signatures (``SavedModelBundle``).
* :mod:`serving.core.manager`: versions, version policies, polling, swaps
  (``AspiredVersionsManager``).
* :mod:`serving.core.batching`: wraps a signature's runner when its version loads
  (``BatchingSession``).
* :mod:`serving.core.versions`: version folders (``00000123`` is 123) and version states.
* :mod:`serving.core.tensors` and :mod:`serving.core.json_tensor`: request tensors
  (``predict_util.cc``, ``util/json_tensor.cc``).
* :mod:`serving.core.inference` and :mod:`serving.core.json_examples`: Classify, Regress and
  MultiInference over ``tf.Example`` (``classifier.cc``, ``regressor.cc``,
  ``multi_inference.cc``) and their REST JSON.
* :mod:`serving.core.status` (status codes and errors), :mod:`serving.core.stats` (request
  statistics), :mod:`serving.core.error_log` (the rate-limited line per failed request),
  :mod:`serving.core.layout` (file names in a version folder), :mod:`serving.core._tf`
  (TensorFlow, imported with its start-up noise filtered by
  :func:`tpr_keras.runtime.quiet_tensorflow_start`).

The front ends and the server binary (:mod:`serving.model_server`) import the core; the core
imports neither them nor :mod:`serving.client` or ``train``, and of ``tpr_keras`` only
:mod:`tpr_keras.runtime` and the layout's file names, :mod:`tpr_keras.export.layout`
(``tests/serving/test_layout_of_package.py``).
"""

# First, before any module here imports TensorFlow (tensorflow.core, tensorflow_serving.apis):
# TensorFlow with its start-up noise filtered out of the server's log.
from serving.core import _tf  # noqa: E402, F401
