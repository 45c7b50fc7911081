"""The embedded model server as the checks of exported models start it: over a list of
``ModelConfig`` entries, on a free loopback port, stopped on leaving. The checks that ask
through a :mod:`serving.client` model client (bAbI, entailment, math) take its address from
:func:`serve`; ``tools.preset_serving_check`` serves ``serving/models.config`` through
:mod:`serving.model_server.in_process`, which yields a Predict stub instead.

Example::

    with serve([model_config("babi", "runs/babi-all/export/babi")]) as address:
        with BabiClient(address) as client:
            ...
"""

import contextlib
import os

from tensorflow_serving.config import model_server_config_pb2

from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer


def model_config(name, base_path):
    """A TensorFlow ``ModelConfig`` of the SavedModel versions under ``base_path``."""
    return model_server_config_pb2.ModelConfig(
        name=name, base_path=os.path.abspath(base_path), model_platform="tensorflow")


@contextlib.contextmanager
def serve(configs):
    """Serves ``configs`` on a free loopback port; yields the gRPC address
    (``127.0.0.1:PORT``) and stops the server on exit."""
    server = ModelServer(ModelManager(list(configs)), port=0).start()
    try:
        yield f"127.0.0.1:{server.port}"
    finally:
        server.stop(grace=2)
