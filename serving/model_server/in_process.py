"""A model server inside this process, over a ``models.config``, and Predict calls to it
through ``tensorflow-serving-api``'s own stubs: what the checks of exported models use
(``python -m tools.preset_serving_check``, ``tests/presets``).

Like the rest of the server it knows nothing about tpr-keras: it serves whatever SavedModels
the config's base paths hold.

Example::

    with serve_model_config("serving/models.config", "/tmp/repo", ["babi"]) as stub:
        answers = predict_strings(stub, "babi", {"story": [...], "question": [...]},
                                  "answer")
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
import grpc
from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_service_pb2_grpc

from serving.core._tf import tf
from serving.core.manager import ModelManager
from serving.model_server.model_config import parse_model_config
from serving.model_server.server import ModelServer


@contextlib.contextmanager
def serve_model_config(config_file: str | os.PathLike, base_dir: str | os.PathLike,
                       names: Sequence[str] | None = None
                       ) -> Iterator[prediction_service_pb2_grpc.PredictionServiceStub]:
    """Serves models of a text ``ModelServerConfig`` on a free loopback port; yields a
    ``PredictionServiceStub`` connected to it, and stops the server on exit.

    Args:
        config_file: The config (``serving/models.config``).
        base_dir: The folder its relative ``base_path``s are taken from (the one
            ``tensorflow_model_server`` would run in).
        names: The models to serve (default: all of them).

    Raises:
        ValueError: a name the config does not hold, or a config that does not parse.
    """
    with open(config_file, encoding="utf-8") as f:
        configs = parse_model_config(f.read())
    if names is not None:
        missing = sorted(set(names) - {c.name for c in configs})
        if missing:
            raise ValueError(f"{config_file} serves no model named {missing}")
        configs = [c for c in configs if c.name in set(names)]
    for c in configs:
        c.base_path = os.path.join(os.fspath(base_dir), c.base_path)
    server = ModelServer(ModelManager(configs), port=0, rest_api_port=0).start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield prediction_service_pb2_grpc.PredictionServiceStub(channel)
    finally:
        channel.close()
        server.stop(grace=2)


def predict_strings(stub: prediction_service_pb2_grpc.PredictionServiceStub, model_name: str,
                    inputs: Mapping[str, Sequence[str]], output: str, batch: int = 500,
                    timeout: float = 300.0) -> list[Any]:
    """One output of ``model_name``'s ``serving_default`` for string inputs, sent in
    Predict requests of at most ``batch`` rows.

    Args:
        stub: A ``PredictionServiceStub``.
        model_name: The served model.
        inputs: ``{input name: strings}``, all of one length.
        output: The output to return.
        batch: Rows per request.
        timeout: Seconds per request.

    Returns:
        The output's values in order, as Python objects (strings decoded from UTF-8).
    """
    rows = len(next(iter(inputs.values()), []))
    values: list[Any] = []
    for start in range(0, rows, batch):
        request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(name=model_name))
        for key, strings in inputs.items():
            request.inputs[key].CopyFrom(
                tf.make_tensor_proto(list(strings[start:start + batch]), dtype=tf.string))
        response = stub.Predict(request, timeout=timeout)
        values += [v.decode() if isinstance(v, bytes) else v
                   for v in tf.make_ndarray(response.outputs[output]).tolist()]
    return values
