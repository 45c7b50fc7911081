"""Serving for tpr-keras models: SavedModel export, a TF Serving-compatible server, a client.

* :mod:`serving.export` (``python -m serving.export``) writes a saved ``.keras`` bAbI model
  as a string-in/string-out SavedModel in TF Serving's ``<export_dir>/<model_name>/<version>/``
  layout. The exporters themselves, and that layout, are in ``tpr_keras.export`` (the
  training commands export without importing ``serving``); this is the one module of
  ``serving`` that imports ``tpr_keras``'s exporters and models.
* :mod:`serving.core`: the server's reusable core along TF Serving's seams (servables, the
  manager, batching, request tensors); it imports no front end.
* :mod:`serving.model_server` (``python -m serving.server``, kept in :mod:`serving.server`):
  the flags, the gRPC and REST front ends and ``main``; it serves any SavedModel and imports
  nothing of ``tpr_keras`` but :mod:`tpr_keras.runtime` (standard library only), whose
  filter keeps TensorFlow's start-up noise out of the log, and the layout's file names
  (:mod:`tpr_keras.export.layout`, through :mod:`serving.core.layout`).
  ``serving/models.config`` serves the bAbI, math and entailment models from one server.
* :mod:`serving.client` (``python -m serving.client``) asks a server questions, without
  TensorFlow.

Imports go one way (client and core apart; model_server over core), without cycles
(``tests/serving/test_layout_of_package.py``). The request fuzzer that probes a running
server is test code: ``tests/serving/fuzz.py`` (its long run: ``tests/serving/serving_fuzz.py``).

Nothing is imported here, so ``import serving.client`` does not pull in Keras.
"""
