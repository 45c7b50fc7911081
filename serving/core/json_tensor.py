"""TF Serving's JSON tensor format (REST): request JSON -> numpy, numpy -> response JSON.

The reference is ``tensorflow_serving/util/json_tensor.cc``: the row format
(``"instances"``) and the columnar one (``"inputs"``); nested lists must be rectangular;
a string input takes JSON strings or ``{"b64": ...}`` objects and nothing else (a number or
boolean is a type error there, not a string); a numeric input takes numbers (booleans only
for DT_BOOL, integers only for integer dtypes, each in range). Every failure is
INVALID_ARGUMENT.

Memory: strings become an object array of ``bytes`` (one object per string, sized by the
string), never a fixed-width numpy unicode array (whose size is the longest string times
the element count). Nesting is walked level by level without recursion, and deeper than
``MAX_RANK`` levels is rejected.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from tensorflow.core.framework import types_pb2

from serving.core._tf import tf
from serving.core.status import dtype_name, invalid
from serving.core.tensors import MAX_RANK

_INT_RANGE = {types_pb2.DT_INT8: (-2**7, 2**7 - 1), types_pb2.DT_UINT8: (0, 2**8 - 1),
              types_pb2.DT_INT16: (-2**15, 2**15 - 1), types_pb2.DT_UINT16: (0, 2**16 - 1),
              types_pb2.DT_INT32: (-2**31, 2**31 - 1), types_pb2.DT_UINT32: (0, 2**32 - 1),
              types_pb2.DT_INT64: (-2**63, 2**63 - 1), types_pb2.DT_UINT64: (0, 2**64 - 1)}
_FLOATS = {types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_HALF, types_pb2.DT_BFLOAT16}


def parse_json(body: bytes) -> Any:
    """The request body as JSON (INVALID_ARGUMENT for bad JSON, bad UTF-8 or nesting too
    deep for the parser)."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise invalid(f"JSON Parse error: {exc}") from None
    except RecursionError:
        raise invalid("JSON Parse error: nested too deeply") from None


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


def shape_and_leaves(value: Any, where: str, max_rank: int = MAX_RANK) -> tuple[list[int], list]:
    """The shape of nested JSON lists and their leaves in row-major order, iteratively.

    Lists must be rectangular (json_tensor.cc: "Expecting tensor size ... but got ...").
    """
    shape: list[int] = []
    level = [value]
    while level and isinstance(level[0], list):
        n = len(level[0])
        for item in level:
            if not isinstance(item, list) or len(item) != n:
                raise invalid(f"{where}: nested lists must be rectangular (at depth "
                              f"{len(shape)}, a {_type_name(item)} of "
                              f"{len(item) if isinstance(item, list) else 1} element(s) next "
                              f"to lists of {n})")
        shape.append(n)
        if len(shape) > max_rank:
            raise invalid(f"{where}: nested more than {max_rank} lists deep")
        level = [x for item in level for x in item]
    for item in level:
        if isinstance(item, list):
            raise invalid(f"{where}: nested lists must be rectangular (a list next to a "
                          f"{_type_name(level[0])} at depth {len(shape)})")
    return shape, level


