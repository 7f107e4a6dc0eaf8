"""The graph templates of :mod:`.graphs`' patterns: the nodes (a QuantizeLinear in front of each
DequantizeLinear of the model, with its parameters), the model's own scales, zero points and constants as
values, x placed on the first quantization's boundary values, the spec sentence of each operator."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from qdq_conformance import opspecs
from qdq_conformance.domain import CaseStatus
from qdq_conformance.types import TYPES

from ..boundaries import place
from ..recipe import Ctx
from ..values import X_RECIPES, literals, to_type
from .clauses import clause
from .nodes import NodeConfig, NodeRef
from .templates import source


def qnode(cfg: NodeConfig, x: str, y: str, s: str, z: str, op: str | None = None) -> dict[str, object]:
    node: dict[str, object] = {"op": op or cfg.spec.name,
                            "inputs": [x, s, z] if cfg.zero_point == "given" else [x, s], "outputs": [y]}
    if cfg.spec.domain != opspecs.AI_ONNX:
        node["domain"] = cfg.spec.domain
    attrs = {k: v for k, v in sorted(cfg.attrs.items())}
    if attrs and (op is None or op == cfg.spec.name):
        node["attributes"] = attrs
    return node


def params(cfg: NodeConfig, s: str, z: str) -> dict[str, object]:
    assert cfg.scale is not None and cfg.scale_values is not None
    out: dict[str, object] = {s: {"type": cfg.scale, "values": _flat(cfg.scale_values),
                               "shape": list(cfg.scale_values.shape)}}
    if cfg.zero_point == "given" and cfg.zero_point_values is not None:
        zt = cfg.zero_point_type or cfg.y
        out[z] = {"type": zt, "values": _flat(cfg.zero_point_values),
                  "shape": list(cfg.zero_point_values.shape)}
    return out


def _flat(a: np.ndarray) -> Any:  # noqa: ANN401 - a literal or a list of them
    values = literals(a.reshape(-1))
    return values[0] if a.ndim == 0 else values


@dataclass(frozen=True)
class First:
    """A QuantizeLinear in front of a DequantizeLinear of the model (its parameters; x of the DQ's output
    type), or the model's own QuantizeLinear of a round trip: what x is placed through."""

    spec: opspecs.OpSpec
    x: str
    scale: str
    y: str
    scale_values: np.ndarray
    zero_point_values: np.ndarray | None


def _front(dq: NodeConfig) -> First:
    version = 1 if dq.spec.domain != opspecs.AI_ONNX else dq.spec.version
    spec = opspecs.resolve(dq.spec.domain, "QuantizeLinear", version)
    assert dq.scale is not None and dq.scale_values is not None
    return First(spec, dq.y, dq.scale, dq.x, dq.scale_values, dq.zero_point_values)


#: an op between the quantization nodes: the node, its attributes, its constant inputs by position
Op = tuple[onnx.NodeProto, dict[str, "int | list[int]"], dict[int, np.ndarray]]


@dataclass(frozen=True)
class GraphInput:
    type: str
    shape: list[int]
    first: First  # the quantization x is placed through


@dataclass
class GraphData:
    """A pattern's graph before x has values: nodes, parameters, inputs, constants, the quantization nodes
    whose sentences it cites, the opset, the op between them."""

    nodes: list[dict[str, object]]
    params: dict[str, object]
    inputs: dict[str, GraphInput]
    constants: dict[str, object]
    clauses: list[NodeConfig]
    opset: int
    op: str | None


def chain_data(dqs: list[NodeConfig], op: Op | None, q: NodeConfig, opset: int,
               shapes: list[tuple[int, ...]]) -> GraphData:
    nodes: list[dict[str, object]] = []
    values: dict[str, object] = {}
    inputs: dict[str, GraphInput] = {}
    mids = []
    for k, dq in enumerate(dqs, 1):
        x, s, z, qk, d = ((f"x{k}", f"s{k}", f"z{k}", f"q{k}", f"d{k}") if len(dqs) > 1
                          else ("x", "s1", "z1", "q1", "d1"))
        nodes.append(qnode(dq, x, qk, s, z, op="QuantizeLinear"))
        nodes.append(qnode(dq, qk, d, s, z))
        values.update(params(dq, s, z))
        inputs[x] = GraphInput(dq.y, list(shapes[k - 1]), _front(dq))
        mids.append(d)
    constants: dict[str, object] = {}
    tail = mids[0]
    if op is not None:
        node, attrs, consts = op
        names = list(mids)
        args: list[str] = []
        for i, name in enumerate(node.input):
            if i in consts:
                arr = consts[i]
                ctype = "int64" if arr.dtype.kind in "iu" else dqs[0].y
                constants[f"c{i}"] = {"type": ctype, "values": _flat(arr.astype(np.float64)),
                                      "shape": list(arr.shape)}
                args.append(f"c{i}")
            else:
                args.append(names.pop(0) if name else "")
        entry: dict[str, object] = {"op": node.op_type, "inputs": args, "outputs": ["m"]}
        if attrs:
            entry["attributes"] = attrs
        nodes.append(entry)
        tail = "m"
    nodes.append(qnode(q, tail, "qy", "sy", "zy"))
    nodes.append(qnode(q, "qy", "y", "sy", "zy", op="DequantizeLinear") | dq_domain(q))
    values.update(params(q, "sy", "zy"))
    return GraphData(nodes, values, inputs, constants, [*dqs, q], opset, op[0].op_type if op else None)


