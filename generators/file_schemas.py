"""Validating case files against ``cases/case.schema.json`` and expectation files against
``expectations/expectation.schema.json`` (the JSON Schemas shipped for editors too).

A small interpreter of the JSON Schema keywords the schemas use (type, properties, additionalProperties,
required, enum, pattern, items, minItems, minProperties, propertyNames, minimum, maximum, oneOf, $ref) plus
``x-exactlyOne`` and ``x-message`` (the sentence said when a value under that node is wrong;
``x-message-required`` when a required key is missing). Unknown keys fail. Every error names the file, the
line and the key path.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from qdq_conformance.domain import JSONValue
from qdq_conformance.resources import expectations_dir, schema_path

from .loader import CaseFileError, LineDict, line_of

SCHEMA_PATH = schema_path()


@cache
def schema() -> dict[str, JSONValue]:
    return dict(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


@cache
def expectation_schema() -> dict[str, JSONValue]:
    return dict(json.loads((expectations_dir() / "expectation.schema.json").read_text(encoding="utf-8")))


def schema_enum(*path: str) -> list[str]:
    """The ``enum`` of the case-file schema's node at ``path`` (``"$defs", "graph", "properties", "family"``):
    the vocabularies the runner's markers and the coverage read from it."""
    node: JSONValue = schema()
    for key in (*path, "enum"):
        assert isinstance(node, dict), f"case schema: no object at {'/'.join(path)}"
        node = node[key]
    assert isinstance(node, list), f"case schema: {'/'.join(path)}/enum is not a list"
    return [str(v) for v in node]


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


class _Invalid(Exception):
    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def _check(value: Any, node: dict[str, Any], path: str, line: int | None, root: dict[str, Any]) -> None:
    node = _resolve(node, root)
    if "x-message" in node:
        try:
            _check_node(value, node, path, line, root)
        except _Invalid as e:
            raise _Invalid(path, e.line if e.path == path else line, node["x-message"]) from None
    else:
        _check_node(value, node, path, line, root)


def _check_node(value: Any, node: dict[str, Any], path: str, line: int | None, root: dict[str, Any]) -> None:
    if "oneOf" in node:
        _check_one_of(value, node["oneOf"], path, line, root)
        return
    _check_scalar(value, node, path, line)
    if isinstance(value, list):
        _check_list(value, node, path, line, root)
    if isinstance(value, dict):
        _check_object(value, node, path, line, root)


def _check_one_of(value: Any, options: list[dict[str, Any]], path: str, line: int | None,
                  root: dict[str, Any]) -> None:
    """``value`` fits one of ``options``; else the error that went deepest into it, or one naming them all."""
    errors = []
    for option in options:
        try:
            _check(value, option, path, line, root)
            return
        except _Invalid as e:
            errors.append(e)
    deepest = max(errors, key=lambda e: len(e.path))
    if deepest.path != path:
        raise deepest
    raise _Invalid(path, line,
                   f"{value!r} fits none of the allowed forms ({'; '.join(e.message for e in errors)})")


def _check_scalar(value: Any, node: dict[str, Any], path: str, line: int | None) -> None:
    """The keywords on the value itself: type, enum, pattern, minimum, maximum."""
    if "type" in node and not _TYPES[node["type"]](value):
        raise _Invalid(path, line, f"must be {'an' if node['type'][0] in 'aeiou' else 'a'} {node['type']}, "
                       f"got {type(value).__name__} {value!r}")
    if "enum" in node and value not in node["enum"]:
        raise _Invalid(path, line, f"{value!r} is not one of: {', '.join(map(str, node['enum']))}")
    if "pattern" in node and not re.search(node["pattern"], value):
        raise _Invalid(path, line, f"{value!r} does not match {node['pattern']}")
    if "minimum" in node and value < node["minimum"]:
        raise _Invalid(path, line, f"{value} is below the minimum {node['minimum']}")
    if "maximum" in node and value > node["maximum"]:
        raise _Invalid(path, line, f"{value} is above the maximum {node['maximum']}")


def _check_list(value: list[Any], node: dict[str, Any], path: str, line: int | None,
                root: dict[str, Any]) -> None:
    """A list's length (minItems) and each of its items."""
    if len(value) < node.get("minItems", 0):
        raise _Invalid(path, line, f"needs at least {node['minItems']} item(s)")
    if "items" in node:
        for i, item in enumerate(value):
            _check(item, node["items"], f"{path}[{i}]", line_of(item) or line, root)


def _check_object(value: dict[str, Any], node: dict[str, Any], path: str, line: int | None,
                  root: dict[str, Any]) -> None:
    """An object's required keys, size, each key and value, and x-exactlyOne."""
    for key in node.get("required", []):
        if key not in value:
            raise _Invalid(path, line_of(value) or line,
                           node.get("x-message-required") or f"missing required key {key!r}")
    if len(value) < node.get("minProperties", 0):
        raise _Invalid(path, line_of(value) or line, f"needs at least {node['minProperties']} key(s)")
    for key, item in value.items():
        key_line = line_of(value, key) if isinstance(value, LineDict) else line
        _check_property(key, item, node, f"{path}.{key}" if path else key, key_line, root)
    if "x-exactlyOne" in node:
        present = [k for k in node["x-exactlyOne"] if k in value]
        if len(present) != 1:
            raise _Invalid(path, line_of(value) or line,
                           f"needs exactly one of {', '.join(node['x-exactlyOne'])} (got "
                           f"{present or 'none'})")


def _check_property(key: str, item: Any, node: dict[str, Any], sub: str, key_line: int | None,
                    root: dict[str, Any]) -> None:
    """One key of an object (propertyNames) and its value: a known property, or an additional one if
    allowed."""
    props = node.get("properties", {})
    if "propertyNames" in node:
        _check(key, node["propertyNames"], sub, key_line, root)
    if key in props:
        _check(item, props[key], sub, key_line, root)
    elif node.get("additionalProperties") is False:
        known = ", ".join(sorted(props)) or "none"
        raise _Invalid(sub, key_line, f"unknown key (allowed here: {known})")
    elif isinstance(node.get("additionalProperties"), dict):
        _check(item, node["additionalProperties"], sub, key_line, root)


def check_document(document: object, root: dict[str, JSONValue], file: str | Path) -> None:
    """Raise CaseFileError (file, line, key path) unless ``document`` (from ``loader.load_yaml``) follows the
    JSON Schema ``root``."""
    try:
        _check(document, root, "", line_of(document) or 1, root)
    except _Invalid as e:
        raise CaseFileError(file, e.line, e.path, e.message) from None


def validate(document: object, file: str | Path) -> None:
    """Raise CaseFileError (file, line, key path) unless ``document`` follows the case-file schema."""
    check_document(document, schema(), file)
