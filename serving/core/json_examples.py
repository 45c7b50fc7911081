"""TF Serving's REST ``:classify`` and ``:regress`` bodies: JSON examples -> ``tf.Example``
protos, and results -> JSON.

The reference is ``tensorflow_serving/util/json_tensor.cc`` (``FillClassifyRegressRequestFromJson``,
``MakeJsonFromClassificationResult``, ``MakeJsonFromRegressionResult``)::

    {"signature_name": "...", "context": {<feature>: <value(s)>},
     "examples": [{<feature>: <value(s)>}, ...]}

A feature's value is one value or a list of them: JSON strings and ``{"b64": ...}`` are a
``bytes_list``, numbers written with a fraction or exponent a ``float_list``, integers and
booleans an ``int64_list``; a feature mixing kinds, a null and a nested list are
INVALID_ARGUMENT. The answer is ``{"results": [[[label, score], ...], ...]}`` (classify)
or ``{"results": [value, ...]}`` (regress).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from tensorflow.core.example import example_pb2, feature_pb2
from tensorflow_serving.apis import classification_pb2, input_pb2, regression_pb2

from serving.core.status import invalid

_KINDS = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


def _json_type(value: Any) -> str:
    return {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string",
            dict: "object", list: "array"}.get(type(value), type(value).__name__)


def _add(feature: feature_pb2.Feature, name: str, value: Any) -> None:
    if isinstance(value, bool) or type(value) is int:
        kind = "int64_list"
        if not -2**63 <= value < 2**63:
            raise invalid(f"Feature: {name} has an integer out of int64 range: {value}")
    elif type(value) is float:
        kind = "float_list"
    elif type(value) is str or (isinstance(value, dict) and set(value) == {"b64"}):
        kind = "bytes_list"
    else:
        raise invalid(f"Feature: {name} has element with unexpected JSON type: "
                      f"{_json_type(value)}")
    have = feature.WhichOneof("kind")
    if have is not None and have != kind:
        raise invalid(f"Unexpected element type in feature: {name} expecting type: "
                      f"{_KINDS[have]}")
    if kind == "int64_list":
        feature.int64_list.value.append(int(value))
    elif kind == "float_list":
        feature.float_list.value.append(value)
    elif type(value) is str:
        feature.bytes_list.value.append(value.encode("utf-8", "surrogatepass"))
    else:
        if type(value["b64"]) is not str:
            raise invalid(f"Feature: {name}: a b64 value must be a JSON string")
        try:
            feature.bytes_list.value.append(base64.b64decode(value["b64"], validate=True))
        except (binascii.Error, ValueError) as exc:
            raise invalid(f"Feature: {name}: invalid base64 ({exc})") from None


def example_from_json(value: Any, example: example_pb2.Example) -> None:
    """One JSON object (feature name -> value or list of values) into ``example``."""
    if not isinstance(value, dict):
        raise invalid(f"Example must be JSON object but got JSON {_json_type(value)}")
    for name, content in value.items():
        feature = example.features.feature[name]
        for item in content if isinstance(content, list) else [content]:
            _add(feature, name, item)


def input_from_json(doc: Any, verb: str) -> tuple[str, input_pb2.Input]:
    """The signature name and the ``Input`` of a ``:classify``/``:regress`` body."""
    if not isinstance(doc, dict):
        raise invalid(f"JSON request must be an object with 'examples', got JSON "
                      f"{_json_type(doc)}")
    name = doc.get("signature_name", "")
    if not isinstance(name, str):
        raise invalid(f"'signature_name' must be a string, got a JSON {_json_type(name)}")
    request_input = input_pb2.Input()
    if "examples" not in doc:
        raise invalid(f"When method is {verb}, key 'examples' is expected and was not found")
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise invalid("Expecting 'examples' value to be an list/array")
    if not examples:
        raise invalid("'examples' value is an empty array")
    if "context" in doc:
        listed = request_input.example_list_with_context
        example_from_json(doc["context"], listed.context)
    else:
        listed = request_input.example_list
    for value in examples:
        example_from_json(value, listed.examples.add())
    return name, request_input


def classification_json(result: classification_pb2.ClassificationResult) -> dict:
    return {"results": [[[c.label, c.score] for c in row.classes]
                        for row in result.classifications]}


def regression_json(result: regression_pb2.RegressionResult) -> dict:
    return {"results": [r.value for r in result.regressions]}
