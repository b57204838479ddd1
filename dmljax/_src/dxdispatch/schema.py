"""The structure of a DxDispatch model, as a JSON Schema (draft 2020-12) of our own, written from
DxDispatch's Guide.md (its ``models/_schema.json`` is incomplete: it has no bindings, no commands'
members and no file initializers).

The schema says what JSON types go where, which members are required and which are unknown, so
that every structural problem is reported once, with its JSON path::

    commands[2].bindings.A: expected a resource name, a binding object or a list of them, got 5

What a schema cannot say is checked where the value is used, in dxdispatch.py: operator types and
descs (by the operator's OpSpec), data types, values against their data type, sizes and memory,
files, and names that must refer to a resource or a dispatchable. Arrays of initial values are
not walked here (they can hold millions of numbers); each value is checked when it is converted.

Custom keywords (ignored by the validator, read by the message formatter): ``x-expected`` names
what a value should be, ``x-required`` explains a ``required`` failure, ``x-message`` replaces
the message of a ``not``/``anyOf`` failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, validators

__all__ = ["MODEL_SCHEMA", "structure_problems", "describe", "json_path"]

UINT64_MAX = 2**64 - 1
_NON_DML = "(?i)^(hlsl|onnx|dmlserializedgraph)$"
_GRAPH = "(?i)^dml_graph_desc$"

_UINT = {"type": "integer", "minimum": 0, "maximum": UINT64_MAX,
         "x-expected": "an integer from 0 to 2^64 - 1"}
_POSITIVE = {"type": "integer", "minimum": 1, "maximum": UINT64_MAX,
             "x-expected": "an integer from 1 to 2^64 - 1"}
_STRING = {"type": "string", "x-expected": "a string"}
_NAME = {"type": "string", "minLength": 1, "x-expected": "a name (a non-empty string)"}
_PATH = {"type": "string", "minLength": 1, "x-expected": "a file path (a non-empty string)"}
_VALUE = {"type": ["number", "string"], "x-expected": 'a number, or "nan", "inf" or "-inf"'}


def _closed(properties: dict, required: tuple = (), **extra) -> dict:
    """An object with exactly these members."""
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False, **extra}


def _when_type(value: str, then: dict) -> dict:
    return {"if": {"type": "object", "properties": {"type": {"const": value}}, "required": ["type"]},
            "then": then}


MODEL_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "DxDispatch model, as dmljax reads it",
    "x-expected": "an object with resources, dispatchables and commands",
    **_closed({
        "$schema": _STRING,
        "resources": {"type": "object", "x-expected": "an object (resource name -> resource)",
                      "additionalProperties": {"$ref": "#/$defs/resource"}},
        "dispatchables": {"type": "object", "x-expected": "an object (dispatchable name -> dispatchable)",
                          "additionalProperties": {"$ref": "#/$defs/dispatchable"}},
        "commands": {"type": "array", "x-expected": "an array of commands",
                     "items": {"$ref": "#/$defs/command"}},
    }, ("resources", "dispatchables", "commands")),
    "$defs": {
        "resource": _closed({
            "type": {"const": "buffer", "x-expected": '"buffer" (the only resource type; textures are not '
                                                      "implemented in DxDispatch either)"},
            "initialValues": {
                "type": ["array", "object", "string"],
                "x-expected": "an array of values, an initializer object or a list initializer",
                "if": {"type": "object"}, "then": {"$ref": "#/$defs/initializer"}},
            "initialValuesDataType": {"type": "string", "x-expected": "a DML_TENSOR_DATA_TYPE name"},
            "sizeInBytes": _UINT,
            "initialValuesOffsetInBytes": _UINT,
            "resampleSize": {"type": "array", "items": _UINT, "x-expected": "an array of sizes"},
            "resampleMode": _STRING,
        }, ("initialValues",), **{"x-expected": "an object with initialValues"}),
        "initializer": {
            "if": {"required": ["sourcePath"]},
            "then": _closed({"sourcePath": _PATH}),
            "else": {
                "required": ["valueCount"],
                "x-required": "a constant initializer has valueCount and value, a sequence initializer "
                              "valueCount, valueStart and valueDelta, a file initializer sourcePath",
                "if": {"required": ["value"]},
                "then": _closed({"valueCount": _POSITIVE, "value": _VALUE}),
                "else": _closed({"valueCount": _POSITIVE, "valueStart": _VALUE, "valueDelta": _VALUE},
                                ("valueStart", "valueDelta"),
                                **{"x-required": "a sequence initializer has valueCount, valueStart and "
                                                 "valueDelta (a constant one valueCount and value)"}),
            },
        },
        "dispatchable": {
            "type": "object", "x-expected": "an object with type and desc",
            "required": ["type"],
            "properties": {"type": {"type": ["string", "integer"],
                                    "x-expected": "a DML_OPERATOR_TYPE name"}},
            # HLSL, ONNX and serialized-graph dispatchables have members of their own; they are
            # refused by their type, after this check. A DML_GRAPH_DESC has its own members.
            "if": {"type": "object"},
            "then": {
                "if": {"properties": {"type": {"type": "string", "pattern": _NON_DML}}, "required": ["type"]},
                "else": {
                    "if": {"properties": {"type": {"type": "string", "pattern": _GRAPH}}, "required": ["type"]},
                    "then": {"$ref": "#/$defs/graphDispatchable"},
                    "else": {"$ref": "#/$defs/operatorDispatchable"},
                },
            },
        },
        "graphDispatchable": _closed({
            "type": {},
            "desc": {"$ref": "#/$defs/graphDesc"},
            "bindings": {"$ref": "#/$defs/bindings"},
            "executionFlags": {"type": ["string", "array"], "items": _STRING,
                               "x-expected": "a DML_EXECUTION_FLAGS name or an array of them"},
        }, ("desc",), **{"x-required": "a DML_GRAPH_DESC dispatchable has a desc"}),
        "graphDesc": _closed({
            "InputCount": _UINT,
            "OutputCount": _POSITIVE,
            "Nodes": {"type": "array", "minItems": 1, "x-expected": "an array of nodes",
                      "items": _closed({"Type": {"const": "DML_GRAPH_NODE_TYPE_OPERATOR",
                                                 "x-expected": '"DML_GRAPH_NODE_TYPE_OPERATOR"'},
                                        "Name": _NAME}, ("Type", "Name"))},
            "InputEdges": {"type": "array", "x-expected": "an array of input edges", "items": _closed({
                "GraphInputIndex": _UINT, "ToNodeIndex": _UINT, "ToNodeInputIndex": _UINT, "Name": _STRING,
            }, ("GraphInputIndex", "ToNodeIndex", "ToNodeInputIndex"))},
            "OutputEdges": {"type": "array", "x-expected": "an array of output edges", "items": _closed({
                "FromNodeIndex": _UINT, "FromNodeOutputIndex": _UINT, "GraphOutputIndex": _UINT, "Name": _STRING,
            }, ("FromNodeIndex", "FromNodeOutputIndex", "GraphOutputIndex"))},
            "IntermediateEdges": {"type": "array", "x-expected": "an array of intermediate edges", "items": _closed({
                "FromNodeIndex": _UINT, "FromNodeOutputIndex": _UINT, "ToNodeIndex": _UINT,
                "ToNodeInputIndex": _UINT, "Name": _STRING,
            }, ("FromNodeIndex", "FromNodeOutputIndex", "ToNodeIndex", "ToNodeInputIndex"))},
        }, ("InputCount", "OutputCount", "Nodes", "OutputEdges"),
            **{"x-expected": "a DML_GRAPH_DESC (InputCount, OutputCount, Nodes and edges)"}),
        "operatorDispatchable": _closed({
            "type": {},
            "desc": {"type": "object", "x-expected": "an object (the operator's desc)"},
            "Desc": {"type": "object", "x-expected": "an object (the operator's desc)"},
            "bindings": {"$ref": "#/$defs/bindings"},
            "dmlCompileType": {"type": "string", "x-expected": '"DmlCompileOp" or "DmlCompileGraph"'},
            "executionFlags": {"type": ["string", "array"], "items": _STRING,
                               "x-expected": "a DML_EXECUTION_FLAGS name or an array of them"},
        }, (), **{
            "anyOf": [{"required": ["desc"]}, {"required": ["Desc"]}],
            "not": {"required": ["desc", "Desc"]},
            "x-message": {"anyOf": "has no desc (or Desc)", "not": "has both desc and Desc"}}),
        "bindings": {"type": "object", "x-expected": "an object (bind point -> resource)",
                     "additionalProperties": {"$ref": "#/$defs/binding"}},
        "binding": {
            "type": ["string", "object", "array"],
            "x-expected": "a resource name, a binding object or a list of them",
            "if": {"type": "object"}, "then": {"$ref": "#/$defs/bindingObject"},
            "else": {"if": {"type": "array"}, "then": {"items": {
                "type": ["string", "object"], "x-expected": "a resource name or a binding object",
                "if": {"type": "object"}, "then": {"$ref": "#/$defs/bindingObject"}}}},
        },
        "bindingObject": _closed({
            "name": _NAME, "format": _STRING, "elementCount": _UINT, "elementStride": _UINT,
            "elementSizeInBytes": _UINT, "elementOffset": _UINT, "counter": _STRING,
            "counterOffsetBytes": _UINT, "shape": {"type": "array", "items": _UINT, "x-expected": "an array of sizes"},
        }),
        "command": {
            "type": "object", "x-expected": "an object with type",
            "required": ["type"],
            "properties": {"type": {"type": "string", "x-expected": "a command type name"}},
            # Other types are refused by name, after this check.
            "allOf": [
                _when_type("dispatch", _closed({
                    "type": {}, "dispatchable": _NAME, "bindings": {"$ref": "#/$defs/bindings"},
                    "threadGroupCount": {"type": "array", "items": _UINT, "x-expected": "an array of counts"},
                }, ("dispatchable",))),
                _when_type("print", _closed({
                    "type": {}, "resource": _NAME,
                    "verbose": {"type": "boolean", "x-expected": "true or false"},
                }, ("resource",))),
                *(_when_type(kind, _closed({"type": {}, "dataType": _STRING, "offset": _UINT}))
                  for kind in ("printInitTemporary", "printExecTemporary")),
                _when_type("writeFile", _closed({
                    "type": {}, "resource": _NAME, "targetPath": _PATH,
                    "dimensions": {"type": "array", "items": _POSITIVE, "x-expected": "an array of sizes"},
                }, ("resource", "targetPath"))),
            ],
        },
    },
}


def _is_integer(checker, instance) -> bool:
    # JSON Schema counts 1.0 as an integer; DxDispatch's reader (and dmljax) do not.
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))
Draft202012Validator.check_schema(MODEL_SCHEMA)
_VALIDATOR = _Validator(MODEL_SCHEMA)


# --------------------------------------------------------------------------------- messages
def describe(value: Any, limit: int = 60) -> str:
    """A short JSON-like rendering of ``value`` for a message (at most about ``limit`` characters),
    safe for any size: long strings, lists, objects and 4,000-digit integers are cut."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        if value.bit_length() > 128:
            return f"an integer of {len(str(abs(value)))} digits"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= limit else value[:limit] + "..."
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        parts, size = [], 2
        for item in value:
            part = describe(item, max(8, limit - size))
            if size + len(part) > limit:
                parts.append("...")
                break
            parts.append(part)
            size += len(part) + 2
        return "[" + ", ".join(parts) + "]"
    if isinstance(value, Mapping):
        parts, size = [], 2
        for key, item in value.items():
            part = f"{describe(str(key), 30)}: {describe(item, max(8, limit - size))}"
            if size + len(part) > limit:
                parts.append("...")
                break
            parts.append(part)
            size += len(part) + 2
        return "{" + ", ".join(parts) + "}"
    return describe(repr(value), limit)


