"""The TF Serving-compatible model server: its flags, its two front ends, its ``main``.

Serves the gRPC API of ``tensorflow-serving-api`` (``PredictionService``: ``Predict``,
``Classify``, ``Regress``, ``MultiInference``, ``GetModelMetadata``; ``ModelService``:
``GetModelStatus``, ``HandleReloadConfigRequest``) and TF Serving's REST API, from model
folders in TF Serving's layout ``<model_base_path>/<integer version>/`` (``00000123`` is
version 123). As ``tensorflow_model_server``, its ports open once every initially
configured model is available (:mod:`serving.model_server.readiness`).
It knows nothing about tpr-keras: any SavedModel with signatures can be served, and stock
``tensorflow_model_server`` can replace it with the same flags::

    python -m serving.server --port=8500 --rest_api_port=8501 \\
        --model_name=babi --model_base_path=/abs/path/export/babi
    python -m serving.server --port=8500 --model_config_file=serving/models.config

(``python -m serving.model_server`` is the same command.) The parts, over
:mod:`serving.core` (servables, manager, batching, request tensors):

* :mod:`serving.model_server.grpc_service` and :mod:`serving.model_server.rest_api`: the
  two front ends.
* :mod:`serving.model_server.server`: :class:`ModelServer` (ports, ``stats()``), which
  binds them.
* :mod:`serving.model_server.flags` and :mod:`serving.model_server.model_config`: the
  flags and the ``--model_config_file`` format.
* :mod:`serving.model_server.monitoring`, :mod:`serving.model_server.health` and
  :mod:`serving.model_server.tls`: Prometheus metrics, the gRPC health service and gRPC
  over TLS; :mod:`serving.model_server.config_protos`: their text config files.
* :mod:`serving.model_server.readiness`: waiting for the initial models before the ports
  open.
* :mod:`serving.model_server.main`: ``main``, which wires them.
* :mod:`serving.model_server.in_process`: a server inside the calling process over a
  ``models.config``, and string Predict calls to it (the checks of exported models).
* :mod:`serving.model_server.server_process`: the server as a child process, started and
  waited for through its ``--server_info_file`` (the benchmarks and the long fuzz run).

Semantics follow TF Serving: an empty signature name means ``serving_default``; an unset
version means the latest loaded one; NOT_FOUND for an unknown model, version or label;
FAILED_PRECONDITION for an unknown signature; INVALID_ARGUMENT for a malformed request
(bytes that do not parse, inputs whose names or dtypes do not match the SignatureDef; shapes
are the graph's to check, as TF Serving feeds request tensors as sent). A malformed request is answered with its status and one log line, never
INTERNAL or a 5xx. SIGTERM/SIGINT: stop accepting, let in-flight requests finish
(``--shutdown_grace_seconds``), exit 0.

Importing this package imports nothing (``--help`` and the flags need no TensorFlow); each
module that imports TensorFlow or ``tensorflow_serving`` imports :mod:`serving.core` first,
which loads TensorFlow with its start-up noise filtered out of the server's log.
"""
