"""Per-operator entries: validate inputs and attributes against the operator version, then compute.

Each entry is thin: it decides, from the version's text, the output type, the division / multiplication
precision and the granularity, and hands the arithmetic to :mod:`.quantize`, :mod:`.dequantize` or
:mod:`.dynamic`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from onnx import TensorProto

from ..opspecs import AI_ONNX, MS, QUARK, OpSpec
from ..types import TYPES, ElementType, by_dtype, by_proto
from . import arith
from . import granularity as gran
from . import quantize as q
from .compute import COMPUTE_OPS
from .dequantize import dequantize
from .dynamic import dynamic_quantize
from .steps import Steps, active

Inputs = Sequence[np.ndarray | None]
Attrs = Mapping[str, int]


def _as_given(spec: OpSpec, attrs: Attrs) -> Attrs:
    """The node's attributes as it carries them (the planners fill in the defaults)."""
    return attrs


#: The spec's steps: with these (the default) the kernel is the oracle. A mutant replaces one field
#: (:mod:`.steps`).
SPEC = Steps(attributes=_as_given, resolve=gran.resolve, broadcast_quantize=gran.broadcast,
             broadcast_dequantize=gran.broadcast, divide=q.divide, to_precision=arith.to_precision,
             to_integer=q.to_integer, to_float=q.to_float, quantize=q.quantize, dequantize=dequantize,
             dynamic_quantize=dynamic_quantize, compute=MappingProxyType(dict(COMPUTE_OPS)))

#: Values the QuantizeLinear ``precision`` attribute may take. The spec lists none; the kernel accepts the
#: types a division can be carried out in (ambiguity catalogue: precision-values).
PRECISION_TYPES = ("float", "float16", "bfloat16", "int32")


def _type_of(spec: OpSpec, name: str, a: np.ndarray) -> ElementType:
    try:
        return by_dtype(a.dtype)
    except KeyError as e:
        raise spec.violation("QDQ002", f"array dtype {a.dtype} is not an ONNX element type", name) from e


def check_inputs(spec: OpSpec, inputs: Inputs) -> list[ElementType | None]:
    """Input count, presence of required inputs, each input's type, and shared type parameters."""
    if len(inputs) > len(spec.inputs):
        raise spec.violation("QDQ011", f"{len(inputs)} inputs given, at most {len(spec.inputs)} allowed")
    padded = list(inputs) + [None] * (len(spec.inputs) - len(inputs))
    types: list[ElementType | None] = []
    bound: dict[str, tuple[str, ElementType]] = {}
    for formal, a in zip(spec.inputs, padded, strict=True):
        if a is None:
            if not formal.optional:
                raise spec.violation("QDQ011", "required input is missing", formal.name)
            types.append(None)
            continue
        t = _type_of(spec, formal.name, a)
        allowed = spec.allowed(formal.param)
        if t.name not in allowed:
            raise spec.violation("QDQ002", f"type {t.name} is not allowed (allowed: {', '.join(allowed)})",
                                 formal.name)
        if formal.param in bound and bound[formal.param][1] is not t:
            other, ot = bound[formal.param]
            rule = "QDQ003" if "zero_point" in formal.name else "QDQ002"
            raise spec.violation(rule, f"type {t.name} differs from {other}'s type {ot.name} "
                                 f"(both are {formal.param})", formal.name)
        bound.setdefault(formal.param, (formal.name, t))
        types.append(t)
    return types


def check_attributes(spec: OpSpec, attrs: Attrs) -> dict[str, int | None]:
    """Reject attributes the version does not define; return every attribute with its default filled in."""
    for name in attrs:
        if name not in spec.attributes:
            known = ", ".join(spec.attributes) or "none"
            raise spec.violation("QDQ009",
                                 f"attribute {name!r} is not defined at this version (defined: {known})",
                                 name)
    merged: dict[str, int | None] = dict(spec.attributes)
    merged.update(attrs)
    return merged


def _attr_type(spec: OpSpec, name: str, value: int, allowed: Sequence[str]) -> ElementType:
    try:
        t = by_proto(int(value))
    except KeyError:
        t = None
    if t is None or t.name not in allowed:
        shown = TensorProto.DataType.Name(value) if value in TensorProto.DataType.values() else str(value)
        raise spec.violation("QDQ004" if name == "output_dtype" else "QDQ010",
                             f"{name}={shown} is not one of {', '.join(allowed)}", name)
    return t


@dataclass(frozen=True)
class Plan:
    """What a node computes, decided from the version's text before any arithmetic: the output types, the
    division precision, the granularity and saturation. The spec-checker uses the same plans."""

    outputs: tuple[ElementType, ...]
    granularity: gran.Granularity | None = None
    precision: ElementType | None = None
    saturate: bool = True


