"""Coverage of the graph cases: which ops, patterns and round-trip types the graph families hold, and the
gaps.

Required, from the registries (never by hand): every graph family of the case schema; every exact op of the
kernel's graph registry (``reference.graph.EXACT_OPS``) between a DequantizeLinear and a QuantizeLinear (its
values dequantized on the way in and quantized on the way out), with the same and with different parameters on
the two sides where it moves elements; every output type of the newest ai.onnx QuantizeLinear in a round trip
Q -> DQ; DynamicQuantizeLinear feeding a DequantizeLinear. Every compute op (``reference.graph.COMPUTE_OPS``)
between a DequantizeLinear and a QuantizeLinear in an exact case (one acceptable code per element) whose
exact result meets a tie of the QuantizeLinear (``GraphCase.ties``); the integer ops (MatMulInteger, Cast)
after a DynamicQuantizeLinear in an exact case; a DequantizeLinear feeding a MatMul with a float output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qdq_conformance import opspecs
from qdq_conformance.reference.graph_oracle import COMPARING, COMPUTE_OPS, EXACT_OPS
from qdq_conformance.types import by_dtype

from .case import ConcreteCase
from .file_schemas import schema_enum
from .graph_case import GraphCase


@dataclass
class GraphCoverage:
    required: dict[str, set[str]] = field(default_factory=dict)
    covered: dict[str, set[str]] = field(default_factory=dict)
    cases: int = 0

    def gaps(self) -> list[str]:
        return [f"{area}: {g}" for area, req in sorted(self.required.items())
                for g in sorted(req - self.covered.get(area, set()))]


def _required() -> dict[str, set[str]]:
    families = set(schema_enum("$defs", "graph", "properties", "family"))
    between = {f"DQ -> {op} -> Q" for op in EXACT_OPS}
    params = {f"{op} {p}" for op in EXACT_OPS if op not in COMPARING or op == "MaxPool"
              for p in ("same parameters", "different parameters")}
    newest = max(opspecs.versions(opspecs.AI_ONNX, "QuantizeLinear"))
    spec = opspecs.get(opspecs.AI_ONNX, "QuantizeLinear", newest)
    types = {f"Q -> DQ {combo[-1]}" for combo in opspecs.type_combinations(spec)}
    tied = {f"DQ -> {op} -> Q, exact, with a tie" for op in COMPUTE_OPS if op not in _INTEGER}
    integer = {f"DynamicQuantizeLinear -> {op}, exact" for op in _INTEGER}
    return {"families": families, "ops between DQ and Q": between, "parameters around": params,
            "round-trip types": types, "dynamic": {"DynamicQuantizeLinear -> DequantizeLinear"},
            "compute ops": tied | integer | {"DQ -> MatMul -> float output"}}


#: the compute ops on integers (no rounding of their own): required after a DynamicQuantizeLinear, exact
_INTEGER = ("MatMulInteger", "Cast")


def _producers(case: GraphCase) -> dict[str, Any]:
    return {o: n for n in case.nodes for o in n.outputs}


def graph_coverage(cases: Sequence[ConcreteCase | GraphCase]) -> GraphCoverage:
    """The coverage of the graph cases among ``cases`` (other cases are ignored)."""
    cov = GraphCoverage(required=_required())
    got: dict[str, set[str]] = {k: set() for k in cov.required}
    for case in cases:
        if not isinstance(case, GraphCase):
            continue
        cov.cases += 1
        got["families"].add(case.family)
        made = _producers(case)
        params = dict(case.params)
        _compute(case, made, got["compute ops"])
        for n in case.nodes:
            src = made.get(n.inputs[0]) if n.inputs else None
            if n.op == "DequantizeLinear" and src is not None and src.op == "DynamicQuantizeLinear":
                got["dynamic"].add("DynamicQuantizeLinear -> DequantizeLinear")
            if n.op == "DequantizeLinear" and src is not None and src.op == "QuantizeLinear":
                zp = params.get(src.inputs[2]) if len(src.inputs) > 2 else None
                got["round-trip types"].add("Q -> DQ "
                                            f"{by_dtype(zp.dtype).name if zp is not None else 'uint8'}")
            if n.op not in EXACT_OPS or _through(case, made, n, back=True) is None:
                continue
            after = _through(case, made, n, back=False)
            if after is None:
                continue
            dq = _through(case, made, n, back=True)
            assert dq is not None
            got["ops between DQ and Q"].add(f"DQ -> {n.op} -> Q")
            same = dq.inputs[1:] == after.inputs[1:] or _same_values(params, dq.inputs[1:], after.inputs[1:])
            got["parameters around"].add(f"{n.op} {'same' if same else 'different'} parameters")
    cov.covered = got
    return cov


def _compute(case: GraphCase, made: dict[str, Any], got: set[str]) -> None:
    """The compute-op patterns ``case`` covers (exact with a tie, the integer ops, a float output)."""
    outputs = set(case.output_names)
    dynamic = any(n.op == "DynamicQuantizeLinear" for n in case.nodes)
    for n in case.nodes:
        if n.op not in COMPUTE_OPS:
            continue
        if n.op in _INTEGER and dynamic and n.op in case.exact_ops:
            got.add(f"DynamicQuantizeLinear -> {n.op}, exact")
        if not any(_from_dq(made, i, len(case.nodes)) for i in n.inputs if i):
            continue
        if n.op == "MatMul" and n.outputs[0] in outputs:
            got.add("DQ -> MatMul -> float output")
        q = _through(case, made, n, back=False)
        if q is not None and n.op in case.exact_ops and n.op in case.ties:
            got.add(f"DQ -> {n.op} -> Q, exact, with a tie")


def _from_dq(made: dict[str, Any], name: str, limit: int) -> bool:
    """Whether tensor ``name`` is a DequantizeLinear's output, through exact ops only."""
    for _ in range(limit):
        node = made.get(name)
        if node is None or node.op not in EXACT_OPS or not node.inputs:
            return node is not None and node.op == "DequantizeLinear"
        name = node.inputs[0]
    return False


def _through(case: GraphCase, made: dict[str, Any], node: Any, back: bool) -> Any:
    """The DequantizeLinear that feeds ``node`` (``back``), or the QuantizeLinear it feeds, through exact ops
    only; None if there is none."""
    seen = 0
    while seen < len(case.nodes):
        seen += 1
        if back:
            node = made.get(node.inputs[0]) if node.inputs else None
            want = "DequantizeLinear"
        else:
            node = next((m for m in case.nodes if node.outputs[0] in m.inputs), None)
            want = "QuantizeLinear"
        if node is None or node.op == want:
            return node
        if node.op not in EXACT_OPS:
            return None
    return None


def _same_values(params: dict[str, Any], left: Sequence[str], right: Sequence[str]) -> bool:
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        va, vb = params.get(a), params.get(b)
        if va is None or vb is None or va.dtype != vb.dtype or va.tobytes() != vb.tobytes():
            return False
    return True


def render_graph(cov: GraphCoverage) -> str:
    lines = [f"graph cases: {cov.cases:,}"]
    for area, req in sorted(cov.required.items()):
        have = req & cov.covered.get(area, set())
        lines.append(f"  {area:30} {len(have):>3}/{len(req):<3}")
    gaps = cov.gaps()
    lines += [f"    gap: {g}" for g in gaps]
    lines.append(f"graph gaps: {len(gaps)}")
    return "\n".join(lines)
