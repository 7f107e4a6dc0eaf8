"""Validating case files against ``cases/case.schema.json`` (the JSON Schema shipped for editors too).

A small interpreter of the JSON Schema keywords the schema uses (type, properties, additionalProperties,
required, enum, pattern, items, minItems, minimum, maximum, oneOf, $ref) plus ``x-exactlyOne``. Unknown keys fail.
Every error names the file, the line and the key path.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from qdq_conformance.resources import schema_path

from .loader import CaseFileError, LineDict, line_of

SCHEMA_PATH = schema_path()


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


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


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target: Any = schema()
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def _check(value: Any, node: dict[str, Any], path: str, line: int | None) -> None:
    node = _resolve(node)
    if "oneOf" in node:
        errors = []
        for option in node["oneOf"]:
            try:
                _check(value, option, path, line)
                return
            except _Invalid as e:
                errors.append(e)
        deepest = max(errors, key=lambda e: len(e.path))
        if deepest.path != path:
            raise deepest
        raise _Invalid(path, line, f"{value!r} fits none of the allowed forms ({'; '.join(e.message for e in errors)})")
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
    if isinstance(value, list):
        if len(value) < node.get("minItems", 0):
            raise _Invalid(path, line, f"needs at least {node['minItems']} item(s)")
        if "items" in node:
            for i, item in enumerate(value):
                _check(item, node["items"], f"{path}[{i}]", line_of(item) or line)
    if isinstance(value, dict):
        props = node.get("properties", {})
        for key in node.get("required", []):
            if key not in value:
                raise _Invalid(path, line_of(value) or line, f"missing required key {key!r}")
        for key, item in value.items():
            key_line = line_of(value, key) if isinstance(value, LineDict) else line
            sub = f"{path}.{key}" if path else key
            if key in props:
                _check(item, props[key], sub, key_line)
            elif node.get("additionalProperties") is False:
                known = ", ".join(sorted(props)) or "none"
                raise _Invalid(sub, key_line, f"unknown key (allowed here: {known})")
            elif isinstance(node.get("additionalProperties"), dict):
                _check(item, node["additionalProperties"], sub, key_line)
        if "x-exactlyOne" in node:
            present = [k for k in node["x-exactlyOne"] if k in value]
            if len(present) != 1:
                raise _Invalid(path, line_of(value) or line,
                               f"needs exactly one of {', '.join(node['x-exactlyOne'])} (got {present or 'none'})")


def validate(document: Any, file: str | Path) -> None:
    """Raise CaseFileError (file, line, key path) unless ``document`` follows the case-file schema."""
    try:
        _check(document, schema(), "", line_of(document) or 1)
    except _Invalid as e:
        raise CaseFileError(file, e.line, e.path, e.message) from None
