"""Per-example losses of the train commands, in ``keras.ops`` (any backend).

They stand below the models and the trainers (as ``keras.losses`` stands below Keras'
models and trainers) so that a model family can name its loss (the TP-Transformer's
``sequence_compute_fn``) without importing the training package; they import nothing of
``tpr_keras``. ``tpr_keras.training.losses`` is the same functions under their older path.

A ``compute_fn(model, features, labels, training)`` returns ``{"loss": float32[B],
"correct": float32[B]}``; the trainers sum them over a batch (weighted by
``labels["weight"]`` where the batch carries one, see
:class:`~tpr_keras.data.babi.batches.NumpyBatches`). Losses are computed in float32
whatever the model's dtype policy.

* :func:`sparse_classification` — one label per example (bAbI's answer word);
* :func:`binary_classification` — one logit per example (entailment);
* :func:`sequence_cross_entropy` — a masked token sequence under teacher forcing (the
  TP-Transformer's answer; also ``tpr_keras.models.sequence_compute_fn``).
"""

import keras
from keras import ops


def sparse_classification(label_key):
    """A ``compute_fn`` for single-label classification from logits.

    Returns per-example ``loss`` (softmax cross-entropy) and ``correct``.
    """

    def compute(model, features, labels, training):
        logits = ops.cast(model(features, training=training), "float32")
        target = ops.cast(labels[label_key], "int32")
        loss = ops.sparse_categorical_crossentropy(target, logits, from_logits=True)
        prediction = ops.cast(ops.argmax(logits, axis=-1), "int32")
        correct = ops.cast(ops.equal(prediction, target), "float32")
        return {"loss": loss, "correct": correct}

    return compute


def binary_classification(label_key=None):
    """A ``compute_fn`` for one-logit binary classification.

    Labels are 0/1 (``labels[label_key]``, or ``labels`` itself when
    ``label_key`` is None); the loss is sigmoid cross-entropy.
    """

    def compute(model, features, labels, training):
        logits = ops.reshape(ops.cast(model(features, training=training), "float32"), [-1])
        target = labels if label_key is None else labels[label_key]
        target = ops.reshape(ops.cast(target, "float32"), [-1])
        loss = ops.binary_crossentropy(target, logits, from_logits=True)
        correct = ops.cast(ops.equal(ops.cast(logits > 0, "float32"), target), "float32")
        return {"loss": loss, "correct": correct}

    return compute


#: The ``reduction`` values of :func:`sequence_cross_entropy`.
SEQUENCE_REDUCTIONS = ("sum", "mean", "batch_token_mean")


#: How :func:`length_grouped_terms` cuts a sorted batch: where the fewest padded positions
#: of the sort key remain, or into runs of equal count.
GROUP_CUTS = ("padding", "equal")


