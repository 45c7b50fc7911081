"""TF Serving's text ``ModelServerConfig`` (``--model_config_file``): several models, their
version policies and labels."""

from __future__ import annotations

import os

import serving.core  # noqa: F401  (first: TensorFlow starts with its noise filtered)
from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2


def parse_model_config(text: str) -> list[model_server_config_pb2.ModelConfig]:
    """Parses TF Serving's text ``ModelServerConfig`` (``model_config_list { config {...} }``);
    ValueError starting with TF Serving's ``Error parsing text-format
    tensorflow.serving.ModelServerConfig`` if the text does not parse."""
    config = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:  # in tensorflow_model_server's words
        raise ValueError(f"Error parsing text-format {config.DESCRIPTOR.full_name}: "
                         f"{exc}") from None
    if config.WhichOneof("config") != "model_config_list":
        raise ValueError("the model config file must hold a model_config_list")
    return list(config.model_config_list.config)


def read_model_config_file(path: str) -> list[model_server_config_pb2.ModelConfig]:
    """The models of a text ModelServerConfig file; a relative ``base_path`` is taken from
    the directory the server runs in, as tensorflow_model_server's file system does."""
    with open(path, encoding="utf-8") as f:
        configs = parse_model_config(f.read())
    for c in configs:
        if c.base_path:
            c.base_path = os.path.abspath(c.base_path)
    return configs
