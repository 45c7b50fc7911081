"""Serving for tpr-keras models: SavedModel export, a TF Serving-compatible server, a client.

* :mod:`serving.export` writes a trained bAbI model as a string-in/string-out SavedModel in
  TF Serving's ``<export_dir>/<model_name>/<version>/`` layout.
* :mod:`serving.server` (``python -m serving.server``) serves any such SavedModel over
  TF Serving's gRPC and REST APIs; it never imports ``tpr_keras``.
* :mod:`serving.client` (``python -m serving.client``) asks a server questions.

Nothing is imported here, so ``import serving.client`` does not pull in Keras.
"""
