"""How a preset stores its weights: float32 (Keras' own file), float16 (half the bytes) or
int8 (weight matrices in a quarter of the bytes).

A float16 weights file holds each float32 weight rounded to the nearest IEEE half-precision
number (11 significant bits, magnitudes up to 65,504). Keras' ``load_weights`` casts it back
into the model's float32 variables, so a model loaded from it computes in float32 with
exactly the rounded values. A command that ships float16 weights therefore rounds the model
first (:func:`round_weights`) and evaluates the rounded model: the scores it records are the
stored weights' scores, and :func:`store_weights` refuses a file whose weights were not
rounded, so nothing is stored that was not measured.

An int8 file holds each weight matrix (an array of two or more axes) that is exactly
``q * scale`` for 8-bit integers ``q`` (-127..127) and one float32 ``scale`` per output
channel (its last axis) as those integers, the scales in the array's ``int8_scale``
attribute; every other float32 weight as float16. :func:`round_weights` with ``"int8"``
quantises the model's matrices so (``scale`` = the channel's largest magnitude / 127,
``q`` its values divided by it and rounded) and its vectors to float16; it can quantise
some layers only (a routed preset's experts), the rest rounded to float16 first, since
:func:`store_weights` stores each array in the first form that holds it exactly.
Keras' loader reads no scales: :func:`keras_readable` hands it a float32 copy of such a
file, every matrix ``q * scale`` computed in float32 as :func:`round_weights` computed it.

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

import contextlib
import os
import tempfile
from collections.abc import Iterator

import numpy as np

#: The weights' storage types a preset may have; float32 is Keras' file as written.
WEIGHTS_DTYPES = ("float32", "float16", "int8")
#: The attribute of an int8 array that holds its float32 scale per output channel.
SCALE_ATTRIBUTE = "int8_scale"


def _check_dtype(dtype: str) -> np.dtype:
    if dtype not in WEIGHTS_DTYPES:
        raise ValueError(f"weights_dtype must be one of {WEIGHTS_DTYPES}, got {dtype!r}")
    return np.dtype(dtype)


def _channels(values: np.ndarray) -> np.ndarray:
    """``values`` as rows of output channels (its last axis)."""
    return values.reshape(-1, values.shape[-1])


def quantized(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(q int8, scale float32 per channel)`` of a float32 matrix: ``scale`` is each output
    channel's (last axis') largest magnitude / 127 (1 for a channel of zeros), ``q`` the
    values divided by it and rounded."""
    rows = _channels(values)
    largest = np.max(np.abs(rows), axis=0)
    scale = np.where(largest > 0, largest / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(rows / scale), -127, 127).astype(np.int8)
    return q.reshape(values.shape), scale


def dequantized(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``q * scale`` in float32, channel by channel: what a quantised weight holds."""
    return q.astype(np.float32) * np.asarray(scale, np.float32)


def exact_int8(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(q, scale)`` whose :func:`dequantized` equals the float32 matrix ``values`` bit for
    bit, or None when there is none (the matrix was not quantised by :func:`round_weights`).
    A quantised channel's scale is recomputed from its largest value, which can round to a
    neighbouring float32: the two nearest on each side are tried too."""
    if values.ndim < 2 or values.dtype != np.float32 or not np.all(np.isfinite(values)):
        return None
    rows = _channels(values)
    _, first = quantized(values)
    scale = np.full_like(first, np.nan)
    candidates, up, down = [first], first, first
    for _ in range(2):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0))
        candidates += [up, down]
    for candidate in candidates:
        q = np.rint(rows / candidate)
        fits = np.all((np.abs(q) <= 127) & (dequantized(q, candidate) == rows), axis=0)
        scale = np.where(np.isnan(scale) & fits, candidate, scale)
    if np.isnan(scale).any():
        return None
    q = np.rint(rows / scale).astype(np.int8).reshape(values.shape)
    return q, scale.astype(np.float32)


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
    if target == np.int8:
        if values.ndim >= 2 and np.all(np.isfinite(values)):
            return dequantized(*quantized(values))
        target = np.dtype(np.float16)  # vectors (biases, norms) as float16
    limit = float(np.finfo(target).max)
    finite = values[np.isfinite(values)]
    if finite.size and float(np.max(np.abs(finite))) > limit:
        raise ValueError(f"{name}: a value of magnitude {float(np.max(np.abs(finite))):.4g} "
                         f"does not fit {target} (at most {limit:g}); store it as float32")
    return values.astype(target).astype(np.float32)


