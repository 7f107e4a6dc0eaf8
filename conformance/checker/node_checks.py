"""The checks on one quantization node: every problem it has, each rule reported once.

Structural rules (types allowed at the version, zero point type, output_dtype, attributes, granularity, axis,
block_size: QDQ001-QDQ013) run through the reference kernel's own plans
(:data:`conformance.reference.ops.PLANS`) on zero-cost stand-in arrays of the node's input types and shapes,
so the checker and the kernel share one rule set (:mod:`.structure` plans again after each problem, to find
the next). Then the rules that need values or the model around the node (QDQ014-QDQ019), and notes (QDQ020)
for what could not be determined. Findings of one rule on one node are merged into one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import AttributeProto, TensorProto

from ..errors import SpecViolation
from ..opspecs import AI_ONNX, OPERATORS, OpSpec, import_version, normalize_domain, resolve
from ..reference.ops import Plan
from ..types import ElementType, by_proto
from . import structure
from .structure import Finding, type_name
from .tensor_facts import Facts, Site
from .tensors import MAX_VALUE_BYTES

__all__ = ["CHECKED", "Finding", "check", "domain_of", "is_checked", "merge", "type_name"]

CHECKED = frozenset(OPERATORS)
_SATURATING = ("float8", "float4", "float6")


def domain_of(site: Site) -> str:
    return normalize_domain(site.node.domain)


def is_checked(site: Site) -> bool:
    return (domain_of(site), site.node.op_type) in CHECKED


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
            kind = (AttributeProto.AttributeType.Name(a.type)
                    if a.type in AttributeProto.AttributeType.values()
                    else f"attribute type {a.type}")
            bad.append(Finding("QDQ010", f"attribute {a.name} must be an int, got {kind}", a.name))
    return attrs, bad


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
                                              f"{MAX_VALUE_BYTES >> 20} MiB are not read, so they were not "
                                              "checked",
                                    formal)]
    return facts, et, []


def _scale_findings(site: Site, name: str, formal: str, base_dir: Path) -> list[Finding]:
    """QDQ014 where the scale is a constant: a zero or non-finite value (a negative scale is allowed: the
    spec's formulas carry its sign, and symmetric quantizers use it)."""
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
    return [Finding("QDQ014",
                    f"{bad} of {total} scale values are zero or not finite (first: index {first[0]} = "
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


def merge(findings: list[Finding]) -> list[Finding]:
    """One finding per rule, in the order the rules were first found: the messages of a rule found on several
    inputs joined, each after its input's name."""
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    out = []
    for rule, group in by_rule.items():
        unique = list(dict.fromkeys(group))
        if len(unique) == 1:
            out.append(unique[0])
            continue
        inputs = list(dict.fromkeys(f.input for f in unique if f.input))
        text = "; ".join(f"{f.input}: {f.message}" if f.input and len(inputs) > 1 else f.message
                         for f in unique)
        out.append(Finding(rule, text, inputs[0] if len(inputs) == 1 else None))
    return out


def check(site: Site, base_dir: Path) -> tuple[OpSpec | None, list[Finding]]:
    """Every rule on one node, each once; the operator version it resolved to (None when it did not)."""
    domain = domain_of(site)
    opset = import_version(site.opsets, site.node.domain)
    if opset is None:
        return None, [Finding("QDQ001", f"the model imports no opset for domain {domain}")]
    try:
        spec = resolve(domain, site.node.op_type, opset)
    except SpecViolation as e:
        return None, [Finding("QDQ001", e.detail)]
    attrs, findings = _attributes(site)
    outcome = structure.check(spec, site, attrs, {f.input for f in findings if f.input})
    findings += outcome.findings
    plan = outcome.plan
    if plan is not None and outcome.outputs_trusted:
        if "saturate" in attrs and not plan.outputs[0].name.startswith(_SATURATING):
            findings.append(Finding("QDQ018", f"saturate={attrs['saturate']} has no effect for a "
                                              f"{plan.outputs[0].name} output", "saturate"))
        if domain == AI_ONNX:
            for k, (name, expected) in enumerate(zip(site.node.output, plan.outputs, strict=False)):
                declared = site.scope.get(name) if name else None
                if declared is not None and declared.elem and declared.elem != expected.proto:
                    findings.append(Finding("QDQ019", f"output {k} ({name!r}) is declared "
                                                      f"{type_name(declared.elem)}, the spec gives "
                                                      f"{expected.name}",
                                            spec.outputs[k].name))
        _propagate(site, plan)
    findings += _value_checks(spec, site, base_dir)
    return spec, merge(findings)


def _propagate(site: Site, plan: Plan) -> None:
    """Record the output types the spec gives (shape: x's) for later nodes, where the graph does not say;
    onnx shape inference does not see through contrib-domain nodes."""
    x = site.scope.get(site.node.input[0]) if site.node.input else None
    for k, (name, t) in enumerate(zip(site.node.output, plan.outputs, strict=False)):
        known = site.scope.get(name) if name else None
        if name and (known is None or known.elem is None):
            shape = (x.shape if x is not None else None) if k == 0 else ()
            site.scope.add(name, Facts(t.proto, shape, None, "spec of the producing node"), override=True)

