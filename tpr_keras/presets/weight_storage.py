"""How a preset stores its weights: float32 (Keras' own file) or float16 (half the bytes).

A float16 weights file holds each float32 weight rounded to the nearest IEEE half-precision
number (11 significant bits, magnitudes up to 65,504). Keras' ``load_weights`` casts it back
into the model's float32 variables, so a model loaded from it computes in float32 with
exactly the rounded values. A command that ships float16 weights therefore rounds the model
first (:func:`round_weights`) and evaluates the rounded model: the scores it records are the
stored weights' scores, and :func:`store_weights` refuses a file whose weights were not
rounded, so nothing is stored that was not measured.

The float16 file is also written in HDF5's 1.8 object format (``libver="v108"``), whose
groups keep their links in their own headers instead of a B-tree and heap each: Keras'
file has a group per layer and per weight list, which in the default (1.6) format cost
0.53 MB of the 4.11 MB file of six `tiny` TP-Transformers. The groups, arrays and
attributes are the same; h5py (Keras' reader) reads both formats.

Example:
>>> round_weights(model, "float16")            # doctest: +SKIP
>>> table = evaluate(model)                    # what will be stored   # doctest: +SKIP
>>> save_preset(model, path, weights_dtype="float16")  # doctest: +SKIP

Importing this module does not import TensorFlow or Keras.
"""

from __future__ import annotations

import os

import numpy as np

#: The weights' storage types a preset may have; float32 is Keras' file as written.
WEIGHTS_DTYPES = ("float32", "float16")


def _check_dtype(dtype: str) -> np.dtype:
    if dtype not in WEIGHTS_DTYPES:
        raise ValueError(f"weights_dtype must be one of {WEIGHTS_DTYPES}, got {dtype!r}")
    return np.dtype(dtype)


def rounded(values: np.ndarray, dtype: str, name: str = "a weight") -> np.ndarray:
    """``values`` (float32) rounded to ``dtype`` and back to float32.

    Raises:
        ValueError: a finite value outside ``dtype``'s range (it would become infinite),
            naming ``name``.
    """
    target = _check_dtype(dtype)
    values = np.asarray(values)
    if target == np.float32 or values.dtype != np.float32:
        return values
    limit = float(np.finfo(target).max)
    finite = values[np.isfinite(values)]
    if finite.size and float(np.max(np.abs(finite))) > limit:
        raise ValueError(f"{name}: a value of magnitude {float(np.max(np.abs(finite))):.4g} "
                         f"does not fit {dtype} (at most {limit:g}); store it as float32")
    return values.astype(target).astype(np.float32)


def round_weights(model, dtype: str = "float16") -> int:
    """Assigns every float32 weight of ``model`` its value rounded to ``dtype``; returns how
    many weights changed. Integer weights (counters, ids) are left as they are."""
    changed = 0
    for variable in model.weights:
        value = np.asarray(variable.numpy())
        new = rounded(value, dtype, variable.path)
        if new is not value and not np.array_equal(new, value):
            variable.assign(new)
            changed += 1
    return changed


def store_weights(path: str | os.PathLike, dtype: str) -> None:
    """Rewrites the Keras weights file at ``path`` with its float32 arrays stored as
    ``dtype`` (its groups, attributes and other arrays as they are), in HDF5's 1.8
    object format.

    Raises:
        ValueError: an array whose values ``dtype`` cannot hold exactly (the model was not
            rounded with :func:`round_weights` before it was saved), naming it.
    """
    import h5py  # Keras' own weights-file dependency

    target = _check_dtype(dtype)
    if target == np.float32:
        return
    path = os.fspath(path)
    staged = path + ".stored"

    def copy(source, out):
        for key, value in source.attrs.items():
            out.attrs[key] = value
        for name, item in source.items():
            if isinstance(item, h5py.Group):
                copy(item, out.create_group(name))
                continue
            data = item[()]
            if isinstance(data, np.ndarray) and data.dtype == np.float32:
                narrow = data.astype(target)
                if not np.array_equal(narrow.astype(np.float32), data, equal_nan=True):
                    raise ValueError(f"{path}: {item.name} holds values {dtype} cannot hold "
                                     "exactly; round the model's weights first "
                                     "(round_weights), so that what is stored is what "
                                     "was evaluated")
                data = narrow
            dataset = out.create_dataset(name, data=data)
            for key, value in item.attrs.items():
                dataset.attrs[key] = value

    try:
        with h5py.File(path, "r") as source, h5py.File(staged, "w", libver="v108") as out:
            copy(source, out)
        os.replace(staged, path)
    finally:
        if os.path.exists(staged):
            os.remove(staged)
