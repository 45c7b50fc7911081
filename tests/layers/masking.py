"""Shared by the layer tests' masking checks: the layer in a functional model fed by
``keras.layers.Embedding(mask_zero=True)``, padded batches against each sequence alone."""

import warnings

import keras
import numpy as np

from tpr_keras import testing

#: What Keras warns when a layer drops an input's mask.
MASK_WARNING = "does not support masking"
EPS = float(np.finfo(np.float32).eps)
#: Three sequences padded with id 0 to one length.
IDS = np.array([[3, 5, 7, 2, 0, 0], [4, 1, 9, 0, 0, 0], [6, 8, 2, 5, 11, 10]], "int32")
LENGTHS = (IDS > 0).sum(1)
REAL = np.arange(IDS.shape[1])[None] < LENGTHS[:, None]


def tolerance(*reductions, scale=1.0):
    """float32 bound: a few ulps per term of each reduction, times the values' scale."""
    return 4 * EPS * sum(reductions) * scale


def mask_warnings(fn):
    """``fn()`` and the masking warnings Keras gave while it ran."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [str(w.message) for w in caught if MASK_WARNING in str(w.message)]


def masked_model(layer, width=4, pool=True, vocabulary=12, seed=0):
    """``Embedding(mask_zero=True) -> layer``; with ``pool`` also a
    ``GlobalAveragePooling1D`` of the layer's output, which averages real positions only
    if the layer passes the mask on. Returns the model and the masking warnings."""

    def build():
        ids = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(
            vocabulary, width, mask_zero=True,
            embeddings_initializer=keras.initializers.RandomNormal(seed=seed))(ids)
        y = layer(x)
        outputs = [y, keras.layers.GlobalAveragePooling1D()(y)] if pool else [y]
        return keras.Model(ids, outputs)

    return mask_warnings(build)


def unpadded(model, output=0):
    """Each row of :data:`IDS` run alone, without its padding."""
    rows = []
    for i, n in enumerate(LENGTHS):
        out = model(IDS[i:i + 1, :n])
        rows.append(testing.numpy(out[output] if isinstance(out, (list, tuple)) else out)[0])
    return rows


def check_propagates(layer, *reductions, width=4):
    """The layer keeps the time axis and passes the mask on: no warning, real positions
    as without padding, and a pooling after it averages the real positions only."""
    model, warned = masked_model(layer, width=width)
    assert warned == []
    (out, pooled), warned = mask_warnings(lambda: [testing.numpy(t) for t in model(IDS)])
    assert warned == []
    tol = tolerance(*reductions, scale=max(1.0, np.abs(out).max()))
    for i, row in enumerate(unpadded(model)):
        np.testing.assert_allclose(out[i, :LENGTHS[i]], row, rtol=0, atol=tol)
    mean = [out[i, :n].mean(0) for i, n in enumerate(LENGTHS)]
    np.testing.assert_allclose(pooled, mean, rtol=0, atol=tol + tolerance(IDS.shape[1]))
    return model, out
