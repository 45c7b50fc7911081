"""Every model must survive tf.train.Checkpoint (what Trainer uses) with no weight missed.

Keras keeps sub-layers held in Python lists out of TF's checkpoint graph, so a
model can round-trip through ``.keras`` and still lose weights on resume.
"""

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.models import (
    TPRRNN,
    BiDAFEntailmentModel,
    MemN2N,
    PlainEntailmentModel,
    TPTransformer,
)

BUILDERS = {
    "tpr_rnn": lambda: TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6),
    "plain_tpru": lambda: PlainEntailmentModel(units=8, cell="tpru", num_roles=4),
    "plain_lstm": lambda: PlainEntailmentModel(units=8, cell="lstm"),
    "bidaf_tpru": lambda: BiDAFEntailmentModel(units=8, cell="tpru", num_roles=4),
    "tp_transformer_tiny": lambda: TPTransformer.from_paper_size("tiny", vocabulary_size=30),
    "memn2n_adjacent": lambda: MemN2N(20, 6),
    "memn2n_layer_wise": lambda: MemN2N(20, 6, weight_tying="layer_wise"),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_checkpoint_restores_every_weight(name, tmp_path):
    model = BUILDERS[name]()
    assert model.weights, "model must be built by its constructor"
    checkpoint = tf.train.Checkpoint(model=model)
    path = checkpoint.write(str(tmp_path / "weights"))
    saved = [w.numpy().copy() for w in model.weights]
    for w in model.weights:
        w.assign(w + 1 if "float" in str(w.dtype) else w)
    checkpoint.read(path).assert_consumed()
    for w, value in zip(model.weights, saved):
        np.testing.assert_array_equal(w.numpy(), value, err_msg=f"{name}: {w.path}")