def dq_domain(q: NodeConfig) -> dict[str, object]:
    return {"domain": q.spec.domain} if q.spec.domain != opspecs.AI_ONNX else {}


# -- values and the template ---------------------------------------------------------------------------------


def x_values(first: First, shape: tuple[int, ...], plain: int) -> list[str | int | float] | None:
    """x placed through the first quantization's own scale and zero point: ties and range edges (``plain``
    0), ties only (1), or values inside the range (2)."""
    n = math.prod(shape)
    scale = to_type(first.scale_values.astype(np.float64), TYPES[first.scale])
    zp = None if first.zero_point_values is None else to_type(first.zero_point_values, TYPES[first.y])
    ctx = Ctx("Q", TYPES[first.x], TYPES[first.scale], TYPES[first.y], float(scale.reshape(-1)[0]),
              0.0 if zp is None else float(zp.reshape(-1)[0]))
    if plain == 2:
        recipe = X_RECIPES["in-range"](ctx)
        return None if recipe is None else literals(np.resize(np.asarray(recipe.values, np.float64), n))
    parts: list[str | int | float] = []
    for name in ["boundary-ties"] if plain else ["boundary-ties", "boundary-range"]:
        got = place(name, ctx, first.spec, (n,), scale, zp, {})
        if got is None:
            return None
        values = literals(np.asarray(got, np.float64).reshape(-1))
        parts += values[: _period(values)]
    return parts[:n]


def _period(values: list[str | int | float]) -> int:
    """The length of the shortest prefix ``values`` repeats (a graph input's values are repeated to fill its
    shape, so the recipe's cycle is written once)."""
    n = len(values)
    return next((p for p in range(1, n) if all(values[i] == values[i % p] for i in range(p, n))), n)


def _op_clause(op: str, opset: int) -> dict[str, str]:
    doc = " ".join((onnx.defs.get_schema(op, opset, "").doc or "").split())
    end = doc.find(". ")
    return {"operator": op, "versions": str(opset), "text": doc[: end + 1] if end > 0 else doc}


def template(p_id: str, family: str, text: str, data: GraphData, refs: list[NodeRef],
             plain: int) -> dict[str, object] | None:
    """The graph template of a pattern, x from the recipes (``plain``: see :func:`x_values`); None when x
    cannot be placed."""
    inputs: dict[str, object] = {}
    for name, src in data.inputs.items():
        values = x_values(src.first, tuple(src.shape), plain)
        if values is None:
            return None
        inputs[name] = {"type": src.type, "shape": src.shape, "values": values}
    seen: dict[tuple[str, str, int], dict[str, str]] = {}
    for cfg in data.clauses:
        s = cfg.spec
        quoted = "random" if cfg.kind == "Q" else "all-codes"  # (the formula's sentence)
        seen.setdefault((s.domain, s.name, s.version),
                        clause(s.domain, s.name, s.version, cfg.kind, quoted, "per-tensor"))
        if cfg.kind == "DQ":  # (the QuantizeLinear in front of it, with its parameters)
            f = _front(cfg).spec
            seen.setdefault((f.domain, f.name, f.version),
                            clause(f.domain, f.name, f.version, "Q", "random", "per-tensor"))
    spec = list(seen.values()) + ([_op_clause(data.op, data.opset)] if data.op else [])
    nodes = [r.text() for r in refs]
    out: dict[str, object] = {
        "id": p_id, "description": f"{text} around {nodes[0]}" + (f" and {len(nodes) - 1} more like it"
                                                                   if len(nodes) > 1 else "")
        + ", with the model's own scales and zero points; x on ties and range edges of the first quantization"
        + ("" if not plain else " (plainer values: the boundary ones make the answer depend on a catalogued "
           "reading or reach a comparing op as NaN)"),
        "spec": spec, "family": family, "status": CaseStatus.NORMATIVE.value, "opsets": [data.opset],
        "inputs": inputs, "params": data.params}
    if data.constants:
        out["constants"] = data.constants
    out.update({"nodes": data.nodes, "outputs": ["y"], "source": source(refs, [])})
    return out