def sequence_cross_entropy(pad_id=0, reduction="sum", label_key="target_out", length_groups=1,
                           sort_key="source", group_cuts="padding", target_groups=1,
                           group_multiple=1):
    """A ``compute_fn`` for a token sequence under teacher forcing, pad positions masked.

    Schlag et al. (2019), §4.1: the TP-Transformer is trained with the token
    cross-entropy of the answer. Per example: ``loss`` = token cross-entropy over the
    non-pad positions of ``labels[label_key]``, summed (``reduction="sum"``; the
    Trainer's batch mean is then the authors' per-token mean times the mean answer
    length), averaged (``"mean"``) or summed and scaled by ``B / N`` with ``N`` the
    batch's real tokens (``"batch_token_mean"``: the Trainer's batch mean is then the
    mean over the batch's tokens, PyTorch's ``CrossEntropyLoss(ignore_index=pad)`` as
    the authors trained, and a global-norm clip acts in their units; on several
    replicas each replica's batch is scaled by its own tokens); ``correct`` = 1 when
    the argmax of every non-pad position equals the target, end symbol included (exact
    match of the whole answer under teacher forcing; the greedy exact match is a
    separate evaluation). In float32 whatever the model's compute dtype; a caller may
    compile it (XLA: ``tf.function(compute, jit_compile=True)``).

    Args:
        pad_id: the padding id, masked out of loss and match (the Mathematics
            vocabulary's ``CharVocabulary.PAD_ID`` is 0).
        reduction: ``"sum"``, ``"mean"`` or ``"batch_token_mean"`` (above).
        label_key: the ``labels`` entry holding the ``int32[B, L]`` targets.
        length_groups: run the model on this many groups of the batch's examples,
            sorted by the real length of ``features[sort_key]``, each trimmed to its own
            longest sequences (see :func:`length_grouped_terms`), so that a padded
            batch spends no products on most of its padding. Every
            example's loss and match are those of the whole batch's call up to float
            rounding (padding is masked everywhere), in the batch's order, and
            ``batch_token_mean`` still divides by the whole batch's tokens, so the
            gradient is the whole batch's. TensorFlow only (the groups' shapes are
            known only when the step runs); 1 (default): one call on the whole batch.
        sort_key: the feature the groups are sorted by (the model's longest input).
        group_cuts: ``"padding"`` (default): the cuts that leave the fewest padded
            positions of ``features[sort_key]`` (:func:`padding_cuts`); ``"equal"``:
            groups of equal count.
        target_groups: cut each of the ``length_groups`` again into this many, sorted
            by the answer's length (the decoder's time axis), the same way: the model
            runs ``length_groups * target_groups`` times on parts padded to their own
            question and answer lengths. TensorFlow only; 1 (default): no second cut.
        group_multiple: cut the parts at row counts and pad them to lengths that are
            multiples of this (at most the batch's), so that batches share part shapes
            and the CPU kernels planned per shape are reused. 1 (default): exact cuts.

    Returns:
        ``compute(model, features, labels, training) -> {"loss": float32[B],
        "correct": float32[B]}``; ``model(features)`` gives ``[B, L, V]`` logits.

    Example:
    >>> compute = sequence_cross_entropy(reduction="mean")
    """
    _check_sequence_options(reduction, length_groups, group_cuts, target_groups, group_multiple)

    def terms(model, features, target, training):
        return _sequence_terms(model(features, training=training), target, pad_id)

    def compute(model, features, labels, training):
        target = ops.cast(labels[label_key], "int32")
        if int(length_groups) * int(target_groups) > 1:
            loss, count, correct = length_grouped_terms(
                lambda f, t: terms(model, f, t, training), features, target,
                int(length_groups), pad_id, sort_key, group_cuts, int(target_groups),
                int(group_multiple))
        else:
            loss, count, correct = terms(model, features, target, training)
        if reduction == "mean":
            loss = loss / ops.maximum(count, 1.0)
        elif reduction == "batch_token_mean":
            examples = ops.cast(ops.shape(count)[0], "float32")
            loss = loss * (examples / ops.maximum(ops.sum(count), 1.0))
        return {"loss": loss, "correct": correct}

    return compute


def _sequence_terms(logits, target, pad_id):
    """Per example: the summed token loss, the real tokens and the exact match."""
    logits = ops.cast(logits, "float32")
    real = ops.not_equal(target, pad_id)
    weights = ops.cast(real, "float32")
    tokens = ops.sparse_categorical_crossentropy(target, logits, from_logits=True)
    prediction = ops.cast(ops.argmax(logits, axis=-1), "int32")
    match = ops.logical_or(ops.equal(prediction, target), ops.logical_not(real))
    return (ops.sum(tokens * weights, axis=-1), ops.sum(weights, axis=-1),
            ops.cast(ops.all(match, axis=-1), "float32"))


def _check_sequence_options(reduction, length_groups, group_cuts, target_groups=1,
                            group_multiple=1):
    """A ValueError naming the first of :func:`sequence_cross_entropy`'s options out of range."""
    if reduction not in SEQUENCE_REDUCTIONS:
        raise ValueError(f"reduction must be one of {SEQUENCE_REDUCTIONS}; got "
                         f"{reduction!r}.")
    if int(length_groups) < 1:
        raise ValueError(f"length_groups must be at least 1; got {length_groups!r}.")
    if int(target_groups) < 1:
        raise ValueError(f"target_groups must be at least 1; got {target_groups!r}.")
    if int(group_multiple) < 1:
        raise ValueError(f"group_multiple must be at least 1; got {group_multiple!r}.")
    if group_cuts not in GROUP_CUTS:
        raise ValueError(f"group_cuts must be one of {GROUP_CUTS}; got {group_cuts!r}.")


def _real_length(ids, pad_id):
    """Per row: one past the last non-pad position (0 for an all-pad row)."""
    positions = ops.arange(1, ops.shape(ids)[1] + 1, dtype="int32")
    return ops.max(ops.where(ops.not_equal(ids, pad_id), positions[None, :], 0), axis=-1)


