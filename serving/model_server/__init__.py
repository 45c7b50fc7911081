"""The server binary and its front ends, over :mod:`serving.core`.

* :mod:`serving.model_server.grpc_service`: the gRPC front end (``PredictionService``,
  ``ModelService``).
* :mod:`serving.model_server.rest_api`: the REST front end.
"""