def json_path(parts) -> str:
    """``commands[2].bindings.A``; names that are not plain words are quoted."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.isidentifier() or p.replace("-", "_").isidentifier():
            out += f".{p}" if out else p
        else:
            out += f"[{describe(p, 40)}]"
    return out or "the model"


_TYPE_WORDS = {"object": "an object", "array": "an array", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}


def _message(error) -> str:
    schema, value, kind = error.schema, error.instance, error.validator
    expected = schema.get("x-expected")
    if kind == "type":
        if expected is None:
            types = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
            expected = " or ".join(_TYPE_WORDS[t] for t in types)
        return f"expected {expected}, got {describe(value)}"
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        why = schema.get("x-required", "a required member")
        return f"has no {missing[0]} ({why})"
    if kind == "additionalProperties":
        members = list(schema.get("properties", {}))
        unknown = [k for k in value if k not in members]
        return f"has unknown member {describe(str(unknown[0]), 40)}; members: {', '.join(members)}"
    if kind in ("anyOf", "not") and kind in schema.get("x-message", {}):
        return schema["x-message"][kind]
    if kind in ("minimum", "maximum", "minLength", "const", "enum"):
        return f"is {describe(value)}; expected {expected or error.message}"
    return error.message[:200]


def structure_problems(root: Any) -> list[tuple[str, str]]:
    """Every structural problem of a parsed model as (JSON path, message), each once, in the
    order the validator finds them; empty when the structure is right."""
    out = []
    for error in _VALIDATOR.iter_errors(root):
        problem = (json_path(error.absolute_path), _message(error))
        if problem not in out:
            out.append(problem)
    return out
