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


def sequence_cross_entropy(pad_id=0, reduction="sum", label_key="target_out"):
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
    separate evaluation). In
    float32 whatever the model's compute dtype; a caller may compile it (XLA:
    ``tf.function(compute, jit_compile=True)``).

    Args:
        pad_id: the padding id, masked out of loss and match (the Mathematics
            vocabulary's ``CharVocabulary.PAD_ID`` is 0).
        reduction: ``"sum"``, ``"mean"`` or ``"batch_token_mean"`` (above).
        label_key: the ``labels`` entry holding the ``int32[B, L]`` targets.

    Returns:
        ``compute(model, features, labels, training) -> {"loss": float32[B],
        "correct": float32[B]}``; ``model(features)`` gives ``[B, L, V]`` logits.

    Example:
    >>> compute = sequence_cross_entropy(reduction="mean")
    """
    if reduction not in SEQUENCE_REDUCTIONS:
        raise ValueError(f"reduction must be one of {SEQUENCE_REDUCTIONS}; got "
                         f"{reduction!r}.")

    def compute(model, features, labels, training):
        logits = ops.cast(model(features, training=training), "float32")
        target = ops.cast(labels[label_key], "int32")
        real = ops.not_equal(target, pad_id)
        weights = ops.cast(real, "float32")
        tokens = ops.sparse_categorical_crossentropy(target, logits, from_logits=True)
        loss = ops.sum(tokens * weights, axis=-1)
        if reduction == "mean":
            loss = loss / ops.maximum(ops.sum(weights, axis=-1), 1.0)
        elif reduction == "batch_token_mean":
            examples = ops.cast(ops.shape(weights)[0], "float32")
            loss = loss * (examples / ops.maximum(ops.sum(weights), 1.0))
        prediction = ops.cast(ops.argmax(logits, axis=-1), "int32")
        match = ops.logical_or(ops.equal(prediction, target), ops.logical_not(real))
        correct = ops.cast(ops.all(match, axis=-1), "float32")
        return {"loss": loss, "correct": correct}

    return compute
