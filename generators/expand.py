"""Expanding case templates (YAML) into concrete cases with the oracle's expected outputs.

Matrix axes, in order: versions x type combinations (from the schema, filtered) x zero-point modes x
granularity variants (x shapes) x attribute values. Each concrete case gets a stable, readable id:
``<op>-<version>-<template id>-<types>[-<zero point>][-<granularity>][-<attributes>][-n<size>]``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

from qdq_conformance import opspecs
from qdq_conformance.ambiguities import catalogue
from qdq_conformance.domain import CaseStatus
from qdq_conformance.types import TYPES, ElementType, by_name

from .build import Build, Skip, build, case_id
from .case import ConcreteCase
from .limits import check_cases
from .shape_variants import variants
from .template import Template

CATEGORIES = {
    "any": lambda t: True,
    "integer": lambda t: t.is_integer,
    "float8": lambda t: t.is_float8 and t.name != "float8e8m0",
    "float4": lambda t: t.name == "float4e2m1",
    "float6": lambda t: t.name.startswith("float6"),
    "sub-byte": lambda t: t.bits < 8,
    "wide-float": lambda t: t.name in ("float", "float16", "bfloat16"),
    "8-bit": lambda t: t.bits == 8,
    "16-bit": lambda t: t.bits == 16,
}


def _select(selector: Any, t: ElementType) -> bool:
    if selector is None:
        return True
    items = selector if isinstance(selector, list) else [selector]
    return any(t.name == s or (s in CATEGORIES and CATEGORIES[s](t)) for s in items)


def _versions(tpl: Template) -> list[int]:
    known = opspecs.versions(tpl.domain, tpl.data["operator"])
    if not known:
        raise tpl.error("operator", f"{tpl.domain}::{tpl.data['operator']} is not a covered operator")
    v = tpl.data["versions"]
    if v == "all":
        return known
    if isinstance(v, str) and v.endswith("+"):
        return [k for k in known if k >= int(v[:-1])]
    if isinstance(v, str):
        lo, hi = (int(p) for p in v.split("-"))
        return [k for k in known if lo <= k <= hi]
    unknown = [k for k in v if k not in known]
    if unknown:
        raise tpl.error("versions", f"no such version(s) {unknown}; {tpl.data['operator']} has {known}")
    return list(v)


def _combos(tpl: Template, spec: opspecs.OpSpec) -> Iterator[tuple[str, ...]]:
    sel = tpl.data.get("types", {})
    slots = ("x", "y") if spec.name == "DynamicQuantizeLinear" else ("x", "scale", "y")
    if sel.get("literal"):
        lists = [[t.name for t in TYPES.values() if _select(sel.get(s), t)] for s in slots]
        yield from itertools.product(*lists)
        return
    for combo in opspecs.type_combinations(spec):
        if all(_select(sel.get(s), TYPES[name]) for s, name in zip(slots, combo, strict=True)):
            yield combo


def _attr_value(tpl: Template, key: str, value: Any, y: ElementType) -> int:
    if isinstance(value, int):
        return value
    if value == "y":
        return y.proto
    try:
        return by_name(value).proto
    except KeyError:
        raise tpl.error("attributes",
                        f"{key}: {value!r} is neither an integer, a type name nor 'y'") from None


def _attribute_sets(tpl: Template, y: ElementType) -> Iterator[dict[str, int]]:
    attrs = tpl.data.get("attributes", {})
    keys = sorted(attrs)
    lists = [attrs[k] if isinstance(attrs[k], list) else [attrs[k]] for k in keys]
    for values in itertools.product(*lists):
        yield {k: _attr_value(tpl, k, v, y) for k, v in zip(keys, values, strict=True)}


def expand(tpl: Template, keep: Callable[[str], bool] | None = None) -> list[ConcreteCase]:
    """Every concrete case of one template (raises CaseFileError for a malformed or inconsistent one); with
    ``keep``, only the cases whose id it keeps are built (a shard's: every id is known, and checked, before
    any value is computed)."""
    data = tpl.data
    status = data["status"]
    if status == CaseStatus.IMPLEMENTATION_DEFINED:
        if "ambiguity" not in data:
            raise tpl.error("ambiguity",
                            "an implementation-defined case must name its ambiguity-catalogue entry")
        if data["ambiguity"] not in catalogue():
            raise tpl.error("ambiguity", f"{data['ambiguity']!r} is not in the ambiguity catalogue "
                            f"(known: {', '.join(catalogue())})")
    elif "ambiguity" in data:
        raise tpl.error("ambiguity",
                        f"only implementation-defined cases name an ambiguity (status is {status})")
    if (status == CaseStatus.INVALID) != ("rule" in data):
        raise tpl.error("rule", "an invalid case must name the rule it breaks, and only an invalid case does")
    op = data["operator"]
    kind = "DQL" if op == "DynamicQuantizeLinear" else "DQ" if "Dequantize" in op else "Q"
    # counted first: an oversized template costs nothing
    for count, _ in enumerate(_candidates(tpl, kind), 1):
        check_cases(tpl, count)
    cases: list[ConcreteCase] = []
    left: list[Build] = []  # (the candidates ``keep`` leaves out)
    for b in _candidates(tpl, kind):
        if keep is not None and not keep(case_id(b)):
            left.append(b)
            continue
        try:
            cases.append(build(b))
        except Skip:
            continue
    if not cases and not any(_builds(b) for b in left):  # (whether the whole template gives a case)
        raise tpl.error("versions", "the template expands to no case (check versions, types, granularity)")
    return cases


def _builds(b: Build) -> bool:
    try:
        build(b)
    except Skip:
        return False
    return True


def _candidates(tpl: Template, kind: str) -> Iterator[Build]:
    """Every variant of the template, in order (a recipe that does not apply drops some when built)."""
    data = tpl.data
    zp_modes = data.get("zero_point", "given")
    zp_modes = zp_modes if isinstance(zp_modes, list) else [zp_modes]
    attrs = data.get("attributes", {})
    check_cases(tpl, math.prod(len(v) if isinstance(v, list) else 1 for v in attrs.values()))
    for version in _versions(tpl):
        spec = opspecs.get(tpl.domain, data["operator"], version)
        if data["status"] != CaseStatus.INVALID and any(k not in spec.attributes for k in attrs):
            continue  # (every attribute set has the same keys)
        for combo in _combos(tpl, spec):
            if kind == "DQL":
                x, scale, y = TYPES[combo[0]], None, TYPES[combo[1]]
            else:
                x, scale, y = (TYPES[c] for c in combo)
            for zp_mode in zp_modes:
                if kind == "DQL" and zp_mode != "given":
                    continue
                if zp_mode == "omitted" and kind == "Q" and y.name != "uint8":
                    continue
                if zp_mode == "output_dtype" and (kind != "Q" or "output_dtype" not in spec.attributes):
                    continue
                for gvar in variants(tpl, spec, kind):
                    for attr_set in _attribute_sets(tpl, y):
                        yield Build(tpl, spec, kind, x, scale, y, zp_mode, gvar, attr_set)
