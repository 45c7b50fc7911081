"""One ``tf.function`` for several Keras models of one architecture, each call fed the
weights of the model it stands for. Used only on the TensorFlow backend.

A routed TP-Transformer (:class:`~tpr_keras.models.tp_transformer.routed_tp_transformer
.RoutedTPTransformer`) holds a decoder per group of modules, and most of them share one
config: they differ only in their weights. Traced one by one, each decoder's decoding loop
is built again, and an export stores it again: ``tp_transformer_math_everyday`` (eleven
decoders, nine of one architecture) exported in 11.7-12.0 s so, 5.8-6.2 s with this.

:func:`shared_traces` traces one function per distinct :func:`architecture` that takes the
weights as its first argument: inside it, :class:`keras.StatelessScope` maps the first
such model's variables to those values, so that model's own methods run on them. Each
model then calls it with the values of its own variables: the same ops on the same values
as a trace of its own, so its outputs do not change, while the graph (and a SavedModel)
holds the function once per architecture and reads every model's variables as before.
Used by the math exporter (:mod:`tpr_keras.export.tp_transformer`) and the math tables
(:mod:`tpr_keras.evaluation.mathematics`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf


def architecture(model: keras.Model) -> tuple:
    """What two models must share to run one traced function: class, config (the name
    aside) and each weight's shape and dtype, in order."""
    config = {k: v for k, v in model.get_config().items() if k != "name"}
    return (type(model).__name__, json.dumps(config, sort_keys=True, default=str),
            tuple((tuple(w.shape), str(w.dtype)) for w in model.weights))


def _traced(reference: keras.Model, fn: Callable[..., Any], input_signature):
    """``fn(reference, *args)`` as a ``tf.function`` of ``(weights, *args)``, the weights
    in ``reference.weights`` order standing in for its variables."""
    variables = list(getattr(reference, "weights", []))

    def run(values, *args):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return fn(reference, *args)

    if input_signature is not None:
        input_signature = [[tf.TensorSpec(v.shape, v.dtype) for v in variables],
                           *input_signature]
    return tf.function(run, input_signature=input_signature, autograph=False)


def shared_traces(models: Sequence[keras.Model], fn: Callable[..., Any],
                  input_signature: Sequence[tf.TensorSpec] | None = None
                  ) -> list[Callable[..., Any]]:
    """One callable per model, ``*args -> fn(model, *args)``, where models of one
    :func:`architecture` share one traced function fed their own weights.

    Args:
        models: Built Keras models (e.g. a routed model's ``decoders()``).
        fn: ``(model, *args) -> outputs``, e.g. ``lambda d, ids: d.greedy_decode(ids)``;
            only tensors in ``args``.
        input_signature: The ``args``' ``tf.TensorSpec``s, to trace once for any shapes
            they allow (as ``tf.function``'s); None: traced per call shape.

    Returns:
        ``[callable]`` in ``models`` order; call them eagerly or inside another trace.

    Example:
    >>> greedy = shared_traces(model.decoders(), lambda d, ids: d.greedy_decode(ids))
    >>> outputs = [call(part) for call, part in zip(greedy, parts)]
    """
    traced = {}
    calls = []
    for model in models:
        # Anything but a Keras model (a stand-in with the method) is traced on its own.
        key = architecture(model) if isinstance(model, keras.Model) else id(model)
        if key not in traced:
            traced[key] = _traced(model, fn, input_signature)
        run, weights = traced[key], list(getattr(model, "weights", []))
        calls.append(lambda *args, run=run, weights=weights: run(
            [w.value for w in weights], *args))
    return calls
