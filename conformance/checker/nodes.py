"""The checks on one quantization node.

Structural rules (types allowed at the version, zero point type, output_dtype, attributes, granularity, axis,
block_size: QDQ001-QDQ013) run through the reference kernel's own plans (:data:`conformance.reference.ops.PLANS`)
on zero-cost stand-in arrays of the node's input types and shapes, so the checker and the kernel share one rule
set. Then the rules that need values or the model around the node (QDQ014-QDQ019), and notes (QDQ020) for what
could not be determined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from onnx import AttributeProto, TensorProto

from ..errors import SpecViolation
from ..opspecs import AI_ONNX, OPERATORS, OpSpec, import_version, normalize_domain, resolve
from ..reference.ops import PLANS, Plan, check_attributes
from ..rules import RULES
from ..types import ElementType, by_proto
from .graph import Facts, Site
from .tensors import MAX_ELEMENTS, MAX_VALUE_BYTES

CHECKED = frozenset(OPERATORS)
GRANULARITY_RULES = frozenset({"QDQ005", "QDQ006", "QDQ007", "QDQ008"})
_SATURATING = ("float8", "float4", "float6")


@dataclass(frozen=True)
class Finding:
    rule: str
    message: str
    input: str | None = None

    @property
    def severity(self) -> str:
        return RULES[self.rule].severity


def domain_of(site: Site) -> str:
    return normalize_domain(site.node.domain)


def is_checked(site: Site) -> bool:
    return (domain_of(site), site.node.op_type) in CHECKED


def type_name(elem: int) -> str:
    try:
        return by_proto(elem).name
    except KeyError:
        return TensorProto.DataType.Name(elem).lower() if elem in TensorProto.DataType.values() else str(elem)


def _attributes(site: Site) -> tuple[dict[str, int], list[Finding]]:
    attrs: dict[str, int] = {}
    bad = []
    for a in site.node.attribute:
        if a.type == AttributeProto.INT:
            attrs[a.name] = int(a.i)
        elif a.ref_attr_name:
            bad.append(Finding("QDQ020", f"attribute {a.name} refers to the function's attribute "
                                         f"{a.ref_attr_name!r}; its value was not checked", a.name))
        else:
            kind = AttributeProto.AttributeType.Name(a.type) if a.type in AttributeProto.AttributeType.values() \
                else f"attribute type {a.type}"
            bad.append(Finding("QDQ010", f"attribute {a.name} must be an int, got {kind}", a.name))
    return attrs, bad


def _fill(x: tuple[int | None, ...], scale: tuple[int, ...], attrs: dict[str, int]) -> tuple[tuple[int, ...], str]:
    """x's shape with unknown dimensions replaced by values the scale's shape implies; a note when the
    block_size range then cannot be checked."""
    rank = len(x)
    given = attrs.get("axis", 1)
    axis = given % rank if rank and -rank <= given < rank else None
    block = attrs.get("block_size", 0)
    out: list[int] = []
    note = ""
    for d, v in enumerate(x):
        if v is not None:
            out.append(v)
        elif len(scale) == rank and rank > 1 and block > 0:
            if d == axis:
                out.append(block * scale[d])
                note = f"x's dimension {d} is unknown, so block_size {block} was not checked against its range"
            else:
                out.append(scale[d])
        elif len(scale) == 1 and (d == axis or rank == 1):
            out.append(scale[0])
        else:
            out.append(1)
    return tuple(out), note


def _stand_in(t: ElementType, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.zeros((), dtype=t.dtype), shape)


def _structural(spec: OpSpec, site: Site, attrs: dict[str, int]) -> tuple[Plan | None, list[Finding]]:
    node = site.node
    names = list(node.input)
    while names and not names[-1]:
        names.pop()
    if len(names) > len(spec.inputs):
        return None, [Finding("QDQ011", f"{len(names)} inputs given, at most {len(spec.inputs)} allowed")]
    findings: list[Finding] = []
    facts: list[Facts | None] = []
    for formal, name in zip(spec.inputs, names + [""] * (len(spec.inputs) - len(names)), strict=True):
        if not name:
            facts.append(None)
            continue
        f = site.scope.get(name)
        if f is None and not site.scope.is_defined(name):
            findings.append(Finding("QDQ011", f"{formal.name} ({name!r}) is not defined: no initializer, graph "
                                              "input, node output or enclosing graph has that name", formal.name))
            return None, findings
        if f is None or f.elem is None:
            findings.append(Finding("QDQ020", f"the type of {formal.name} ({name!r}) could not be determined; "
                                              "type and shape rules were not checked", formal.name))
            try:
                check_attributes(spec, attrs)
            except SpecViolation as e:
                findings.append(Finding(e.rule, e.detail, e.input))
            return None, findings
        try:
            by_proto(f.elem)
        except KeyError:
            allowed = ", ".join(spec.allowed(formal.param))
            findings.append(Finding("QDQ002", f"type {type_name(f.elem)} is not allowed (allowed: {allowed})",
                                    formal.name))
            return None, findings
        facts.append(f)
    scale_f = facts[1] if len(facts) > 1 else None
    x_f = facts[0]
    shapes_known = all(f is None or (f.shape is not None and None not in f.shape) for f in facts[1:]) and \
        x_f is not None and x_f.shape is not None
    note = ""
    arrays: list[np.ndarray | None] = []
    for k, f in enumerate(facts):
        if f is None:
            arrays.append(None)
            continue
        t = by_proto(f.elem or 0)
        if not shapes_known:
            shape: tuple[int, ...] = ()
        elif k == 0 and scale_f is not None:
            assert f.shape is not None and scale_f.shape is not None
            shape, note = _fill(f.shape, tuple(int(v) for v in scale_f.shape if v is not None), attrs)
        else:
            assert f.shape is not None
            shape = tuple(1 if v is None else v for v in f.shape)
        if any(d < 0 for d in shape) or math.prod(shape) > MAX_ELEMENTS:
            findings.append(Finding("QDQ020", f"the shape of {spec.inputs[k].name} {list(shape)} is too large to "
                                              "check; granularity, axis and block_size were not checked",
                                    spec.inputs[k].name))
            return None, findings
        arrays.append(_stand_in(t, shape))
    unknown = [spec.inputs[k].name for k, f in enumerate(facts) if f is not None and
               (f.shape is None or (k > 0 and None in f.shape))]
    if unknown and spec.name != "DynamicQuantizeLinear":
        findings.append(Finding("QDQ020", f"the shape of {', '.join(unknown)} could not be determined; "
                                          "granularity, axis and block_size were not checked", unknown[0]))
    if note:
        findings.append(Finding("QDQ020", note, "block_size"))
    try:
        plan = PLANS[(spec.domain, spec.name)](spec, arrays, attrs)
    except SpecViolation as e:
        if shapes_known or e.rule not in GRANULARITY_RULES:
            findings.append(Finding(e.rule, e.detail, e.input))
        return None, findings
    return plan, findings


def _constant(site: Site, name: str, formal: str) -> tuple[Facts | None, ElementType | None, list[Finding]]:
    """The constant feeding ``name`` and its element type, when it has one the registry knows; a note instead
    when its data is too large to read."""
    facts = site.scope.get(name) if name else None
    if facts is None or facts.tensor is None or facts.elem is None:
        return None, None, []
    try:
        et = by_proto(facts.elem)
    except KeyError:
        return None, None, []  # QDQ002 already says the type is wrong
    size = facts.nbytes()
    if size > MAX_VALUE_BYTES:
        return None, None, [Finding("QDQ020", f"{name!r} holds {size} bytes; values of a tensor over "
                                              f"{MAX_VALUE_BYTES >> 20} MiB are not read, so they were not checked",
                                    formal)]
    return facts, et, []


def _scale_findings(site: Site, name: str, formal: str, base_dir: Path) -> list[Finding]:
    """QDQ014 where the scale is a constant: a zero or non-finite value (a negative scale is allowed: the spec's
    formulas carry its sign, and symmetric quantizers use it)."""
    facts, et, notes = _constant(site, name, formal)
    if facts is None or et is None:
        return notes
    bad = total = 0
    first: tuple[int, float] | None = None
    for chunk in facts.values(base_dir) or ():
        as64 = np.asarray(chunk, dtype=np.float64)
        wrong = ~np.isfinite(as64) | (as64 == 0)
        if first is None and wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            first = (total + k, float(as64[k]))
        bad += int(wrong.sum())
        total += as64.size
    if first is None:
        return []
    return [Finding("QDQ014", f"{bad} of {total} scale values are zero or not finite (first: index {first[0]} = "
                              f"{first[1]})", formal)]


def _zero_point_findings(spec: OpSpec, site: Site, name: str, formal: str, base_dir: Path) -> list[Finding]:
    """QDQ015-QDQ017 where the zero point is a constant."""
    facts, et, notes = _constant(site, name, formal)
    if facts is None or et is None:
        return notes
    t = facts.tensor
    assert t is not None
    if et.is_integer and et.bits >= 8 and t.int32_data and t.data_location != TensorProto.EXTERNAL:
        # int32_data holds 8- and 16-bit values unpacked, so a value out of the type's range can be stored
        stored = np.asarray(t.int32_data, dtype=np.int64)
        outside = stored[(stored < (et.int_min or 0)) | (stored > (et.int_max or 0))]
        if outside.size:
            return [Finding("QDQ015", f"zero point holds {int(outside[0])}, outside {et.name}'s range "
                                      f"[{et.int_min}, {et.int_max}]", formal)]
    shown: list[str] = []
    for chunk in facts.values(base_dir) or ():
        values = np.asarray(chunk).astype(np.float64)
        shown += [str(v) for v in values[values != 0][:5 - len(shown)]]
        if len(shown) >= 5:
            break
    if not shown:
        return []
    listed = ", ".join(shown[:4]) + (", ..." if len(shown) > 4 else "")
    if et.name.startswith(_SATURATING):
        return [Finding("QDQ016", f"{et.name} zero point is not zero ({listed})", formal)]
    if "Dequantize" in spec.name and et.name == "int32":
        return [Finding("QDQ017", f"int32 x with a non-zero zero point ({listed})", formal)]
    return []


def _value_checks(spec: OpSpec, site: Site, base_dir: Path) -> list[Finding]:
    if spec.name == "DynamicQuantizeLinear":
        return []
    names = list(site.node.input) + ["", "", ""]
    return (_scale_findings(site, names[1], spec.inputs[1].name, base_dir)
            + _zero_point_findings(spec, site, names[2], spec.inputs[2].name, base_dir))


def check(site: Site, base_dir: Path) -> tuple[OpSpec | None, list[Finding]]:
    """Every rule on one node; the operator version it resolved to (None when it did not)."""
    domain = domain_of(site)
    opset = import_version(site.opsets, site.node.domain)
    if opset is None:
        return None, [Finding("QDQ001", f"the model imports no opset for domain {domain}")]
    try:
        spec = resolve(domain, site.node.op_type, opset)
    except SpecViolation as e:
        return None, [Finding("QDQ001", e.detail)]
    attrs, findings = _attributes(site)
    if any(f.severity == "error" for f in findings):
        return spec, findings
    plan, structural = _structural(spec, site, attrs)
    findings += structural
    if plan is not None:
        if "saturate" in attrs and not plan.outputs[0].name.startswith(_SATURATING):
            findings.append(Finding("QDQ018", f"saturate={attrs['saturate']} has no effect for a "
                                              f"{plan.outputs[0].name} output", "saturate"))
        if domain == AI_ONNX:
            for k, (name, expected) in enumerate(zip(site.node.output, plan.outputs, strict=False)):
                declared = site.scope.get(name) if name else None
                if declared is not None and declared.elem and declared.elem != expected.proto:
                    findings.append(Finding("QDQ019", f"output {k} ({name!r}) is declared "
                                                      f"{type_name(declared.elem)}, the spec gives {expected.name}",
                                            spec.outputs[k].name))
        _propagate(site, plan)
    findings += _value_checks(spec, site, base_dir)
    return spec, findings


def _propagate(site: Site, plan: Plan) -> None:
    """Record the output types the spec gives (shape: x's) for later nodes, where the graph does not say;
    onnx shape inference does not see through contrib-domain nodes."""
    x = site.scope.get(site.node.input[0]) if site.node.input else None
    for k, (name, t) in enumerate(zip(site.node.output, plan.outputs, strict=False)):
        known = site.scope.get(name) if name else None
        if name and (known is None or known.elem is None):
            shape = (x.shape if x is not None else None) if k == 0 else ()
            site.scope.add(name, Facts(t.proto, shape, None, "spec of the producing node"), override=True)

