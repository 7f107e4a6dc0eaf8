"""What a graph case says of its compute ops: their attributes typed as ONNX declares them, why its comparison
is an interval, and which compute ops meet an exact tie of the QuantizeLinear after them (coverage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx

from qdq_conformance.reference.graph_oracle import COMPUTE_OPS, EXACT_OPS, QUANT_OPS, Interval, Step
from qdq_conformance.types import by_dtype

from .graph_case import GraphNode

_A = onnx.defs.OpSchema.AttrType


def typed_attributes(op: str, domain: str, opset: int, attrs: Mapping[str, object]) -> dict[str, object]:
    """A non-quantization node's attributes as the op's schema at ``opset`` types them (a whole number
    written for a FLOAT attribute becomes a float); ValueError naming an attribute the op does not have or a
    value of the wrong kind. Quantization nodes' attributes are the kernel's to check."""
    if op in QUANT_OPS or domain:
        return dict(attrs)
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        raise ValueError(f"{op} is not defined at opset {opset}") from None
    out: dict[str, object] = {}
    for name, v in attrs.items():
        a = schema.attributes.get(name)
        if a is None:
            raise ValueError(f"attribute {name}: {op}-{schema.since_version} has no such attribute "
                             f"({', '.join(sorted(schema.attributes)) or 'none'})")
        items: list[object] = list(v) if isinstance(v, list) else []
        numbers = isinstance(v, list) and all(isinstance(i, (int, float)) for i in items)
        if a.type == _A.FLOAT and isinstance(v, (int, float)):
            out[name] = float(v)
        elif a.type == _A.FLOATS and numbers:
            out[name] = [float(i) for i in items if isinstance(i, (int, float))]
        elif (a.type == _A.INT and isinstance(v, int) or a.type == _A.STRING and isinstance(v, str)
              or a.type == _A.INTS and numbers and all(isinstance(i, int) for i in items)):
            out[name] = v
        else:
            kind = str(a.type).rsplit(".", 1)[-1]
            raise ValueError(f"attribute {name}: {op} declares it {kind}, got {v!r}")
    return out


def _codes_text(iv: Interval) -> tuple[int, str]:
    """(elements with more than one acceptable value, how wide the widest is)."""
    low, high = iv.low.astype(np.float64), iv.high.astype(np.float64)
    wide = low != high
    if by_dtype(iv.value.dtype).is_float:
        return int(wide.sum()), "a float interval"
    return int(wide.sum()), f"up to {int((high - low).max()) + 1} acceptable codes"


def describe_bounds(nodes: Sequence[GraphNode], outputs: Sequence[str], bounded: Sequence[Interval]
                    ) -> str | None:
    """Why the case's comparison is ``interval`` (None when every output is exact)."""
    parts = []
    for name, iv in zip(outputs, bounded, strict=True):
        if iv.is_exact():
            continue
        count, width = _codes_text(iv)
        parts.append(f"output {name}: {count} of {iv.value.size} elements have {width}")
    if not parts:
        return None
    ops = ", ".join(dict.fromkeys(n.op for n in nodes if n.op in COMPUTE_OPS))
    return (f"a legitimate float32 evaluation of {ops} (any summation order, FMA or not, exp within its "
            f"budget) can lead to more than one value: {'; '.join(parts)} (each passes; the interval oracle, "
            "docs/kernel.md)")


def _source(nodes: Sequence[GraphNode], made: dict[str, GraphNode], name: str) -> GraphNode | None:
    """The compute op whose result reaches tensor ``name`` through exact ops only, or None."""
    for _ in range(len(nodes)):
        node = made.get(name)
        if node is None or node.op in COMPUTE_OPS:
            return node
        if node.op not in EXACT_OPS or not node.inputs:
            return None
        name = node.inputs[0]
    return None


def tie_ops(nodes: Sequence[GraphNode], steps: Sequence[Step]) -> list[str]:
    """The compute ops whose exact float32 result (one acceptable value) meets a tie of a per-tensor
    ai.onnx QuantizeLinear after it (x / y_scale exactly halfway between two integers)."""
    made = {o: n for n in nodes for o in n.outputs}
    out: list[str] = []
    for s in steps:
        n = nodes[s.index]
        if n.op != "QuantizeLinear" or n.domain or len(s.inputs) < 2:
            continue
        x, scale = s.inputs[0], s.inputs[1]
        producer = next((p for p in steps if n.inputs[0] in nodes[p.index].outputs), None)
        src = _source(nodes, made, n.inputs[0])
        if src is None or producer is None or x is None or scale is None or scale.size != 1 or \
                x.dtype != np.float32 or scale.dtype != np.float32:
            continue
        iv = producer.bounds[nodes[producer.index].outputs.index(n.inputs[0])]
        q = (x / scale.reshape(())).astype(np.float32)
        if bool((iv.single() & (q - np.floor(q) == 0.5)).any()) and src.op not in out:
            out.append(src.op)
    return out
