"""Building one concrete case of a template: its inputs (given, recipes, boundary targets or defaults), the
oracle's outputs and readings, and the status policy's verdict, step by step (each step named for what it
decides).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qdq_conformance import opspecs
from qdq_conformance.ambiguities import Reading, catalogue
from qdq_conformance.compare import compare
from qdq_conformance.domain import CaseStatus
from qdq_conformance.errors import SpecViolation
from qdq_conformance.reference import evaluate
from qdq_conformance.types import TYPES, ElementType, by_dtype, by_name

from .boundaries import SCALE_RECIPES, TARGETS, place, scale_values
from .case import Clause, ConcreteCase
from .limits import check_elements, check_id
from .recipe import Ctx
from .shape_variants import GVar
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


class Skip(Exception):
    """This variant does not apply (a recipe with nothing to offer, a mode the version lacks)."""


def _seed(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


@dataclass
class Build:
    """One variant of a template: its version, types, zero-point mode, granularity variant and attributes."""

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
                    raise Skip()
                arr = to_type(np.full(n, v), t)
            elif role == "scale" and name in SCALE_RECIPES:
                got = scale_values(name, t, n)
                if got is None:
                    raise Skip()
                arr = got
            else:
                raise tpl.error(f"inputs.{key}", f"recipe {name!r} is not one for {key}")
        return arr.reshape(shape)
    except ValueError as e:
        raise tpl.error(f"inputs.{key}", str(e)) from None


def build(b: Build) -> ConcreteCase:
    """One concrete case: its inputs, the oracle's outputs and what the status policy makes of them."""
    base_id = case_id(b)
    if b.gvar.x_shape is not None:
        check_elements(b.tpl, "shape", b.gvar.x_shape)
    attrs = dict(b.gvar.attrs)
    attrs.update(b.attrs)  # the template's own attributes win (an invalid case may break the granularity's)
    scale, zp, ctx = _parameters(b, base_id)
    x, scale = _x(b, ctx, scale, zp, attrs)
    _output_dtype(b, attrs)
    inputs = _formal_inputs(b.spec, [x] if b.kind == "DQL" else [x, scale, zp])
    outputs = _oracle(b, base_id, inputs, attrs)
    status, ambiguity, readings = _status(b, inputs, attrs, outputs)
    return _concrete(b, base_id, inputs, attrs, outputs, status, ambiguity, readings)


def _parameters(b: Build, base_id: str) -> tuple[np.ndarray | None, np.ndarray | None, Ctx]:
    """The scale and zero point fed (given, or the defaults seeded by the case id), and the context x's
    recipes read them through (their first elements)."""
    if b.kind == "DQL":
        return None, None, Ctx(b.kind, b.x, b.scale, b.y, 0.0, 0.0)
    assert b.scale is not None
    source = b.tpl.data.get("inputs", {})
    shape = b.gvar.scale_shape
    zt = b.y if b.kind == "Q" else b.x
    scale = (_value(b.tpl, source["scale"], b.scale, shape, Ctx(b.kind, b.x, b.scale, b.y), "scale", "scale")
             if "scale" in source else default_scale(b.scale, shape, _seed(base_id, 1)))
    zp = None
    if b.zp_mode == "given":
        zp = (_value(b.tpl, source["zero_point"], zt, shape, Ctx(b.kind, b.x, b.scale, b.y), "zero_point",
                     "zero_point") if "zero_point" in source else default_zp(zt, shape, _seed(base_id, 2)))
    scale_value = float(np.asarray(scale, dtype=np.float32).reshape(-1)[0]) if scale.size else 1.0
    zp_value = float(np.asarray(zp, dtype=np.float32).reshape(-1)[0]) if zp is not None and zp.size else 0.0
    return scale, zp, Ctx(b.kind, b.x, b.scale, b.y, scale_value, zp_value)


def _x(b: Build, ctx: Ctx, scale: np.ndarray | None, zp: np.ndarray | None,
       attrs: dict[str, int]) -> tuple[np.ndarray, np.ndarray | None]:
    """x, from a boundary target, an x recipe (which may set the scale too) or given values; and the scale."""
    src = b.tpl.data.get("inputs", {}).get("x", {"random": {"seed": 0}})
    if src.get("recipe") in TARGETS:  # boundary targets, placed through each element's scale and zero point
        placed = place(src["recipe"], ctx, b.spec, b.gvar.x_shape, scale, zp, {**attrs, **b.attrs})
        if placed is None:
            raise Skip()
        return placed, scale
    if "recipe" in src:
        return _x_recipe(b, ctx, src["recipe"], scale)
    shape = b.gvar.x_shape if b.gvar.x_shape is not None else (_literal_len(b.tpl, src),)
    return _value(b.tpl, src, b.x, shape, ctx, "x", "x"), scale