def padding_cuts(sorted_lengths, groups, multiple=1):
    """Where to cut ascending lengths into ``groups`` runs (some maybe empty) so that
    padding each run to its longest leaves the fewest padded positions: the cut points
    ``[c_0 = 0, c_1, ..., c_groups = n]`` (scalar tensors) minimising
    ``sum_g (c_{g+1} - c_g) * sorted_lengths[c_{g+1} - 1]``, by dynamic programming over
    the ``(n + 1)^2`` runs ``[i, j)`` (a few thousand numbers for a batch of 128). With
    ``multiple`` > 1 every cut but the last is a multiple of it, and a run's length is
    its longest rounded up to a multiple of it."""
    n = ops.shape(sorted_lengths)[0]
    ends = ops.arange(n + 1, dtype="int32")
    longest = ops.concatenate([ops.zeros((1,), "int32"),
                               _round_up(ops.cast(sorted_lengths, "int32"), multiple)])
    size = ends[None, :] - ends[:, None]  # [i, j]: the run [i, j)
    allowed = ops.logical_and(size >= 0, ops.logical_or(ends[None, :] % multiple == 0,
                                                        ends[None, :] == n))
    cost = ops.where(allowed, ops.cast(size * longest[None, :], "float32"), float("inf"))
    best = ops.where(ends == 0, 0.0, float("inf"))  # no run yet: only the empty prefix
    choices = []
    for _ in range(groups):
        total = best[:, None] + cost
        choices.append(ops.cast(ops.argmin(total, axis=0), "int32"))  # best i per end j
        best = ops.min(total, axis=0)
    cuts = [ends[-1]]
    for choice in reversed(choices):
        cuts.append(ops.take(choice, cuts[-1]))
    return cuts[::-1]


def _round_up(length, multiple):
    """``length`` rounded up to a multiple of ``multiple``."""
    return length if multiple == 1 else (length + multiple - 1) // multiple * multiple


def length_grouped_terms(terms, features, target, groups, pad_id, sort_key,
                         group_cuts="padding", target_groups=1, multiple=1):
    """``terms(features, target)`` (per-example tuples ``[b]``) on ``groups`` parts of the
    batch (each cut again into ``target_groups``), returned in the batch's order.

    The examples are sorted by the real length of ``features[sort_key]`` and cut into
    ``groups`` runs, where :func:`padding_cuts` finds the fewest padded positions
    (``group_cuts="padding"``) or of equal count (``"equal"``, the last takes the
    remainder). With ``target_groups`` > 1 each run is sorted again by its examples' real
    length on the decoder's time axis (the longest of ``target`` and the other
    sequences, which share it) and cut the same way into ``target_groups`` runs: a batch
    sorted by question length alone pads its answers to about three times their real
    length (measured on the twenty everyday math modules). In each run, every ``[b, L]``
    tensor is cut to the run's longest real sequence: ``features[sort_key]`` to its own,
    the other sequences and ``target`` to their common one. Only padding at the end of a
    sequence is cut, so a model that masks its padding gives each example the values of
    the whole batch. With ``multiple`` > 1 (``group_multiple``) the runs are cut at
    multiples of it and padded to lengths that are (at most the tensors' own). TensorFlow
    (a graph of dynamic shapes): the group lengths are known only per batch.
    """
    if keras.backend.backend() != "tensorflow":
        raise ValueError("length_groups > 1 needs the TensorFlow backend (dynamic shapes); "
                         f"this is {keras.backend.backend()!r}.")
    sort_lengths = _real_length(features[sort_key], pad_id)
    step_lengths = ops.max(ops.stack([_real_length(v, pad_id) for k, v in features.items()
                                      if k != sort_key and len(v.shape) == 2]
                                     + [_real_length(target, pad_id)], axis=-1), axis=-1)
    takes = []
    for take in _cut(ops.argsort(sort_lengths), sort_lengths, groups, group_cuts, multiple):
        if target_groups > 1:
            take = ops.take(take, ops.argsort(ops.take(step_lengths, take)))
            takes += _cut(take, step_lengths, target_groups, group_cuts, multiple)
        else:
            takes.append(take)
    parts = []
    for take in takes:
        part = {k: ops.take(v, take, axis=0) for k, v in features.items()}
        source_end = ops.minimum(_round_up(ops.max(ops.take(sort_lengths, take)), multiple),
                                 ops.shape(features[sort_key])[1])
        step = ops.minimum(_round_up(ops.max(ops.take(step_lengths, take)), multiple),
                           ops.shape(target)[1])
        part = {k: v[:, :source_end] if k == sort_key
                else v[:, :step] if len(v.shape) == 2 else v for k, v in part.items()}
        parts.append(terms(part, ops.take(target, take, axis=0)[:, :step]))
    back = ops.argsort(ops.concatenate(takes, axis=0))
    return tuple(ops.take(ops.concatenate(values, axis=0), back, axis=0)
                 for values in zip(*parts))


def _cut(order, lengths, groups, group_cuts, multiple=1):
    """``order`` (indices sorted by ``lengths``) cut into ``groups`` runs, as
    :func:`length_grouped_terms` says."""
    if group_cuts == "padding":
        cuts = padding_cuts(ops.take(lengths, order), groups, multiple)
    else:
        rows = ops.shape(order)[0]
        cuts = [ops.minimum(_round_up((rows * g) // groups, multiple), rows)
                for g in range(groups)] + [rows]
    return [order[cuts[g]:cuts[g + 1]] for g in range(groups)]
