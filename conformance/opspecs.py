"""What each operator version accepts: inputs, type constraints and attributes.

ai.onnx versions are read from ``onnx.defs`` (whatever the installed onnx defines). The com.microsoft and
com.amd.quark operators are not in onnx.defs; their tables below are transcribed from their documentation
(ONNX Runtime's contrib-op page, AMD Quark's operator page) and cite it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache

import onnx.defs

from .domain import GranularityKind
from .errors import SpecViolation

AI_ONNX = "ai.onnx"
MS = "com.microsoft"
QUARK = "com.amd.quark"

#: The operators this project covers, by (domain, name).
OPERATORS: tuple[tuple[str, str], ...] = (
    (AI_ONNX, "QuantizeLinear"),
    (AI_ONNX, "DequantizeLinear"),
    (AI_ONNX, "DynamicQuantizeLinear"),
    (MS, "QuantizeLinear"),
    (MS, "DequantizeLinear"),
    (QUARK, "ExtendedQuantizeLinear"),
    (QUARK, "ExtendedDequantizeLinear"),
)

#: The quantization granularities (:class:`~qdq_conformance.domain.GranularityKind`) as plain strings, as
#: records, case files and the kernel's plans hold them.
PER_TENSOR = GranularityKind.PER_TENSOR.value
PER_AXIS = GranularityKind.PER_AXIS.value
BLOCKED = GranularityKind.BLOCKED.value


@dataclass(frozen=True)
class Formal:
    """One formal input or output: its name, its type parameter (or fixed ``tensor(x)``), optional or not."""

    name: str
    param: str
    optional: bool = False


@dataclass(frozen=True)
class OpSpec:
    domain: str
    name: str
    version: int
    inputs: tuple[Formal, ...]
    outputs: tuple[Formal, ...]
    constraints: dict[str, tuple[str, ...]] = field(hash=False)
    attributes: dict[str, int | None] = field(hash=False)
    doc: str = field(default="", hash=False, repr=False)
    #: The axis attribute's text says "When the rank of the input is 1, per-tensor quantization is applied,
    #: rendering the axis unnecessary in this scenario." (QuantizeLinear 19+, DequantizeLinear 19).
    rank1_axis_ignored: bool = False

    @property
    def key(self) -> str:
        return f"{self.domain}::{self.name}-{self.version}"

    @property
    def granularities(self) -> tuple[str, ...]:
        """The granularities this version allows, read from its attributes (onnx.defs for ai.onnx): per-tensor
        always; per-axis with an ``axis`` attribute (ai.onnx 13+ but DynamicQuantizeLinear, the contrib
        operators); blocked with a ``block_size`` attribute (ai.onnx 21+). The kernel, the generators and
        (through the kernel's plans) the checker all ask here."""
        return ((PER_TENSOR,) + ((PER_AXIS,) if "axis" in self.attributes else ())
                + ((BLOCKED,) if "block_size" in self.attributes else ()))

    @property
    def axis_optional_per_tensor(self) -> bool:
        """The ``axis`` attribute has no default, and leaving it out means per-tensor (com.microsoft: "If it's
        not specified, it means per-tensor quantization and input 'x_scale' and 'x_zero_point' must be
        scalars")."""
        return "axis" in self.attributes and self.attributes["axis"] is None

    def allowed(self, param: str) -> tuple[str, ...]:
        """The element type names a type parameter (or a fixed ``tensor(x)``) allows."""
        if param.startswith("tensor("):
            return (param[len("tensor("):-1],)
        return self.constraints[param]

    def violation(self, rule: str, detail: str, input: str | None = None) -> SpecViolation:  # noqa: A002
        return SpecViolation(rule, detail, op=self.name, domain=self.domain, version=self.version,
                             input=input)


def _strip(type_str: str) -> str:
    return type_str[len("tensor("):-1]


def _from_onnx(schema: onnx.defs.OpSchema) -> OpSpec:
    return OpSpec(
        domain=AI_ONNX,
        name=schema.name,
        version=schema.since_version,
        inputs=tuple(
            Formal(i.name, i.type_str, i.option == onnx.defs.OpSchema.FormalParameterOption.Optional)
            for i in schema.inputs
        ),
        outputs=tuple(Formal(o.name, o.type_str) for o in schema.outputs),
        constraints={tc.type_param_str: tuple(_strip(t) for t in tc.allowed_type_strs)
                     for tc in schema.type_constraints},
        attributes={name: (a.default_value.i if a.default_value.HasField("i") else None)
                    for name, a in schema.attributes.items()},
        doc=schema.doc or "",
        rank1_axis_ignored="axis" in schema.attributes
        and "When the rank of the input is 1" in schema.attributes["axis"].description,
    )


# ONNX Runtime contrib ops (docs/ContribOperators.md, "com.microsoft.QuantizeLinear" / "DequantizeLinear").
_MS_DOC_Q = (
    "The quantization formula is y = saturate ((x / y_scale) + y_zero_point). For saturation, it saturates "
    "to [0, 255] if it's uint8, [-128, 127] if it's int8, [0, 65,535] if it's uint16, and [-32,768, 32,767] "
    "if it's int16. For (x / y_scale), it's rounding to nearest ties to even. Scale and zero point must have "
    "same shape. They must be either scalar (per tensor) or 1-D tensor (per 'axis'). "
    "axis: The axis along which same quantization parameters are applied. It's optional. If it's not "
    "specified, it means per-tensor quantization and input 'x_scale' and 'x_zero_point' must be scalars. If "
    "it's specified, it means per 'axis' quantization and input 'x_scale' and 'x_zero_point' must be 1-D "
    "tensors. Inputs: x - T1; y_scale - T1; y_zero_point (optional) - T2. Outputs: y - T2."
)
_MS_DOC_DQ = (
    "The dequantization formula is y = (x - x_zero_point) * x_scale. Scale and zero point must have same "
    "shape. They must be either scalar (per tensor) or 1-D tensor (per 'axis'). "
    "axis: The axis along which same quantization parameters are applied. It's optional. If it's not "
    "specified, it means per-tensor quantization and input 'x_scale' and 'x_zero_point' must be scalars. If "
    "it's specified, it means per 'axis' quantization and input 'x_scale' and 'x_zero_point' must be 1-D "
    "tensors."
)
# AMD Quark custom ops (quark.onnx operator pages "ExtendedQuantizeLinear" / "ExtendedDequantizeLinear").
_QUARK_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "bfloat16")
_QUARK_DOC_DQ = (
    "The dequantization formula is y = (x - x_zero_point) * x_scale. x_scale and x_zero_point must have the "
    "same shape, determining the quantization's granularity: a scalar for per-tensor/per-layer quantization, "
    "a 1-D tensor for per-axis/per-channel quantization. x_zero_point and x must have the same type. In the "
    "case of dequantizing int32, there's no zero point (zero point is supposed to be 0). The output type is "
    "the same as x_scale, it also determines the precision of the multiplication operation. Inputs: x - T1; "
    "x_scale - T2; x_zero_point (optional, heterogeneous) - T3. T3 in ( tensor(float) )."
)
_QUARK_DOC_Q = (
    "The quantization formula is y = saturate((x / y_scale) + y_zero_point). For (x / y_scale), it rounds to "
    "the nearest even. y_zero_point and y must have the same type. y_scale and y_zero_point must have the "
    "same shape: a scalar for per-tensor quantization, a 1-D tensor for per-axis/per-channel quantization."
)

