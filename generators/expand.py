"""Expanding case templates (YAML) into concrete cases with the oracle's expected outputs.

Matrix axes, in order: versions x type combinations (from the schema, filtered) x zero-point modes x
granularity variants (x shapes) x attribute values. Each concrete case gets a stable, readable id:
``<op>-<version>-<template id>-<types>[-<zero point>][-<granularity>][-<attributes>][-n<size>]``.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qdq_conformance import opspecs
from qdq_conformance.ambiguities import catalogue
from qdq_conformance.compare import compare
from qdq_conformance.errors import SpecViolation
from qdq_conformance.reference import evaluate
from qdq_conformance.reference.readings import Reading
from qdq_conformance.types import TYPES, ElementType, by_dtype, by_name

from .boundaries import SCALE_RECIPES, TARGETS, place, scale_values
from .case import Clause, ConcreteCase
from .granularity import GVar, variants
from .limits import check_cases, check_elements, check_id
from .recipe import Ctx
from .status import catalogue_readings, decide
from .template import Template
from .values import (
    X_RECIPES,
    ZP_RECIPES,
    default_scale,
    default_zp,
    parse_literal,
    random_values,
    to_type,
    zero_point_value,
)

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


class _Skip(Exception):
    """This variant does not apply (a recipe with nothing to offer, a mode the version lacks)."""


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
        raise tpl.error("attributes", f"{key}: {value!r} is neither an integer, a type name nor 'y'") from None


def _attribute_sets(tpl: Template, y: ElementType) -> Iterator[dict[str, int]]:
    attrs = tpl.data.get("attributes", {})
    keys = sorted(attrs)
    lists = [attrs[k] if isinstance(attrs[k], list) else [attrs[k]] for k in keys]
    for values in itertools.product(*lists):
        yield {k: _attr_value(tpl, k, v, y) for k, v in zip(keys, values, strict=True)}


def _seed(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


@dataclass
class _Build:
    tpl: Template
    spec: opspecs.OpSpec
    kind: str
    x: ElementType
    scale: ElementType | None
    y: ElementType
    zp_mode: str
    gvar: GVar
    attrs: dict[str, int]
    labels: list[str] = field(default_factory=list)


def _value(tpl: Template, source: dict[str, Any], t: ElementType, shape: tuple[int, ...], ctx: Ctx, role: str,
           key: str) -> np.ndarray:
    if "shape" in source:
        shape = tuple(source["shape"])
        check_elements(tpl, f"inputs.{key}.shape", shape)
    if "type" in source:
        t = by_name(source["type"])
    n = int(np.prod(shape)) if shape else 1
    try:
        if "values" in source:
            raw = parse_literal(source["values"])
            arr = to_type(np.resize(raw, n) if raw.size else raw, t)
        elif "random" in source:
            r = source["random"]
            arr = random_values(r["seed"], n, ctx, r.get("span", 1.2), r.get("low"), r.get("high"), role)
        else:
            name = source["recipe"]
            if role == "zero_point" and name in ZP_RECIPES:
                v = zero_point_value(name, t)
                if v is None:
                    raise _Skip()
                arr = to_type(np.full(n, v), t)
            elif role == "scale" and name in SCALE_RECIPES:
                got = scale_values(name, t, n)
                if got is None:
                    raise _Skip()
                arr = got
            else:
                raise tpl.error(f"inputs.{key}", f"recipe {name!r} is not one for {key}")
        return arr.reshape(shape)
    except ValueError as e:
        raise tpl.error(f"inputs.{key}", str(e)) from None


def _build(b: _Build) -> ConcreteCase:
    tpl, spec, data = b.tpl, b.spec, b.tpl.data
    inputs_src = data.get("inputs", {})
    base_id = _case_id(b)
    g = b.gvar
    if g.x_shape is not None:
        check_elements(tpl, "shape", g.x_shape)
    attrs = dict(g.attrs)
    attrs.update(b.attrs)  # the template's own attributes win (an invalid case may break the granularity's)
    scale_shape = g.scale_shape
    scale = zp = None
    scale_value = zp_value = 0.0
    if b.kind != "DQL":
        assert b.scale is not None
        zt = b.y if b.kind == "Q" else b.x
        scale = (_value(tpl, inputs_src["scale"], b.scale, scale_shape, Ctx(b.kind, b.x, b.scale, b.y), "scale",
                        "scale") if "scale" in inputs_src else default_scale(b.scale, scale_shape, _seed(base_id, 1)))
        if b.zp_mode == "given":
            zp = (_value(tpl, inputs_src["zero_point"], zt, scale_shape, Ctx(b.kind, b.x, b.scale, b.y),
                         "zero_point", "zero_point") if "zero_point" in inputs_src
                  else default_zp(zt, scale_shape, _seed(base_id, 2)))
        scale_value = float(np.asarray(scale, dtype=np.float32).reshape(-1)[0]) if scale.size else 1.0
        zp_value = float(np.asarray(zp, dtype=np.float32).reshape(-1)[0]) if zp is not None and zp.size else 0.0
    ctx = Ctx(b.kind, b.x, b.scale, b.y, scale_value, zp_value)
    src = inputs_src.get("x", {"random": {"seed": 0}})
    if src.get("recipe") in TARGETS:  # boundary targets, placed through each element's scale and zero point
        placed = place(src["recipe"], ctx, spec, g.x_shape, scale, zp, {**attrs, **b.attrs})
        if placed is None:
            raise _Skip()
        x = placed
    elif "recipe" in src:
        if src["recipe"] not in X_RECIPES:
            raise tpl.error("inputs.x", f"recipe {src['recipe']!r} is for zero points, not x")
        recipe = X_RECIPES[src["recipe"]](ctx)
        if recipe is None:
            raise _Skip()
        if recipe.scale is not None and scale is not None and "scale" not in inputs_src:
            scale = to_type(np.full(scale.size, recipe.scale), b.scale).reshape(scale.shape)  # type: ignore[arg-type]
        raw = np.asarray(recipe.values, dtype=np.float64)
        if b.x.is_integer:
            raw = raw[np.isfinite(raw)]
        shape = g.x_shape if g.x_shape is not None else (len(raw),)
        n = int(np.prod(shape))
        try:
            x = to_type(np.resize(raw, n) if n else raw[:0], b.x, coerce=True).reshape(shape)
        except ValueError as e:
            raise tpl.error("inputs.x", f"recipe {src['recipe']}: {e}") from None
    else:
        shape = g.x_shape if g.x_shape is not None else (_literal_len(tpl, src),)
        x = _value(tpl, src, b.x, shape, ctx, "x", "x")
    if b.kind == "DQ" and b.y.name != b.scale.name and "output_dtype" in spec.attributes:  # type: ignore[union-attr]
        attrs["output_dtype"] = b.y.proto
    if b.kind == "Q" and b.zp_mode == "output_dtype":
        attrs["output_dtype"] = b.y.proto
    arrays = [x] if b.kind == "DQL" else [x, scale, zp]
    formal = [f.name for f in spec.inputs]
    inputs = list(zip(formal, arrays + [None] * (len(formal) - len(arrays)), strict=True))
    while inputs and inputs[-1][1] is None:
        inputs.pop()
    status = data["status"]
    try:
        outputs = evaluate(spec.domain, spec.name, spec.version, [a for _, a in inputs], attrs)
    except SpecViolation as e:
        if status == "invalid":
            if e.rule != data["rule"]:
                raise tpl.error("rule", f"{base_id}: the model breaks {e.rule}, not {data['rule']}: {e}") from None
            outputs = None
        else:
            raise tpl.error("status", f"{base_id}: the oracle rejects this {status} case: {e}") from None
    else:
        if status == "invalid":
            raise tpl.error("rule", f"{base_id}: the oracle accepts this model, so it is not invalid by "
                            f"{data['rule']}") from None
    if outputs is not None and "expected" in data:
        _check_golden(tpl, base_id, outputs, spec)
    ambiguity = data.get("ambiguity")
    case_readings: list[Reading] = []
    if outputs is not None:
        # The kernel computes the catalogue's readings; the status policy (generators/status.py) decides.
        found = catalogue_readings(spec.domain, spec.name, spec.version, [a for _, a in inputs], attrs, outputs,
                                   ambiguity)
        status, ambiguity, case_readings = decide(status, ambiguity, found, outputs)
    if b.kind == "DQL":
        names, types = ["y", "y_scale", "y_zero_point"], [TYPES["uint8"].proto, TYPES["float"].proto,
                                                          TYPES["uint8"].proto]
    else:
        names, types = ["y"], [b.y.proto if outputs is None else _proto_of(outputs[0])]
    clause = data["spec"]
    compare_ = data.get("compare", {})
    return ConcreteCase(
        id=base_id, template=data["id"], file=tpl.file, line=tpl.line(), description=data["description"],
        clause=Clause(clause.get("operator", data["operator"]), clause.get("versions", str(spec.version)),
                      clause["text"]),
        domain=spec.domain, op=spec.name, version=spec.version, family=data["family"], status=status,
        granularity=g.kind, inputs=inputs, attrs=attrs, output_names=names, output_types=types,
        expected=outputs, types={"x": b.x.name, "scale": b.scale.name if b.scale else "", "y": b.y.name},
        ambiguity=ambiguity, readings=case_readings, rule=data.get("rule"), ulp=compare_.get("ulp", 0),
        ulp_why=compare_.get("why"), tier=data.get("tier", "default"),
        detail={**dict(g.detail), "zero_point": b.zp_mode},
    )


def _proto_of(a: np.ndarray) -> int:
    return by_dtype(a.dtype).proto


def _literal_len(tpl: Template, src: dict[str, Any]) -> int:
    if "values" in src:
        try:
            return int(parse_literal(src["values"]).size)
        except ValueError as e:
            raise tpl.error("inputs.x", str(e)) from None
    return 16


def _check_golden(tpl: Template, case_id: str, outputs: list[np.ndarray], spec: opspecs.OpSpec) -> None:
    names = ["y", "y_scale", "y_zero_point"]
    for k, name in enumerate(names[: len(outputs)]):
        if name not in tpl.data["expected"]:
            continue
        try:
            golden = to_type(parse_literal(tpl.data["expected"][name]), by_dtype(outputs[k].dtype))
        except ValueError as e:
            raise tpl.error("expected", f"{name}: {e}") from None
        golden = golden.reshape(outputs[k].shape) if golden.size == outputs[k].size else golden
        mismatch = compare(golden, outputs[k])
        if mismatch:
            raise tpl.error("expected", f"{case_id}: golden {name} disagrees with the oracle: {mismatch}; "
                            f"oracle gives {outputs[k].tolist()}")


def _case_id(b: _Build) -> str:
    prefix = {opspecs.AI_ONNX: "", opspecs.MS: "ms-", opspecs.QUARK: "quark-"}[b.spec.domain]
    parts = [f"{prefix}{b.spec.name.lower()}-{b.spec.version}-{b.tpl.data['id']}"]
    if b.kind == "Q":
        parts += [b.x.name] + ([b.scale.name] if b.scale and b.scale is not b.x else []) + [b.y.name]
    elif b.kind == "DQ":
        assert b.scale is not None
        parts += [b.x.name, b.scale.name] + ([b.y.name] if b.y is not b.scale else [])
    if b.zp_mode != "given":
        parts.append({"omitted": "nozp", "output_dtype": "outdtype"}[b.zp_mode])
    parts += [lbl for lbl in b.gvar.labels if lbl]
    parts += [f"{k.replace('_', '')}{v}" for k, v in sorted(b.attrs.items())]
    case_id = "-".join(parts)
    check_id(b.tpl, case_id)
    return case_id


def expand(tpl: Template) -> list[ConcreteCase]:
    """Every concrete case of one template (raises CaseFileError for a malformed or inconsistent one)."""
    data = tpl.data
    status = data["status"]
    if status == "implementation-defined":
        if "ambiguity" not in data:
            raise tpl.error("ambiguity", "an implementation-defined case must name its ambiguity-catalogue entry")
        if data["ambiguity"] not in catalogue():
            raise tpl.error("ambiguity", f"{data['ambiguity']!r} is not in the ambiguity catalogue "
                            f"(known: {', '.join(catalogue())})")
    elif "ambiguity" in data:
        raise tpl.error("ambiguity", f"only implementation-defined cases name an ambiguity (status is {status})")
    if (status == "invalid") != ("rule" in data):
        raise tpl.error("rule", "an invalid case must name the rule it breaks, and only an invalid case does")
    op = data["operator"]
    kind = "DQL" if op == "DynamicQuantizeLinear" else "DQ" if "Dequantize" in op else "Q"
    for count, _ in enumerate(_candidates(tpl, kind), 1):  # counted first: an oversized template costs nothing
        check_cases(tpl, count)
    cases: list[ConcreteCase] = []
    for b in _candidates(tpl, kind):
        try:
            cases.append(_build(b))
        except _Skip:
            continue
    if not cases:
        raise tpl.error("versions", "the template expands to no case (check versions, types, granularity)")
    return cases


def _candidates(tpl: Template, kind: str) -> Iterator[_Build]:
    """Every variant of the template, in order (a recipe that does not apply drops some when built)."""
    data = tpl.data
    zp_modes = data.get("zero_point", "given")
    zp_modes = zp_modes if isinstance(zp_modes, list) else [zp_modes]
    attrs = data.get("attributes", {})
    check_cases(tpl, math.prod(len(v) if isinstance(v, list) else 1 for v in attrs.values()))
    for version in _versions(tpl):
        spec = opspecs.get(tpl.domain, data["operator"], version)
        if data["status"] != "invalid" and any(k not in spec.attributes for k in attrs):
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
                        yield _Build(tpl, spec, kind, x, scale, y, zp_mode, gvar, attr_set)