def _x_recipe(b: Build, ctx: Ctx, name: str,
              scale: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """x from an x recipe, repeated to the variant's shape; the recipe's scale replaces a default one."""
    if name not in X_RECIPES:
        raise b.tpl.error("inputs.x", f"recipe {name!r} is for zero points, not x")
    recipe = X_RECIPES[name](ctx)
    if recipe is None:
        raise Skip()
    if recipe.scale is not None and scale is not None and "scale" not in b.tpl.data.get("inputs", {}):
        scale = to_type(np.full(scale.size, recipe.scale), b.scale).reshape(scale.shape)  # type: ignore[arg-type]
    raw = np.asarray(recipe.values, dtype=np.float64)
    if b.x.is_integer:
        raw = raw[np.isfinite(raw)]
    shape = b.gvar.x_shape if b.gvar.x_shape is not None else (len(raw),)
    n = int(np.prod(shape))
    try:
        return to_type(np.resize(raw, n) if n else raw[:0], b.x, coerce=True).reshape(shape), scale
    except ValueError as e:
        raise b.tpl.error("inputs.x", f"recipe {name}: {e}") from None


def _output_dtype(b: Build, attrs: dict[str, int]) -> None:
    """Set ``output_dtype`` where the case's types need it: a DQ whose y is not the scale's type (at a version
    that has the attribute), a Q in the ``output_dtype`` zero-point mode."""
    if b.kind == "DQ" and b.y.name != b.scale.name and "output_dtype" in b.spec.attributes:  # type: ignore[union-attr]
        attrs["output_dtype"] = b.y.proto
    if b.kind == "Q" and b.zp_mode == "output_dtype":
        attrs["output_dtype"] = b.y.proto


def _formal_inputs(spec: opspecs.OpSpec,
                   arrays: list[np.ndarray | None]) -> list[tuple[str, np.ndarray | None]]:
    """The arrays named by the operator's formal inputs, trailing omitted ones dropped."""
    formal = [f.name for f in spec.inputs]
    inputs = list(zip(formal, arrays + [None] * (len(formal) - len(arrays)), strict=True))
    while inputs and inputs[-1][1] is None:
        inputs.pop()
    return inputs


def _oracle(b: Build, base_id: str, inputs: list[tuple[str, np.ndarray | None]],
            attrs: dict[str, int]) -> list[np.ndarray] | None:
    """The oracle's outputs (None for an invalid case, which must break the rule it names); the golden values
    a template gives must agree with them."""
    data, spec = b.tpl.data, b.spec
    status = data["status"]
    try:
        outputs = evaluate(spec.domain, spec.name, spec.version, [a for _, a in inputs], attrs)
    except SpecViolation as e:
        if status != CaseStatus.INVALID:
            raise b.tpl.error("status", f"{base_id}: the oracle rejects this {status} case: {e}") from None
        if e.rule != data["rule"]:
            raise b.tpl.error("rule",
                              f"{base_id}: the model breaks {e.rule}, not {data['rule']}: {e}") from None
        return None
    if status == CaseStatus.INVALID:
        raise b.tpl.error("rule", f"{base_id}: the oracle accepts this model, so it is not invalid by "
                          f"{data['rule']}") from None
    if "expected" in data:
        _check_golden(b.tpl, base_id, outputs, spec)
    return outputs


def _status(b: Build, inputs: list[tuple[str, np.ndarray | None]], attrs: dict[str, int],
            outputs: list[np.ndarray] | None) -> tuple[str, str | None, list[Reading]]:
    """The case's status, ambiguity and readings: the kernel computes the catalogue's readings, the status
    policy (generators/status.py) decides."""
    status, ambiguity = b.tpl.data["status"], b.tpl.data.get("ambiguity")
    spec = b.spec
    if ambiguity is not None and not catalogue()[ambiguity].concerns(spec.domain, spec.name, spec.version):
        raise b.tpl.error("ambiguity", f"{case_id(b)}: {spec.domain} {spec.name}-{spec.version} is not among "
                          f"the operators of {ambiguity} ({', '.join(catalogue()[ambiguity].operators)})")
    if outputs is None:
        return status, ambiguity, []
    found = catalogue_readings(spec.domain, spec.name, spec.version, [a for _, a in inputs], attrs, outputs,
                               ambiguity)
    return decide(status, ambiguity, found, outputs)


def _concrete(b: Build, base_id: str, inputs: list[tuple[str, np.ndarray | None]], attrs: dict[str, int],
              outputs: list[np.ndarray] | None, status: str, ambiguity: str | None,
              readings: list[Reading]) -> ConcreteCase:
    """The concrete case: the template's description, clause and comparison with what was built."""
    data, spec, g = b.tpl.data, b.spec, b.gvar
    if b.kind == "DQL":
        names, types = ["y", "y_scale", "y_zero_point"], [TYPES["uint8"].proto, TYPES["float"].proto,
                                                          TYPES["uint8"].proto]
    else:
        names, types = ["y"], [b.y.proto if outputs is None else _proto_of(outputs[0])]
    clause = data["spec"]
    compare_ = data.get("compare", {})
    return ConcreteCase(
        id=base_id, template=data["id"], file=b.tpl.file, line=b.tpl.line(), description=data["description"],
        clause=Clause(clause.get("operator", data["operator"]), clause.get("versions", str(spec.version)),
                      clause["text"]),
        domain=spec.domain, op=spec.name, version=spec.version, family=data["family"], status=status,
        granularity=g.kind, inputs=inputs, attrs=attrs, output_names=names, output_types=types,
        expected=outputs, types={"x": b.x.name, "scale": b.scale.name if b.scale else "", "y": b.y.name},
        ambiguity=ambiguity, readings=readings, rule=data.get("rule"), ulp=compare_.get("ulp", 0),
        ulp_why=compare_.get("why"), tier=data.get("tier", "default"),
        detail={**dict(g.detail), "zero_point": b.zp_mode}, source=data.get("source"),
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


def case_id(b: Build) -> str:
    """The id of the case ``b`` builds (known before anything is computed; CaseFileError when it is too
    long)."""
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
    text = "-".join(parts)
    check_id(b.tpl, text)
    return text