_CONTRIB: tuple[OpSpec, ...] = (
    OpSpec(MS, "QuantizeLinear", 1,
           (Formal("x", "T1"), Formal("y_scale", "T1"), Formal("y_zero_point", "T2", True)),
           (Formal("y", "T2"),),
           {"T1": ("float", "float16"), "T2": ("int8", "uint8", "int16", "uint16", "int4", "uint4")},
           {"axis": None}, _MS_DOC_Q),
    OpSpec(MS, "DequantizeLinear", 1,
           (Formal("x", "T1"), Formal("x_scale", "T2"), Formal("x_zero_point", "T1", True)),
           (Formal("y", "T2"),),
           {"T1": ("int8", "uint8", "int16", "uint16", "int32", "int4", "uint4"), "T2": ("float", "float16")},
           {"axis": None}, _MS_DOC_DQ),
    OpSpec(QUARK, "ExtendedQuantizeLinear", 1,
           (Formal("x", "T1"), Formal("y_scale", "T1"), Formal("y_zero_point", "T2", True)),
           (Formal("y", "T2"),),
           {"T1": ("float",), "T2": _QUARK_TYPES},
           {"axis": 1}, _QUARK_DOC_Q),
    # The page gives x_zero_point the type T3 (tensor(float)) but also says "x_zero_point and x must have the
    # same type"; the kernel follows the sentence (ambiguity catalogue: quark-dq-zero-point-type).
    OpSpec(QUARK, "ExtendedDequantizeLinear", 1,
           (Formal("x", "T1"), Formal("x_scale", "T2"), Formal("x_zero_point", "T1", True)),
           (Formal("y", "T3"),),
           {"T1": _QUARK_TYPES, "T2": ("float",), "T3": ("float",)},
           {"axis": 1}, _QUARK_DOC_DQ),
)