def round_weights(model, dtype: str = "float16") -> int:
    """Assigns every float32 weight of ``model`` (a model or a layer) its value rounded to
    ``dtype`` (``"int8"``: matrices quantised, vectors float16); returns how many weights
    changed. Integer weights (counters, ids) are left as they are."""
    changed = 0
    for variable in model.weights:
        value = np.asarray(variable.numpy())
        new = rounded(value, dtype, variable.path)
        if new is not value and not np.array_equal(new, value):
            variable.assign(new)
            changed += 1
    return changed


def _rewrite(path: str, out_path: str, convert, libver: str | None = None) -> None:
    """Copies the HDF5 file ``path`` to ``out_path`` (groups and attributes as they are),
    each array and its attributes through ``convert(name, array, attrs) -> (array, attrs)``."""
    import h5py  # Keras' own weights-file dependency

    def copy(source, out):
        for key, value in source.attrs.items():
            out.attrs[key] = value
        for name, item in source.items():
            if isinstance(item, h5py.Group):
                copy(item, out.create_group(name))
                continue
            data, attrs = convert(item.name, item[()], dict(item.attrs))
            dataset = out.create_dataset(name, data=data)
            for key, value in attrs.items():
                dataset.attrs[key] = value

    with h5py.File(path, "r") as source, h5py.File(out_path, "w", libver=libver) as out:
        copy(source, out)


def store_weights(path: str | os.PathLike, dtype: str) -> None:
    """Rewrites the Keras weights file at ``path`` with its float32 arrays stored as
    ``dtype`` (its groups, attributes and other arrays as they are), in HDF5's 1.8
    object format. ``"int8"``: each matrix that is exactly quantised as int8 with its
    scales (:func:`exact_int8`), every other float32 array as float16.

    Raises:
        ValueError: an array whose values ``dtype`` cannot hold exactly (the model was not
            rounded with :func:`round_weights` before it was saved), naming it.
    """
    target = _check_dtype(dtype)
    if target == np.float32:
        return
    path = os.fspath(path)
    staged = path + ".stored"

    def convert(name, data, attrs):
        if not isinstance(data, np.ndarray) or data.dtype != np.float32:
            return data, attrs
        if target == np.int8:
            exact = exact_int8(data)
            if exact is not None:
                return exact[0], {**attrs, SCALE_ATTRIBUTE: exact[1]}
        narrow = data.astype(np.float16 if target == np.int8 else target)
        if not np.array_equal(narrow.astype(np.float32), data, equal_nan=True):
            raise ValueError(f"{path}: {name} holds values {dtype} cannot hold exactly; "
                             "round the model's weights first (round_weights), so that "
                             "what is stored is what was evaluated")
        return narrow, attrs

    try:
        _rewrite(path, staged, convert, libver="v108")
        os.replace(staged, path)
    finally:
        if os.path.exists(staged):
            os.remove(staged)


@contextlib.contextmanager
def keras_readable(path: str | os.PathLike) -> Iterator[str]:
    """The weights file at ``path`` as Keras' ``load_weights`` reads it: the file itself, or,
    when it holds int8 arrays, a temporary float32 copy with each of them
    :func:`dequantized` (removed on exit)."""
    import h5py

    path = os.fspath(path)
    found = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda _, item: found.append(True) if isinstance(item, h5py.Dataset)
                     and SCALE_ATTRIBUTE in item.attrs else None)
    if not found:
        yield path
        return

    def convert(_, data, attrs):
        scale = attrs.pop(SCALE_ATTRIBUTE, None)
        return (data, attrs) if scale is None else (dequantized(data, scale), attrs)

    with tempfile.TemporaryDirectory(prefix="tpr_keras_weights_") as folder:
        copy = os.path.join(folder, os.path.basename(path))
        _rewrite(path, copy, convert)
        yield copy
