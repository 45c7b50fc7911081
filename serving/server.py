"""``python -m serving.server``: the model server's entry point, kept where it has always been.

The server itself is :mod:`serving.model_server` (its flags, front ends and ``main``) over
:mod:`serving.core`; this module runs that ``main`` and keeps the names it has always
offered (``from serving.server import ModelServer``).
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # --help and a bad command line end before TensorFlow loads
    from serving.model_server.flags import exit_before_tensorflow

    exit_before_tensorflow(sys.argv[1:])

from serving.core.batching import Batcher, BatchingParameters
from serving.core.manager import ModelManager
from serving.core.servable import Servable
from serving.core.signature import Signature, TensorSpecInfo
from serving.core.stats import Stats
from serving.core.status import ServingError
from serving.core.tensors import array_to_tensor_proto, tensor_proto_to_array
from serving.model_server.grpc_service import ModelService, PredictionService
from serving.model_server.main import main
from serving.model_server.model_config import parse_model_config, read_model_config_file
from serving.model_server.rest_api import RestApi
from serving.model_server.server import ModelServer

__all__ = ["Batcher", "BatchingParameters", "ModelManager", "ModelServer", "ModelService",
           "PredictionService", "RestApi", "Servable", "ServingError", "Signature", "Stats",
           "TensorSpecInfo", "array_to_tensor_proto", "main", "parse_model_config",
           "read_model_config_file", "tensor_proto_to_array"]

if __name__ == "__main__":
    sys.exit(main())
