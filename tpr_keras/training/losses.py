"""Per-example losses of the train commands, in ``keras.ops`` (any backend).

A ``compute_fn(model, features, labels, training)`` returns ``{"loss": float32[B],
"correct": float32[B]}``; the trainers sum them over a batch (weighted by
``labels["weight"]`` where the batch carries one, see
:class:`~tpr_keras.data.babi.batches.NumpyBatches`). Losses are computed in float32
whatever the model's dtype policy.
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