def _string_leaf(x: Any, where: str) -> bytes:
    if type(x) is str:
        try:
            return x.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape such as "\ud800"
            raise invalid(f"{where}: string is not valid Unicode (lone surrogate)") from None
    if isinstance(x, dict) and len(x) == 1 and "b64" in x and type(x["b64"]) is str:
        try:
            return base64.b64decode(x["b64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise invalid(f"{where}: invalid base64 ({exc})") from None
    raise invalid(f"{where}: JSON {_type_name(x)} {json.dumps(x)[:60]} is not of expected type "
                  "string (a DT_STRING input takes JSON strings or {\"b64\": \"...\"})")


def json_to_array(value: Any, dtype: int, where: str) -> np.ndarray:
    """A JSON value (nested lists or a scalar) -> numpy array of ``dtype``."""
    shape, leaves = shape_and_leaves(value, where)
    if dtype == types_pb2.DT_STRING:
        arr = np.empty(len(leaves), dtype=object)
        arr[:] = [x.encode("utf-8") if type(x) is str and x.isascii() else _string_leaf(x, where)
                  for x in leaves]
        return arr.reshape(shape)
    if dtype == types_pb2.DT_BOOL:
        bad = next((x for x in leaves if type(x) is not bool), None)
        if bad is not None:
            raise invalid(f"{where}: JSON {_type_name(bad)} is not of expected type boolean")
        return np.array(leaves, dtype=np.bool_).reshape(shape)
    try:
        np_dtype = tf.as_dtype(dtype).as_numpy_dtype
    except TypeError:
        raise invalid(f"{where}: inputs of dtype {dtype_name(dtype)} cannot be sent as "
                      "JSON") from None
    if dtype in _INT_RANGE:
        lo, hi = _INT_RANGE[dtype]
        for x in leaves:
            if type(x) is not int:
                raise invalid(f"{where}: JSON {_type_name(x)} {json.dumps(x)[:40]} is not of "
                              f"expected type {dtype_name(dtype)} (an integer)")
            if not lo <= x <= hi:
                raise invalid(f"{where}: {x} is out of range for {dtype_name(dtype)}")
        return np.array(leaves, dtype=np_dtype).reshape(shape)
    if dtype in _FLOATS:
        for x in leaves:
            if type(x) not in (int, float):
                raise invalid(f"{where}: JSON {_type_name(x)} {json.dumps(x)[:40]} is not of "
                              f"expected type {dtype_name(dtype)} (a number)")
        try:
            with np.errstate(over="raise"):
                return np.array(leaves, dtype=np_dtype).reshape(shape)
        except (OverflowError, FloatingPointError):
            raise invalid(f"{where}: a number is out of range for {dtype_name(dtype)}") from None
    raise invalid(f"{where}: inputs of dtype {dtype_name(dtype)} cannot be sent as JSON")


def signature_name(doc: Any) -> str:
    """Checks the top level of a predict request body (an object with exactly one of
    ``instances`` / ``inputs``) and returns its ``signature_name`` (http_rest_api_handler.cc:
    it must be a string)."""
    if not isinstance(doc, dict):
        raise invalid("JSON request must be an object with 'instances' or 'inputs'")
    keys = set(doc) & {"instances", "inputs"}
    if len(keys) != 1:
        raise invalid("JSON request needs exactly one of 'instances' (row format) or "
                      "'inputs' (columnar format)")
    name = doc.get("signature_name", "")
    if not isinstance(name, str):
        raise invalid(f"'signature_name' must be a string, got a JSON {_type_name(name)}")
    return name


def columns_for(doc: dict, input_names: list[str]) -> tuple[dict[str, Any], int | None]:
    """Input name -> JSON value for the signature's inputs, and the batch size for the
    row format (None for the columnar one)."""
    if "instances" in doc:
        instances = doc["instances"]
        if not isinstance(instances, list):
            raise invalid("'instances' must be a list")
        named = [i for i in instances if isinstance(i, dict) and not _is_b64(i)]
        if len(input_names) == 1 and not (named and all(set(i) == set(input_names)
                                                         for i in named)):
            return {input_names[0]: instances}, len(instances)
        if len(named) != len(instances):
            raise invalid(f"'instances' must all be objects with inputs {sorted(input_names)} "
                          "(or all plain values, for a signature with one input)")
        keys = set(named[0]) if named else set(input_names)
        for i, inst in enumerate(named):
            if set(inst) != keys:
                raise invalid(f"instance {i} has inputs {sorted(inst)[:20]}, instance 0 has "
                              f"{sorted(keys)[:20]}; every instance needs the same inputs")
        return {k: [inst[k] for inst in named] for k in keys}, len(instances)
    value = doc["inputs"]
    if isinstance(value, dict) and not (_is_b64(value) and len(input_names) == 1):
        return value, None
    if len(input_names) == 1:
        return {input_names[0]: value}, None
    raise invalid(f"'inputs' must be an object with {sorted(input_names)}")


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def array_to_json(arr: np.ndarray, name: str) -> Any:
    """numpy -> JSON value; strings as UTF-8 text (invalid bytes replaced), or base64
    objects for outputs named ``*_bytes`` (TF Serving's convention)."""
    if arr.dtype == object:
        if not arr.size:
            return arr.tolist()
        if name.endswith("_bytes"):
            return np.vectorize(lambda b: {"b64": base64.b64encode(b).decode()},
                                otypes=[object])(arr).tolist()
        text = np.empty(arr.size, dtype=object)
        text[:] = [b.decode("utf-8", "replace") for b in arr.ravel().tolist()]
        return text.reshape(arr.shape).tolist()
    return arr.tolist()


def response_json(outputs: Mapping[str, np.ndarray], batch: int | None) -> dict:
    """The predict response: ``predictions`` (row format) or ``outputs`` (columnar)."""
    if batch is not None:
        bad = [k for k, v in outputs.items() if v.ndim == 0 or v.shape[0] != batch]
        if bad:
            raise invalid(f"outputs {bad} do not have the batch size {batch} in dim 0; "
                          "use the columnar 'inputs' format")
        cols = {k: array_to_json(v, k) for k, v in outputs.items()}
        if len(cols) == 1:
            return {"predictions": next(iter(cols.values()))}
        return {"predictions": [{k: cols[k][i] for k in cols} for i in range(batch)]}
    cols = {k: array_to_json(v, k) for k, v in outputs.items()}
    return {"outputs": next(iter(cols.values())) if len(cols) == 1 else cols}