def plan_quantize_linear(spec: OpSpec, inputs: Inputs, attrs: Attrs, steps: Steps = SPEC) -> Plan:
    types = check_inputs(spec, inputs)
    a = check_attributes(spec, steps.attributes(spec, attrs))
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    assert x is not None and scale is not None
    y_allowed = spec.allowed(spec.outputs[0].param)
    # No zero point: uint8 (ambiguity catalogue: ms-default-output for com.microsoft).
    out: ElementType = types[2] if types[2] is not None else TYPES["uint8"]
    if a.get("output_dtype"):
        declared = _attr_type(spec, "output_dtype", int(a["output_dtype"] or 0), y_allowed)
        if zp is not None and declared is not out:
            raise spec.violation("QDQ004", f"output_dtype {declared.name} differs from the zero point's type "
                                 f"{out.name}", "output_dtype")
        out = declared
    scale_t = types[1]
    assert scale_t is not None
    if spec.domain == QUARK or (spec.domain == AI_ONNX and spec.version < 19):
        precision = TYPES["float"]
    elif a.get("precision"):
        precision = _attr_type(spec, "precision", int(a["precision"] or 0), PRECISION_TYPES)
    elif scale_t.name == "float8e8m0":
        precision = TYPES["float"]  # ambiguity catalogue: e8m0-precision
    else:
        precision = scale_t
    g = steps.resolve(spec, x.shape, scale.shape, None if zp is None else zp.shape, a, spec.inputs[1].name)
    saturate = bool(a.get("saturate", 1) if a.get("saturate") is not None else 1)
    if spec.domain == QUARK:
        saturate = True  # ambiguity catalogue: quark-float-saturation (float16 / bfloat16 targets saturate)
    return Plan((out,), g, precision, saturate)


def plan_dequantize_linear(spec: OpSpec, inputs: Inputs, attrs: Attrs, steps: Steps = SPEC) -> Plan:
    types = check_inputs(spec, inputs)
    a = check_attributes(spec, steps.attributes(spec, attrs))
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    assert x is not None and scale is not None and types[1] is not None
    y_allowed = spec.allowed(spec.outputs[0].param)
    if a.get("output_dtype"):
        out = _attr_type(spec, "output_dtype", int(a["output_dtype"] or 0), y_allowed)
    elif spec.outputs[0].param.startswith("tensor(") or spec.domain == QUARK:
        out = TYPES[y_allowed[0]]
    else:
        out = types[1]
        if out.name not in y_allowed:
            raise spec.violation("QDQ013",
                                 f"the output type would be the scale's type {out.name}, which is not "
                                 f"an allowed output type; set output_dtype", "output_dtype")
    g = steps.resolve(spec, x.shape, scale.shape, None if zp is None else zp.shape, a, spec.inputs[1].name)
    return Plan((out,), g)


def plan_dynamic_quantize_linear(spec: OpSpec, inputs: Inputs, attrs: Attrs) -> Plan:
    check_inputs(spec, inputs)
    check_attributes(spec, attrs)
    return Plan((TYPES["uint8"], TYPES["float"], TYPES["uint8"]))


# The entries read the steps in force once (:func:`.steps.active`; the spec's unless a mutant runs) and hand
# them down.

def _quantize_linear(spec: OpSpec, inputs: Inputs, attrs: Attrs) -> list[np.ndarray]:
    steps = active() or SPEC
    p = plan_quantize_linear(spec, inputs, attrs, steps)
    assert inputs[0] is not None and inputs[1] is not None and p.granularity and p.precision
    zp = inputs[2] if len(inputs) > 2 else None
    return [steps.quantize(inputs[0], inputs[1], zp, out=p.outputs[0], granularity=p.granularity,
                           precision=p.precision, saturate=p.saturate, steps=steps)]


def _dequantize_linear(spec: OpSpec, inputs: Inputs, attrs: Attrs) -> list[np.ndarray]:
    steps = active() or SPEC
    p = plan_dequantize_linear(spec, inputs, attrs, steps)
    assert inputs[0] is not None and inputs[1] is not None and p.granularity
    zp = inputs[2] if len(inputs) > 2 else None
    return [steps.dequantize(inputs[0], inputs[1], zp, out=p.outputs[0], granularity=p.granularity,
                             steps=steps)]


def _dynamic_quantize_linear(spec: OpSpec, inputs: Inputs, attrs: Attrs) -> list[np.ndarray]:
    steps = active() or SPEC
    plan_dynamic_quantize_linear(spec, inputs, attrs)
    x = inputs[0]
    assert x is not None
    return steps.dynamic_quantize(x, steps=steps)


Entry = Callable[[OpSpec, Inputs, Attrs], list[np.ndarray]]
Planner = Callable[[OpSpec, Inputs, Attrs], Plan]

#: Validation and decisions only (no arithmetic), by (domain, name): the spec-checker runs these on
#: stand-in arrays of the node's input types and shapes.
PLANS: dict[tuple[str, str], Planner] = {
    (AI_ONNX, "QuantizeLinear"): plan_quantize_linear,
    (AI_ONNX, "DequantizeLinear"): plan_dequantize_linear,
    (AI_ONNX, "DynamicQuantizeLinear"): plan_dynamic_quantize_linear,
    (MS, "QuantizeLinear"): plan_quantize_linear,
    (MS, "DequantizeLinear"): plan_dequantize_linear,
    (QUARK, "ExtendedQuantizeLinear"): plan_quantize_linear,
    (QUARK, "ExtendedDequantizeLinear"): plan_dequantize_linear,
}

#: The kernel entry of every covered operator, by (domain, name). Versions differ only through their OpSpec.
ENTRIES: dict[tuple[str, str], Entry] = {
    (AI_ONNX, "QuantizeLinear"): _quantize_linear,
    (AI_ONNX, "DequantizeLinear"): _dequantize_linear,
    (AI_ONNX, "DynamicQuantizeLinear"): _dynamic_quantize_linear,
    (MS, "QuantizeLinear"): _quantize_linear,
    (MS, "DequantizeLinear"): _dequantize_linear,
    (QUARK, "ExtendedQuantizeLinear"): _quantize_linear,
    (QUARK, "ExtendedDequantizeLinear"): _dequantize_linear,
}
