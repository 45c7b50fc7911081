"""The logical entailment table: accuracy % per split (validate and the five test sets) of
a trained model, an answer being its logit > 0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tpr_keras.data import entailment

#: The entailment splits every table reports, in the paper's column order.
ENTAILMENT_SPLITS = entailment.EVALUATION_SPLITS


def entailment_table(model, data_dir, splits: Sequence[str] = ENTAILMENT_SPLITS,
                     limit: int | None = None, batch_size: int = 256) -> dict[str, Any]:
    """Accuracy % per split of an entailment model (``{"a", "b"}`` ids -> one logit).

    Returns:
        ``{"accuracy_percent": {split: ...}, "pairs": {split: n}}``.

    Raises:
        FileNotFoundError: a split's file is missing (the message names it).
    """
    @tf.function(reduce_retracing=True, autograph=False)  # lengths differ: one general trace
    def correct(features, labels):
        logits = tf.reshape(tf.cast(model(features, training=False), tf.float32), [-1])
        return tf.equal(tf.cast(logits > 0, tf.int32),
                        tf.reshape(tf.cast(labels, tf.int32), [-1]))

    accuracy, pairs = {}, {}
    for name in splits:
        data = entailment.load_entailment_split(name, data_dir)
        if limit:
            data = entailment.EntailmentData(data.a[:limit], data.b[:limit],
                                             data.labels[:limit], data.heuristics[:limit])
        hits = np.concatenate([correct(f, y).numpy()
                               for f, y in entailment.make_dataset(data, batch_size)])
        accuracy[name] = float(100.0 * hits.mean())
        pairs[name] = int(hits.size)
    return {"accuracy_percent": accuracy, "pairs": pairs}
