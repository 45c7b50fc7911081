"""gRPC over TLS from TF Serving's text ``SSLConfig`` (``--ssl_config_file``).

As in ``tensorflow_model_server`` (``server.cc``), the fields hold the PEM text itself,
not file names: ``server_key`` (the private key), ``server_cert`` (its certificate
chain), ``custom_ca`` (the CA that client certificates must chain to) and
``client_verify`` (require and check a client certificate). The key, the certificate
and the CA are checked with Python's ``ssl`` before the server binds: a missing,
malformed or mismatched one is a :class:`~serving.model_server.config_protos.ConfigError`
naming the file and the field, never a fallback to plaintext. TLS applies to gRPC only;
TF Serving's REST port has no TLS either.
"""

from __future__ import annotations

import os
import ssl
import tempfile

import grpc

from serving.model_server.config_protos import ConfigError, SSLConfig, read_text_proto


def _check_pem(path: str, field: str, text: str, marker: str) -> None:
    if not text.strip():
        raise ConfigError(f"--ssl_config_file={path}: {field} is empty; it must hold the "
                          "PEM text itself")
    if "-----BEGIN" not in text or marker not in text:
        raise ConfigError(f"--ssl_config_file={path}: {field} is not PEM text "
                          f"(no '-----BEGIN ...{marker}' block)")


def _check_key_pair(path: str, config) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for file, text in ((cert, config.server_cert), (key, config.server_key)):
            with open(file, "w", encoding="utf-8") as f:
                f.write(text)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            raise ConfigError(f"--ssl_config_file={path}: server_cert and server_key do not "
                              f"load as a certificate and its private key: {exc}") from None
    if config.custom_ca:
        try:
            ssl.create_default_context(cadata=config.custom_ca)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"--ssl_config_file={path}: custom_ca is not a PEM "
                              f"certificate: {exc}") from None


def read_ssl_config(path: str):
    """The checked ``SSLConfig`` of ``path`` (:class:`ConfigError` if unusable)."""
    config = read_text_proto(path, SSLConfig, "ssl_config_file")
    _check_pem(path, "server_key", config.server_key, "PRIVATE KEY")
    _check_pem(path, "server_cert", config.server_cert, "CERTIFICATE")
    if config.client_verify and not config.custom_ca:
        raise ConfigError(f"--ssl_config_file={path}: client_verify is true but custom_ca "
                          "is empty: client certificates need a CA to be checked against")
    if config.custom_ca:
        _check_pem(path, "custom_ca", config.custom_ca, "CERTIFICATE")
    _check_key_pair(path, config)
    return config


def server_credentials(config) -> grpc.ServerCredentials:
    """``grpc.ssl_server_credentials`` for a checked ``SSLConfig``."""
    return grpc.ssl_server_credentials(
        [(config.server_key.encode(), config.server_cert.encode())],
        root_certificates=config.custom_ca.encode() if config.custom_ca else None,
        require_client_auth=config.client_verify)
