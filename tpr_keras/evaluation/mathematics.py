"""The Mathematics Dataset table: greedy exact match % per module of a TP-Transformer (or
a routed one), interpolate and extrapolate; ``train.math`` scores its validation with
this module's scorer."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tpr_keras.backend.tensorflow.shared_traces import shared_traces
from tpr_keras.data import mathematics


#: The scorers' arguments, ``source`` and ``target_out``: any batch size, any lengths.
SCORER_SIGNATURE = [tf.TensorSpec([None, None], tf.int32)] * 2


def _correct(model, source, target_out, max_length):
    """``bool[B]``: whether ``model``'s greedy answer is ``target_out``."""
    ids, _ = model.greedy_decode(source, max_length=max_length)
    width = tf.shape(ids)[1]
    target = tf.pad(target_out, [[0, 0], [0, width - tf.shape(target_out)[1]]])
    return tf.reduce_all(tf.equal(ids, target), axis=1)


def greedy_scorer(model, max_length: int):
    """A ``tf.function`` ``(source, target_out) -> bool[B]``: greedy answer == target.

    Traced once (any batch size, any lengths) and shared by every module's
    evaluation, so 71 splits cost one trace, not 71.
    """
    return tf.function(lambda source, target_out: _correct(model, source, target_out,
                                                           max_length),
                       input_signature=SCORER_SIGNATURE, autograph=False)


def greedy_scorers(models, max_length: int):
    """:func:`greedy_scorer` of each of ``models`` (a routed model's decoders), those of
    one architecture sharing one trace fed their own weights
    (:mod:`tpr_keras.backend.tensorflow.shared_traces`)."""
    return shared_traces(models, lambda model, source, target_out: _correct(
        model, source, target_out, max_length), SCORER_SIGNATURE)


def greedy_accuracy(scorer, dataset) -> float:
    """Exact match (%) of greedy answers over ``dataset``, whole answer + end symbol."""
    hits = [scorer(f["source"], l["target_out"]).numpy() for f, l in dataset]
    return float(100.0 * np.concatenate(hits).mean()) if hits else float("nan")


def routed_accuracy(model, scorers, templates, vocab, split, batch_size) -> float:
    """Exact match (%) over ``split`` of a routed model (``RoutedTPTransformer``): each
    question answered by the decoder of the module its wording has (``templates``), as
    the served model does; ``scorers[r]`` scores route ``r``'s decoder."""
    texts = [vocab.decode(split.question(i)) for i in range(len(split))]
    routes = model.routes([templates.module_of(text) for text in texts])
    hits = 0.0
    for route, scorer in enumerate(scorers):
        rows = np.flatnonzero(routes == route)
        if rows.size:
            part = mathematics.make_dataset(split.take(rows), batch_size)
            hits += greedy_accuracy(scorer, part) * rows.size
    return hits / len(split) if len(split) else float("nan")


def math_table(model, vocab, data_dir, modules, limit: int | None = None,
               batch_size: int = 256, download: bool = False,
               templates=None) -> dict[str, Any]:
    """Greedy exact match % per module of a TP-Transformer, interpolate and extrapolate.

    Args:
        model: A :class:`~tpr_keras.models.TPTransformer` or a ``RoutedTPTransformer``.
        vocab: Its :class:`~tpr_keras.data.mathematics.CharVocabulary`.
        data_dir: Where the Mathematics Dataset is.
        modules: Module names or globs (their training files are not read).
        limit: Only the first N questions of every file.
        templates: The preset's ``ModuleTemplates``: a routed model needs them (each
            question goes to the decoder of the module its wording has).

    Returns:
        ``{"interpolate_accuracy_percent": {module: ...}, "extrapolate_accuracy_percent":
        {...}, "summary": {regime: {"modules", "mean", "above_95"}}}``.
    """
    return math_tables(model, vocab, data_dir, modules, [limit], batch_size, download,
                       templates)[0]


def math_tables(model, vocab, data_dir, modules, limits, batch_size: int = 256,
                download: bool = False, templates=None) -> list[dict[str, Any]]:
    """:func:`math_table` for each of ``limits`` (None: the whole files), the model's
    scorers traced once for all of them: a command that records a preset's full table and
    its sample table decodes with one trace per decoder architecture, not two."""
    if not isinstance(modules, str):
        modules = tuple(modules)
    if callable(getattr(model, "routes", None)):
        if templates is None:
            raise ValueError("a routed model answers by module: pass the preset's module "
                             "templates")
        scorers = greedy_scorers(model.decoders(), model.max_decode_length)

        def accuracy(split):
            return routed_accuracy(model, scorers, templates, vocab, split, batch_size)
    else:
        scorer = greedy_scorer(model, model.max_decode_length)

        def accuracy(split):
            return greedy_accuracy(scorer, mathematics.make_dataset(split, batch_size))
    tables = []
    for limit in limits:
        data = mathematics.load_mathematics(data_dir, modules=modules, vocab=vocab,
                                            difficulties=(), limit_per_file=limit,
                                            download=download)
        tables.append(_table({regime: {module: accuracy(split) for module, split in
                                       getattr(data, regime).items()}
                              for regime in ("interpolate", "extrapolate")}))
    return tables


def _table(scores: dict[str, dict[str, float]]) -> dict[str, Any]:
    """``{regime: {module: %}}`` as :func:`math_table` returns it, with its summary."""
    table: dict[str, Any] = {}
    summary = {}
    for regime, regime_scores in scores.items():
        table[f"{regime}_accuracy_percent"] = regime_scores
        if regime_scores:
            summary[regime] = {"modules": len(regime_scores),
                               "mean": float(np.mean(list(regime_scores.values()))),
                               "above_95": sum(s > 95 for s in regime_scores.values())}
    table["summary"] = summary
    return table
