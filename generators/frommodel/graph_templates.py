"""The graph templates of the patterns :mod:`.graphs` and :mod:`.compute` find: the nodes (a QuantizeLinear in
front of each DequantizeLinear of an activation, with its parameters; the DequantizeLinear of each weight, its
codes the model's own, sliced), the model's own scales, zero points, attributes and constants as values, x
placed on the first quantization's boundary values (a float input without a quantization: seeded values), the
spec sentence of each operator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
from .modelgraph import Attrs
from .node_configs import NodeConfig, NodeRef
from .templates import source

#: the seed of a float input's values (inputs no quantization places)
SEED = 1


def qnode(cfg: NodeConfig, x: str, y: str, s: str, z: str, op: str | None = None) -> dict[str, object]:
    node: dict[str, object] = {"op": op or cfg.spec.name,
                            "inputs": [x, s, z] if cfg.zero_point == "given" else [x, s], "outputs": [y]}
    if cfg.spec.domain != opspecs.AI_ONNX:
        node["domain"] = cfg.spec.domain
    attrs = {k: v for k, v in sorted(cfg.attrs.items())}
    if attrs and (op is None or op == cfg.spec.name):
        node["attributes"] = attrs
    return node


def params(cfg: NodeConfig, s: str, z: str, scale: np.ndarray | None = None,
           zero_point: np.ndarray | None = None) -> dict[str, object]:
    """The node's scale and zero point as graph values (``scale`` / ``zero_point``: a weight's, sliced)."""
    scale = cfg.scale_values if scale is None else scale
    zero_point = cfg.zero_point_values if zero_point is None else zero_point
    assert cfg.scale is not None and scale is not None
    out: dict[str, object] = {s: value(cfg.scale, scale)}
    if cfg.zero_point == "given" and zero_point is not None:
        out[z] = value(cfg.zero_point_type or cfg.y, zero_point)
    return out


def value(type_name: str, a: np.ndarray) -> dict[str, object]:
    """A graph value: its type, values (a scalar's as one literal) and shape."""
    return {"type": type_name, "values": _flat(a), "shape": list(a.shape)}


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


@dataclass(frozen=True)
class GraphInput:
    type: str
    shape: list[int]
    first: First | None  # the quantization x is placed through (None: seeded float values)


#: a quantization node of the graph: its configuration, the granularity its sentence cites, a QuantizeLinear
#: in front of it (an activation's DequantizeLinear)
Quant = tuple[NodeConfig, str, bool]


@dataclass
class GraphData:
    """A pattern's graph before x has values: nodes, parameters, inputs, constants, the quantization nodes and
    other ops whose sentences it cites, the opset, what was cut (the case's ``source.concrete``)."""

    nodes: list[dict[str, object]]
    params: dict[str, object]
    inputs: dict[str, GraphInput]
    constants: dict[str, object]
    quant: list[Quant]
    opset: int
    ops: list[str]
    notes: list[str] = field(default_factory=list)
    weights: bool = False  # holds the model's own weights


@dataclass(frozen=True)
class Found:
    """A pattern found around a node: its key (patterns with one key are one), family, text, the data of its
    template (None when it has none), the node it is around, and why it has no template."""

    key: tuple[object, ...]
    family: str
    text: str
    data: GraphData | None
    ref: NodeRef
    problem: str = ""


@dataclass
class Input:
    """One input of the op between the quantization nodes as the graph holds it: ``act`` (x -> a
    QuantizeLinear with the DequantizeLinear's parameters -> the DequantizeLinear), ``weight`` (the model's
    codes, sliced -> its DequantizeLinear), ``float`` (a float graph input), ``const`` or ``absent``."""

    kind: str
    cfg: NodeConfig | None = None
    shape: tuple[int, ...] = ()
    values: np.ndarray | None = None  # a weight's codes or a constant's values
    type: str = ""  # a float input's or a constant's element type
    scale: np.ndarray | None = None  # a weight's parameters as the case holds them
    zero_point: np.ndarray | None = None


@dataclass
class _Built:
    nodes: list[dict[str, object]] = field(default_factory=list)
    values: dict[str, object] = field(default_factory=dict)
    inputs: dict[str, GraphInput] = field(default_factory=dict)
    constants: dict[str, object] = field(default_factory=dict)
    quant: list[Quant] = field(default_factory=list)


def _input(b: _Built, i: int, src: Input, act: str, runtime: int) -> str:
    """Add what input ``i`` needs; the name the op reads (``act``: the activation's suffix)."""
    if src.kind == "absent":
        return ""
    if src.kind == "const":
        assert src.values is not None
        b.constants[f"c{i}"] = value(src.type, src.values.astype(np.float64))
        return f"c{i}"
    if src.kind == "float":
        name = "x" if runtime == 1 else f"x{i}"
        b.inputs[name] = GraphInput(src.type, list(src.shape), None)
        return name
    cfg = src.cfg
    assert cfg is not None
    if src.kind == "weight":
        assert src.values is not None
        b.constants[f"w{i}"] = value(cfg.x, src.values)
        b.nodes.append(qnode(cfg, f"w{i}", f"wd{i}", f"ws{i}", f"wz{i}"))
        b.values.update(params(cfg, f"ws{i}", f"wz{i}", src.scale, src.zero_point))
        b.quant.append((cfg, cfg.granularity, False))
        return f"wd{i}"
    x, s, z, qk, d = (f"x{act}", f"s{act}", f"z{act}", f"q{act}", f"d{act}") if act else (
        "x", "s1", "z1", "q1", "d1")
    b.nodes.append(qnode(cfg, x, qk, s, z, op="QuantizeLinear"))
    b.nodes.append(qnode(cfg, qk, d, s, z))
    b.values.update(params(cfg, s, z))
    b.inputs[x] = GraphInput(cfg.y, list(src.shape), _front(cfg))
    b.quant.append((cfg, "per-tensor", True))
    return d


def op_data(inputs: list[Input], op: str | None, attrs: Attrs, q: NodeConfig | None, opset: int,
            notes: list[str] | None = None) -> GraphData:
    """x_k -> Q -> DQ (each activation), the weights' DequantizeLinear, the constants -> [op] -> q -> its
    DequantizeLinear -> y; without ``q``, the op's own output is y (a float output)."""
    b = _Built()
    acts = sum(1 for i in inputs if i.kind == "act")
    runtime = sum(1 for i in inputs if i.kind in ("act", "float"))
    names: list[str] = []
    k = 0
    for i, src in enumerate(inputs):
        k += src.kind == "act"
        names.append(_input(b, i, src, str(k) if acts > 1 else "", runtime))
    tail = names[0]
    if op is not None:
        entry: dict[str, object] = {"op": op, "inputs": names, "outputs": ["m" if q else "y"]}
        if attrs:
            entry["attributes"] = attrs
        b.nodes.append(entry)
        tail = "m"
    if q is not None:
        b.nodes.append(qnode(q, tail, "qy", "sy", "zy"))
        b.nodes.append(qnode(q, "qy", "y", "sy", "zy", op="DequantizeLinear") | dq_domain(q))
        b.values.update(params(q, "sy", "zy"))
        b.quant.append((q, "per-tensor", False))
    return GraphData(b.nodes, b.values, b.inputs, b.constants, b.quant, opset, [op] if op else [],
                     notes or [], any(i.kind == "weight" for i in inputs))


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


def seeded(shape: list[int], type_name: str) -> list[str | int | float]:
    """A float input's values: seeded, both signs, multiples of 1/64 within [-4, 4] (exact in every float
    type the oracle computes in, not on any int8 grid of a quantizing kernel)."""
    rng = np.random.default_rng(SEED)
    values = np.round(rng.uniform(-4.0, 4.0, math.prod(shape)) * 64) / 64
    return literals(to_type(values, TYPES[type_name]))


def _period(values: list[str | int | float]) -> int:
    """The length of the shortest prefix ``values`` repeats (a graph input's values are repeated to fill its
    shape, so the recipe's cycle is written once)."""
    n = len(values)
    return next((p for p in range(1, n) if all(values[i] == values[i % p] for i in range(p, n))), n)


def _op_clause(op: str, opset: int) -> dict[str, str]:
    doc = " ".join((onnx.defs.get_schema(op, opset, "").doc or "").split())
    end = doc.find(". ")
    return {"operator": op, "versions": str(opset), "text": doc[: end + 1] if end > 0 else doc}


#: the family whose sentence a quantization node of a graph quotes (the formula's)
_QUOTED = {"Q": "random", "DQ": "all-codes", "DQL": "dynamic"}


def _spec(data: GraphData) -> list[dict[str, str]]:
    seen: dict[tuple[str, str, int, str], dict[str, str]] = {}
    for cfg, gran, front in data.quant:
        s = cfg.spec
        seen.setdefault((s.domain, s.name, s.version, gran),
                        clause(s.domain, s.name, s.version, cfg.kind, _QUOTED[cfg.kind], gran))
        if front:  # (the QuantizeLinear in front of it, with its parameters)
            f = _front(cfg).spec
            seen.setdefault((f.domain, f.name, f.version, "per-tensor"),
                            clause(f.domain, f.name, f.version, "Q", "random", "per-tensor"))
    quoted = [*seen.values(), *(_op_clause(op, data.opset) for op in dict.fromkeys(data.ops))]
    return list({repr(c): c for c in quoted}.values())  # (one sentence once, whichever node quotes it)


def template(p_id: str, family: str, text: str, data: GraphData, refs: list[NodeRef],
             plain: int) -> dict[str, object] | None:
    """The graph template of a pattern, x from the recipes (``plain``: see :func:`x_values`); None when x
    cannot be placed."""
    inputs: dict[str, object] = {}
    for name, src in data.inputs.items():
        values = (seeded(src.shape, src.type) if src.first is None
                  else x_values(src.first, tuple(src.shape), plain))
        if values is None:
            return None
        inputs[name] = {"type": src.type, "shape": src.shape, "values": values}
    nodes = [r.text() for r in refs]
    placed = any(src.first is not None for src in data.inputs.values())
    xs = ("x on ties and range edges of the first quantization" if placed
          else "float inputs seeded (multiples of 1/64 within [-4, 4])")
    if placed and any(src.first is None for src in data.inputs.values()):
        xs += ", float inputs seeded"
    out: dict[str, object] = {
        "id": p_id, "description": f"{text} around {nodes[0]}" + (f" and {len(nodes) - 1} more like it"
                                                                   if len(nodes) > 1 else "")
        + ", with the model's own scales and zero points" + (", weights (sliced) and attributes"
                                                             if data.weights else "") + "; " + xs
        + ("" if not plain else " (plainer values: the boundary ones make the answer depend on a catalogued "
           "reading or reach a comparing op as NaN)"),
        "spec": _spec(data), "family": family, "status": CaseStatus.NORMATIVE.value, "opsets": [data.opset],
        "inputs": inputs, "params": data.params}
    if data.constants:
        out["constants"] = data.constants
    out.update({"nodes": data.nodes, "outputs": ["y"], "source": source(refs, data.notes)})
    return out
