"""Serving for tpr-keras models: SavedModel export, a TF Serving-compatible server, a client.

* :mod:`serving.export` (``python -m serving.export``) writes a saved ``.keras`` bAbI model
  as a string-in/string-out SavedModel in TF Serving's ``<export_dir>/<model_name>/<version>/``
  layout. The exporters themselves, and that layout, are in ``tpr_keras.models`` (the
  training commands export without importing ``serving``).
* :mod:`serving.server` (``python -m serving.server``) serves any such SavedModel over
  TF Serving's gRPC and REST APIs; it never imports ``tpr_keras``. Its parts follow TF
  Serving's seams: :mod:`serving.core.servable`, :mod:`serving.core.manager`, :mod:`serving.core.batching`,
  :mod:`serving.core.tensors`, :mod:`serving.core.json_tensor`, :mod:`serving.model_server.grpc_service`,
  :mod:`serving.model_server.rest_api`; :mod:`serving.fuzz` probes a running server with malformed
  requests. ``serving/models.config`` serves the bAbI, math and entailment models from one
  server.
* :mod:`serving.client` (``python -m serving.client``) asks a server questions.

Nothing is imported here, so ``import serving.client`` does not pull in Keras.
"""
