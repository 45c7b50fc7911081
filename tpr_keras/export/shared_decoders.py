"""Decoders of one architecture traced once into an exported graph, their weights passed in.

A routed TP-Transformer (:class:`~tpr_keras.models.tp_transformer.routed_tp_transformer
.RoutedTPTransformer`) holds a decoder per group of modules, and most of them share one
config: they differ only in their weights. Traced one by one, each decoder's decoding loop
(greedy and beam) is built and stored again; ``tp_transformer_math_everyday`` (twelve
decoders, ten of one architecture) spent most of its export tracing and saving them.

:func:`shared_decoding` traces one ``tf.function`` per distinct architecture that takes the
weights as arguments: inside it, :class:`keras.StatelessScope` maps the first such
decoder's variables to those arguments, so its own ``greedy_decode`` / ``beam_search`` runs
on them. Each decoder then calls that function with the values of its own variables: the
same ops on the same values as its own trace, so its answers do not change (the export
tests compare them with the Keras model's), while the SavedModel holds each decoding loop
once per architecture and the served graph reads every decoder's variables as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf


def architecture(decoder: keras.Model) -> tuple:
    """What two decoders must share to run one traced function: class, config (the name
    aside) and each weight's shape and dtype, in order."""
    config = {k: v for k, v in decoder.get_config().items() if k != "name"}
    return (type(decoder).__name__, json.dumps(config, sort_keys=True, default=str),
            tuple((tuple(w.shape), str(w.dtype)) for w in decoder.weights))


def _traced(reference: keras.Model, decode_one: Callable[[Any, Any], Any]):
    """``decode_one(reference, part)`` as a ``tf.function`` of ``(part, weights)``, the
    weights in ``reference.weights`` order standing in for its variables."""
    variables = list(reference.weights)

    def run(part, values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return decode_one(reference, part)

    return tf.function(run, autograph=False)


def shared_decoding(decoders: Sequence[keras.Model],
                    decode_one: Callable[[Any, Any], Any]) -> list[Callable[[Any], Any]]:
    """One callable per decoder, ``part -> decode_one(decoder, part)``, where decoders of
    one :func:`architecture` share one traced function fed their own weights.

    Args:
        decoders: The decoders (``TPTransformer`` or ``VocabularyMappedDecoder``), built.
        decode_one: ``(decoder, ids) -> outputs``, e.g. its ``greedy_decode``.

    Returns:
        ``[fn]`` in ``decoders`` order; call each inside the exported function's trace.

    Example:
    >>> greedy = shared_decoding(model.decoders(), lambda d, ids: d.greedy_decode(ids))
    >>> outs = [fn(part) for fn, part in zip(greedy, parts)]
    """
    traced = {}
    calls = []
    for decoder in decoders:
        key = architecture(decoder)
        if key not in traced:
            traced[key] = _traced(decoder, decode_one)
        run, weights = traced[key], list(decoder.weights)
        calls.append(lambda part, run=run, weights=weights: run(
            part, [w.value for w in weights]))
    return calls