@cache
def all_specs() -> tuple[OpSpec, ...]:
    """Every operator version this project covers, in (domain, name, version) order."""
    specs: list[OpSpec] = []
    for domain, name in OPERATORS:
        if domain == AI_ONNX:
            specs.extend(_from_onnx(s) for s in onnx.defs.get_all_schemas_with_history()
                         if s.name == name and s.domain == "")
        else:
            specs.extend(s for s in _CONTRIB if s.domain == domain and s.name == name)
    return tuple(sorted(specs, key=lambda s: (OPERATORS.index((s.domain, s.name)), s.version)))


def normalize_domain(domain: str) -> str:
    return AI_ONNX if domain in ("", AI_ONNX) else domain


def import_table(imports: Iterable[onnx.OperatorSetIdProto]) -> dict[str, int]:
    """Opset imports (OperatorSetIdProto) by their domain as spelled, a later import of the same spelling
    replacing an earlier one: the table onnx's checker builds (``opset_imports[domain] = version``)."""
    return {str(i.domain): int(i.version) for i in imports}


def import_version(table: Mapping[str, int], node_domain: str) -> int | None:
    """The opset version a node of ``node_domain`` runs at, resolved as onnx's checker does (check_node): the
    import of the node's own spelling first; a node in "" without a "" import uses the "ai.onnx" import. So a
    model importing both "" and "ai.onnx" runs its "" nodes at the "" version. (onnx registers no operator
    under the spelling "ai.onnx"; a node spelled so is read as ai.onnx, with the "" import as its
    fallback.)"""
    if node_domain in table:
        return table[node_domain]
    if node_domain in ("", AI_ONNX):
        return table.get(AI_ONNX if node_domain == "" else "")
    return None


def versions(domain: str, name: str) -> list[int]:
    domain = normalize_domain(domain)
    return [s.version for s in all_specs() if s.domain == domain and s.name == name]


@cache
def _index() -> dict[tuple[str, str, int], OpSpec]:
    return {(s.domain, s.name, s.version): s for s in all_specs()}


def get(domain: str, name: str, version: int) -> OpSpec:
    """The spec with exactly this since_version."""
    domain = normalize_domain(domain)
    found = _index().get((domain, name, version))
    if found is not None:
        return found
    raise SpecViolation("QDQ001", f"no version {version} of this operator (known: {versions(domain, name)})",
                        op=name, domain=domain, version=version)


def resolve(domain: str, name: str, opset: int) -> OpSpec:
    """The version an opset import of ``opset`` for ``domain`` selects: the highest since_version <= opset."""
    domain = normalize_domain(domain)
    known = versions(domain, name)
    if not known:
        raise SpecViolation("QDQ001", "operator not covered by this kernel", op=name, domain=domain,
                            version=opset)
    chosen = [v for v in known if v <= opset]
    if not chosen:
        raise SpecViolation("QDQ001", f"opset {opset} predates the operator (first version {known[0]})",
                            op=name, domain=domain, version=opset)
    return get(domain, name, chosen[-1])


def type_combinations(spec: OpSpec) -> Iterator[tuple[str, ...]]:
    """Every combination of element types the schema allows, as (x, scale, output) names.

    Inputs and outputs that share a type parameter take the same type; DynamicQuantizeLinear yields (x, y).
    """
    if spec.name == "DynamicQuantizeLinear":
        params = [spec.inputs[0].param, spec.outputs[0].param]
    else:
        params = [spec.inputs[0].param, spec.inputs[1].param, spec.outputs[0].param]
    distinct = list(dict.fromkeys(params))
    for choice in itertools.product(*(spec.allowed(p) for p in distinct)):
        chosen = dict(zip(distinct, choice, strict=True))
        yield tuple(chosen[p] for p in params)
