"""Coverage of the corpus against what each operator version's schema allows.

Per operator version: type combinations covered / allowed (from the schema, never by hand), granularities, the
parameter forms crossed with each granularity, and edge families, and every gap by name. The target is no gap.

Parameter forms (``parameters``): each granularity the version allows crossed with the presence of the zero
point, the scale's shape for per-tensor (a scalar or a one-element ``[1]``), the axis attribute's form for
per-axis and blocked (written positive, written negative, or left out where the version has a default axis),
and a negative scale (the spec puts no sign condition on a scale; symmetric weight compression emits them).
Toolchains emit these node configurations (per-axis weights without a zero point, a ``[1]`` bias scale, ...),
so a corpus without one shows a gap instead of "0 gaps".

Layouts (``layouts``): the rank x normalized axis x axis spelling x types crossing of per-axis and blocked
nodes. A layout is the granularity, the rank, the axis it normalizes to and how the node writes it (positive,
negative, or left out for the default axis 1); the types are the quantized type (y of QuantizeLinear, x of
DequantizeLinear) and the scale's type. Every layout toolchains emit (:data:`LAYOUTS`: per axis, biases of
rank 1 along axis 0, MatMul / Gemm weights of rank 2 along either axis, Conv / ConvTranspose weights of rank
4 along axis 0 or 1; blocked, rank-2 weights along either axis) is required for every quantized type with a
float scale, every 8-bit one (integer or float8: what float16 models deploy) with a float16 scale too, and
every scale type with an 8-bit integer, wherever the version allows them:
each type meets each layout (a kernel's per-axis loop is written per type and scale type), so a backend whose
int4 or float8 path reads an axis wrongly shows it. Every other crossing a case reaches is counted as covered.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from qdq_conformance import opspecs
from qdq_conformance.domain import CaseStatus
from qdq_conformance.reference.arith import to_float64
from qdq_conformance.types import TYPES, ElementType

from .case import ConcreteCase

BLOCK_VARIANTS = ("low", "high", "exact", "partial", "single")
ZERO_POINTS = ("with zero point", "without zero point")
#: the (granularity, rank, normalized axis) toolchains emit: biases, MatMul / Gemm, Conv / ConvTranspose
#: weights per axis; MatMul weights blocked
LAYOUTS = ((opspecs.PER_AXIS, 1, 0), (opspecs.PER_AXIS, 2, 0), (opspecs.PER_AXIS, 2, 1),
           (opspecs.PER_AXIS, 4, 0), (opspecs.PER_AXIS, 4, 1),
           (opspecs.BLOCKED, 2, 0), (opspecs.BLOCKED, 2, 1))
#: every quantized type meets each layout with a float scale, the 8-bit ones (integer and float8: what float16
#: models deploy) with a float16 scale too, and every scale type meets it with an 8-bit integer target
LAYOUT_TARGETS = ("int8", "uint8")


@dataclass
class VersionCoverage:
    key: str
    types_allowed: int = 0
    types_covered: int = 0
    required: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    covered: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    type_gaps: list[str] = field(default_factory=list)

    def gaps(self) -> list[str]:
        out = [f"types: {g}" for g in self.type_gaps]
        for area, req in sorted(self.required.items()):
            out += [f"{area}: {g}" for g in sorted(req - self.covered[area])]
        return out

    def counts(self, area: str) -> tuple[int, int]:
        req = self.required[area]
        return len(req & self.covered[area]), len(req)


def _kind(spec: opspecs.OpSpec) -> str:
    if spec.name == "DynamicQuantizeLinear":
        return "DQL"
    return "DQ" if "Dequantize" in spec.name else "Q"


def _required(spec: opspecs.OpSpec, cov: VersionCoverage) -> None:
    kind = _kind(spec)
    gran = cov.required["granularity"]
    fam = cov.required["families"]
    if kind == "DQL":
        fam.update({"dynamic", "nan", "empty", "simd-sizes", "saturation-inf"})
        gran.add(opspecs.PER_TENSOR)
        return
    combos = list(opspecs.type_combinations(spec))
    gran.update(_required_granularities(spec))
    _required_parameters(spec, cov.required["parameters"])
    _required_layouts(spec, kind, combos, cov.required["layouts"])
    for combo in combos:
        fam.update(_required_type_families(spec, kind, TYPES[combo[0]], TYPES[combo[-1]]))
    if spec.domain == opspecs.AI_ONNX:
        fam.update(_required_onnx_families(spec, kind, combos))


def _required_granularities(spec: opspecs.OpSpec) -> list[str]:
    """Per tensor; per axis, every axis of every rank (negative too); blocked: rank, axis, block variants."""
    gran = [opspecs.PER_TENSOR]
    if opspecs.PER_AXIS in spec.granularities:
        ranks = range(1, 6) if spec.domain == opspecs.AI_ONNX else (3,)
        for r in ranks:
            for a in range(r):
                gran += [f"per-axis rank {r} axis {a}", f"per-axis rank {r} axis {a - r}"]
    if opspecs.BLOCKED in spec.granularities:
        gran += [f"blocked rank {r} axis {a}" for r in (1, 2, 3) for a in range(r)]
        gran += [f"blocked {b}" for b in BLOCK_VARIANTS]
        gran += ["blocked with zero point", "blocked without zero point"]
    return gran


def _required_type_families(spec: opspecs.OpSpec, kind: str, x: ElementType, y: ElementType) -> list[str]:
    """The families one type pair needs: Q's saturation, ties, NaN and signed zero; DQ's codes of x."""
    if kind != "Q":
        return [f"all-codes {x.name}" if x.bits <= 8 else f"boundary-codes {x.name}" if x.bits <= 16
                else f"int32-extremes {x.name}"]
    pair = f"{x.name}->{y.name}"
    fam = [f"saturation-finite {pair}", f"saturation-huge {pair}", f"ties {pair}"]
    if (spec.domain != opspecs.QUARK or y.is_integer) and x.has_inf:
        fam.append(f"saturation-inf {pair}")
    if x.has_nan and spec.domain == opspecs.AI_ONNX:
        fam += [f"nan {pair}", f"signed-zero {pair}"]
    return fam


def _required_onnx_families(spec: opspecs.OpSpec, kind: str, combos: list[tuple[str, ...]]) -> list[str]:
    """The families every ai.onnx version needs, and those its sub-byte types and attributes add."""
    fam = ["empty", "scalar", "simd-sizes", "zero-point-omitted"]
    if any(TYPES[c[0 if kind == "DQ" else -1]].bits < 8 for c in combos):
        fam.append("sub-byte-odd")
    fam += [name for attr, name in (("saturate", "saturate-attr"), ("precision", "precision"),
                                    ("output_dtype", "output-dtype")) if attr in spec.attributes]
    return fam


def _axis_forms(spec: opspecs.OpSpec) -> tuple[str, ...]:
    """How a per-axis / blocked node may carry its axis: written positive or negative, or left out (the
    default axis 1) where the version has one (com.microsoft's operators read a missing axis as
    per-tensor)."""
    return ("positive", "negative") + (() if spec.axis_optional_per_tensor else ("default",))


def _layout(kind: str, rank: int, axis: int, spelling: str, types: str) -> str:
    return f"{kind} rank {rank} axis {axis} {spelling} {types}"


def _layout_types(kind: str, combo: tuple[str, ...]) -> str:
    """A node's types in the layouts crossing: the quantized type and the scale's type."""
    return f"{combo[0] if kind == 'DQ' else combo[-1]}/{combo[1]}"


def _layout_required(quantized: str, scale: str) -> bool:
    return (scale == "float" or quantized in LAYOUT_TARGETS
            or (scale == "float16" and TYPES[quantized].bits == 8))


def _required_layouts(spec: opspecs.OpSpec, kind: str, combos: list[tuple[str, ...]], req: set[str]) -> None:
    """Each of :data:`LAYOUTS` the version allows, in each spelling, for every quantized type with a float
    scale (an 8-bit one with a float16 scale too) and every scale type with the targets of
    :data:`LAYOUT_TARGETS`."""
    pairs = {_layout_types(kind, c) for c in combos}
    wanted = {p for p in pairs if _layout_required(*p.split("/"))}
    for g, rank, axis in LAYOUTS:
        if g not in spec.granularities:
            continue
        spellings = ["positive", "negative"]
        if axis == 1 and "default" in _axis_forms(spec):
            spellings.append("default")
        req.update(_layout(g, rank, axis, sp, t) for sp in spellings for t in wanted)


def _required_parameters(spec: opspecs.OpSpec, req: set[str]) -> None:
    req.update(f"per-tensor scalar scale {z}" for z in ZERO_POINTS)
    req.update(f"per-tensor [1] scale {z}" for z in ZERO_POINTS)
    req.add("per-tensor negative scale")
    for kind in (opspecs.PER_AXIS, opspecs.BLOCKED):
        if kind in spec.granularities:
            req.update(f"{kind} axis {form} {z}" for form in _axis_forms(spec) for z in ZERO_POINTS)
            req.add(f"{kind} negative scale")


def _covered_parameters(case: ConcreteCase, params: set[str]) -> None:
    scale = case.inputs[1][1] if len(case.inputs) > 1 else None
    if scale is None:
        return
    zp = "with zero point" if len(case.inputs) > 2 and case.inputs[2][1] is not None else "without zero point"
    if case.granularity == opspecs.PER_TENSOR:
        params.add(f"per-tensor {'scalar' if scale.ndim == 0 else '[1]'} scale {zp}")
    else:
        axis = case.attrs.get("axis")
        form = "default" if axis is None else "negative" if axis < 0 else "positive"
        params.add(f"{case.granularity} axis {form} {zp}")
    with np.errstate(invalid="ignore"):
        if scale.size and bool((to_float64(scale) < 0).any()):
            params.add(f"{case.granularity} negative scale")


def _covered_layout(case: ConcreteCase, layouts: set[str]) -> None:
    if case.granularity not in (opspecs.PER_AXIS, opspecs.BLOCKED) or "rank" not in case.detail:
        return
    rank = case.detail["rank"]
    axis = case.attrs.get("axis")
    spelling = "default" if axis is None else "negative" if axis < 0 else "positive"
    kind = "DQ" if "Dequantize" in case.op else "Q"
    combo = tuple(v for v in (case.types.get("x"), case.types.get("scale"), case.types.get("y")) if v)
    layouts.add(_layout(case.granularity, rank, 1 if axis is None else axis % rank, spelling,
                        _layout_types(kind, combo)))


def _covered(case: ConcreteCase, cov: VersionCoverage) -> None:
    if case.op != "DynamicQuantizeLinear":
        _covered_parameters(case, cov.covered["parameters"])
        _covered_layout(case, cov.covered["layouts"])
    gran = cov.covered["granularity"]
    fam = cov.covered["families"]
    d = case.detail
    if case.granularity == opspecs.PER_TENSOR:
        gran.add(opspecs.PER_TENSOR)
    elif case.granularity == opspecs.PER_AXIS:
        gran.add(f"per-axis rank {d['rank']} axis {d['axis']}")
    elif case.granularity == opspecs.BLOCKED:
        r, a = d["rank"], d["axis"]
        gran.add(f"blocked rank {r} axis {a % r}")
        gran.add(f"blocked {d['block']}")
        gran.add("blocked with zero point" if d.get("zero_point") == "given"
                 else "blocked without zero point")
    x, y = case.types.get("x"), case.types.get("y")
    pair = f"{x}->{y}"
    if case.family in ("saturation-finite", "saturation-huge", "saturation-inf", "ties", "nan",
                       "signed-zero"):
        fam.add(f"{case.family} {pair}")
        if case.family == "saturation-inf" and case.op == "DynamicQuantizeLinear":
            fam.add("saturation-inf")
    if case.family == "ties-near-bounds":
        fam.add(f"ties {pair}")
    if case.family == "all-codes":
        fam.add(f"all-codes {x}")
    if case.family in ("int32-extremes", "boundary-codes"):
        fam.add(f"{case.family} {x}")
    fam.add(case.family)


def coverage(cases: Sequence[ConcreteCase]) -> list[VersionCoverage]:
    """Coverage of every operator version the oracle knows (invalid cases do not count)."""
    by_version: dict[str, list[ConcreteCase]] = defaultdict(list)
    for c in cases:
        if c.status != CaseStatus.INVALID:
            by_version[f"{c.domain}::{c.op}-{c.version}"].append(c)
    result = []
    for spec in opspecs.all_specs():
        cov = VersionCoverage(spec.key)
        allowed = set(opspecs.type_combinations(spec))
        got = {tuple(v for v in (c.types["x"], c.types["scale"], c.types["y"]) if v)
               for c in by_version[spec.key]}
        cov.types_allowed = len(allowed)
        cov.types_covered = len(allowed & got)
        cov.type_gaps = ["/".join(t) for t in sorted(allowed - got)]
        _required(spec, cov)
        for c in by_version[spec.key]:
            _covered(c, cov)
        result.append(cov)
    return result


def render(result: Sequence[VersionCoverage]) -> str:
    lines = [f"{'operator version':46} {'types':>11} {'granularity':>12} {'parameters':>11} "
             f"{'layouts':>11} {'families':>10}  gaps"]
    total_gaps = 0
    ai_allowed = ai_covered = 0
    for cov in result:
        g = cov.counts("granularity")
        f = cov.counts("families")
        p = cov.counts("parameters")
        gaps = cov.gaps()
        total_gaps += len(gaps)
        if cov.key.startswith("ai.onnx"):
            ai_allowed += cov.types_allowed
            ai_covered += cov.types_covered
        lay = cov.counts("layouts")
        lines.append(f"{cov.key:46} {cov.types_covered:>5}/{cov.types_allowed:<5} {g[0]:>5}/{g[1]:<6} "
                     f"{p[0]:>5}/{p[1]:<5} {lay[0]:>5}/{lay[1]:<5} {f[0]:>4}/{f[1]:<5}  {len(gaps)}")
        lines += [f"    gap: {gap}" for gap in gaps]
    lines.append(f"ai.onnx type combinations: {ai_covered}/{ai_allowed}; gaps: {total_gaps}")
    return "\n".join(lines)


def render_layouts(result: Sequence[VersionCoverage]) -> str:
    """The layouts crossing of each version with per-axis or blocked nodes: a row per types (quantized /
    scale), a column per layout (granularity, rank, normalized axis, spelling: ``p1``, ``n1``, ``d1``);
    ``+`` covered, ``-`` a required gap, ``.`` neither."""
    lines: list[str] = []
    for cov in result:
        seen = cov.required["layouts"] | cov.covered["layouts"]
        if not seen:
            continue
        cells = {tuple(k.rsplit(" ", 1)) for k in seen}  # (layout, types)
        columns = sorted({c for c, _ in cells}, key=_column_order)
        rows = sorted({t for _, t in cells})
        lines += ["", f"{cov.key}: {', '.join(f'{i}={_column_label(c)}' for i, c in enumerate(columns))}",
                  f"{'':24} " + " ".join(f"{i:>2}" for i in range(len(columns)))]
        for t in rows:
            marks = []
            for c in columns:
                key = f"{c} {t}"
                marks.append("+" if key in cov.covered["layouts"]
                             else "-" if key in cov.required["layouts"] else ".")
            lines.append(f"{t:24} " + " ".join(f"{m:>2}" for m in marks))
    return "\n".join(lines)


def _column_order(layout: str) -> tuple[str, int, int, str]:
    kind, _, rank, _, axis, spelling = layout.rsplit(" ", 5)
    return (kind, int(rank), int(axis), spelling)


def _column_label(layout: str) -> str:
    kind, _, rank, _, axis, spelling = layout.rsplit(" ", 5)
    return f"{'pa' if kind == opspecs.PER_AXIS else 'bl'}r{rank}{spelling[0]}{axis}"
