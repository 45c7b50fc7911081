"""Reads a PyTorch ``torch.save`` file into NumPy arrays without PyTorch.

Two layouts of ``torch.save`` exist: the zip archive written since PyTorch 1.6
(``<name>/data.pkl`` beside one raw file per storage, ``<name>/data/<key>``) and the
earlier stream (a magic number, the protocol version and system information pickled one
after the other, then the object's pickle, the list of storage keys and each storage's
bytes, each preceded by its element count as a little-endian int64). The authors'
TP-Transformer code ran on PyTorch 1.1, which writes the stream; PyTorch 2 writes the zip.

Both hold a pickle whose tensors point to storages by "persistent id". The unpickler here
resolves only the names a checkpoint of tensors, dicts, lists and numbers needs
(``torch._utils._rebuild_tensor_v2``, ``_rebuild_parameter``, the typed storages, the
ordered and default dicts) and refuses every other global, so reading a file never runs
code from it; a tensor becomes a ``numpy.ndarray`` of its dtype, shape, strides and
storage offset. The same unpickler reads the pickled torchtext vocabulary of their
just-in-time loader (``vocab.pt``: a ``torchtext.vocab.Vocab``, whose ``itos`` becomes a
plain attribute of :class:`PickledObject`) and the NumPy arrays of other pickles
(:func:`load_pickle`).

PyTorch is not used even where it is installed: one reader, the one the tests check
against files PyTorch wrote, serves every machine.
"""

import collections
import io
import pickle
import struct
import zipfile

import numpy as np

#: ``torch.<name>`` storage classes -> NumPy dtypes (bfloat16 has no NumPy dtype).
STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


class PickledObject:
    """An instance of a class outside the allowed names that a pickle builds by state
    only (a torchtext ``Vocab``): its state becomes attributes; no code of the class
    runs. ``class_path`` names the class it stands for."""

    class_path = ""

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slots state)
            state = dict(state[0] or {}, **(state[1] or {}))
        self.__dict__.update(state if isinstance(state, dict) else {"state": state})

    def __repr__(self):
        return f"PickledObject({self.class_path})"


def _stand_in(path):
    return type(path.rsplit(".", 1)[-1], (PickledObject,), {"class_path": path})


def _default_zero():
    return 0


class _StorageType:
    def __init__(self, name):
        self.dtype = np.dtype(STORAGE_DTYPES[name])


def _rebuild_tensor(storage, offset, size, stride, *unused):
    dtype, buffer = storage
    flat = np.frombuffer(buffer, dtype=dtype)
    if not size:
        return flat[offset].copy().reshape(())
    strides = tuple(s * dtype.itemsize for s in stride)
    return np.lib.stride_tricks.as_strided(flat[offset:], tuple(size), strides).copy()


def _rebuild_any(storage, *args):
    if isinstance(storage, _LazyStorage):  # the legacy stream: rebuilt after its bytes
        return _DeferredTensor(storage, *args)
    return _rebuild_tensor(storage, *args)


def _rebuild_parameter(data, *unused):
    return data


_MULTIARRAY = getattr(np, "_core", None) or np.core


#: The globals a checkpoint, a torchtext vocabulary or a NumPy pickle may name.
ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "defaultdict"): collections.defaultdict,
    ("collections", "Counter"): collections.Counter,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_any,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torchtext.vocab", "Vocab"): _stand_in("torchtext.vocab.Vocab"),
    ("torchtext.vocab", "_default_unk_index"): _default_zero,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}
for _module in ("numpy.core.multiarray", "numpy._core.multiarray"):
    ALLOWED[(_module, "_reconstruct")] = _MULTIARRAY.multiarray._reconstruct
    ALLOWED[(_module, "scalar")] = _MULTIARRAY.multiarray.scalar
ALLOWED.update({("torch", name): _StorageType(name) for name in STORAGE_DTYPES})


class SafeUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` resolving only :data:`ALLOWED` globals; storages come from
    ``storage_bytes(key, dtype, numel)``."""

    def __init__(self, file, storage_bytes=None):
        super().__init__(file, encoding="latin1")
        self._storage_bytes = storage_bytes
        self.storages = {}

    def find_class(self, module, name):
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"{module}.{name}: not a name a checkpoint of tensors holds; refused "
                "(tools/checkpoint_conversion/torch_checkpoint.py lists the allowed "
                "ones)") from None

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        storage_type, key, numel = pid[1], str(pid[2]), pid[4]
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"unsupported storage type {storage_type!r}")
        if len(pid) > 5 and pid[5] is not None:
            raise pickle.UnpicklingError("storage views (PyTorch < 0.4) are not supported")
        if key not in self.storages:
            self.storages[key] = (storage_type.dtype, numel)
        if self._storage_bytes is None:  # the legacy stream: bytes follow the pickle
            return _LazyStorage(self, key)
        return storage_type.dtype, self._storage_bytes(key, storage_type.dtype, numel)


class _LazyStorage:
    """A storage of the legacy stream, whose bytes come after the pickle."""

    def __init__(self, unpickler, key):
        self.unpickler, self.key = unpickler, key


def _read_zip(path):
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise ValueError(f"{path}: a zip without one data.pkl; not a torch.save file")
        prefix = pickles[0][:-len("data.pkl")]
        order = archive.read(prefix + "byteorder").decode() if (
            prefix + "byteorder") in names else "little"
        if order != "little":
            raise ValueError(f"{path}: big-endian storages are not supported")

        def storage_bytes(key, dtype, numel):
            data = archive.read(f"{prefix}data/{key}")
            return data[:numel * dtype.itemsize]

        return SafeUnpickler(io.BytesIO(archive.read(pickles[0])), storage_bytes).load()


def _read_legacy(path):
    with open(path, "rb") as f:
        try:
            magic = SafeUnpickler(f).load()
        except (pickle.UnpicklingError, EOFError, ValueError):
            magic = None
        if magic != LEGACY_MAGIC:
            raise ValueError(f"{path}: neither a zip nor a legacy torch.save file")
        SafeUnpickler(f).load()  # protocol version
        SafeUnpickler(f).load()  # system information (a dict of numbers)
        unpickler = SafeUnpickler(f)
        result = unpickler.load()
        keys = SafeUnpickler(f).load()
        data = {}
        for key in keys:
            (numel,) = struct.unpack("<q", f.read(8))
            dtype = unpickler.storages[str(key)][0]
            data[str(key)] = (dtype, f.read(numel * dtype.itemsize))
    return _resolve(result, data)


def _resolve(value, data):
    """Rebuilds the tensors of a legacy pickle once its storages' bytes are read."""
    if isinstance(value, _DeferredTensor):
        return _rebuild_tensor(data[value.storage.key], *value.args)
    if isinstance(value, dict):
        resolved = {k: _resolve(v, data) for k, v in value.items()}
        value.clear()  # keeps the mapping's type (OrderedDict, defaultdict)
        value.update(resolved)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve(v, data) for v in value)
    return value


class _DeferredTensor:
    def __init__(self, storage, *args):
        self.storage, self.args = storage, args



def load(path):
    """The object ``torch.save`` wrote to ``path`` (zip or legacy stream), tensors as
    ``numpy.ndarray``.

    Raises:
        pickle.UnpicklingError: the file names a global outside :data:`ALLOWED`.
        ValueError: not a ``torch.save`` file.
    """
    if zipfile.is_zipfile(path):
        return _read_zip(path)
    return _read_legacy(path)


def load_pickle(path):
    """A plain pickle (a cache of NumPy arrays and dicts) read with the same refusals."""
    with open(path, "rb") as f:
        return SafeUnpickler(f).load()
