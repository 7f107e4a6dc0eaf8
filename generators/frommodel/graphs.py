"""The small graphs around a model's quantization nodes that the corpus knows how to judge, as graph
templates.

In the main graph, around per-tensor quantization nodes whose configurations became cases:
- a round trip: QuantizeLinear -> DequantizeLinear (``graph-roundtrip``);
- a requantization: DequantizeLinear -> QuantizeLinear (``graph-requantize``);
- an op between them: DequantizeLinear(s) -> OP -> QuantizeLinear, OP one of the graph ops the case schema
  lists (``node.op``: the kernel's exact ops; the compute ops of the quantized-compute issue join by being
  listed there, with a shape rule in :data:`SHRINK`), family by :data:`FAMILIES`.
Each becomes a graph whose values the corpus judges: x -> Q -> DQ (the model's own scale and zero point of
each DequantizeLinear, a QuantizeLinear with the same ones in front) -> OP -> the model's QuantizeLinear ->
its DequantizeLinear -> y, shapes made small as the op allows (:data:`SHRINK`), x from the boundary recipes
placed through the first quantization's scale and zero point. Patterns are deduplicated like node
configurations (the op, its attributes and constants, and each quantization node's configuration); a template
the corpus refuses (its answer would depend on a catalogued reading, or x reaches a comparing op as NaN) is
tried with plainer values, then left out.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from qdq_conformance import opspecs
from qdq_conformance.checker.tensor_facts import Scope
from qdq_conformance.reference.graph_oracle import COMPUTE_OPS, CONSTANTS, MIN_OPSET, QUANT_OPS

from ..file_schemas import schema_enum
from . import compute_patterns as compute
from .compute_shapes import pooled
from .graph_templates import First, Found, GraphData, GraphInput, Input, op_data, params, qnode
from .modelgraph import Attrs, ModelGraph, attributes, int_list
from .node_configs import NodeConfig, NodeRef
from .shapes import PER_TENSOR_BUDGET, SYMBOLIC, capped

#: the family of a graph case by the exact op between the quantization nodes (compute ops: compute.FAMILIES)
FAMILIES: dict[str, str] = {
    **{op: "graph-data-movement" for op in ("Identity", "Reshape", "Transpose", "Flatten", "Squeeze",
                                            "Unsqueeze", "Slice", "Concat", "Gather")},
    **{op: "graph-activation" for op in ("Relu", "Clip", "Max", "Min", "MaxPool")}}
#: a graph this large (elements of any tensor) is used at the model's own shapes when no shape rule applies
SMALL = 256


def judged_ops() -> list[str]:
    """The ops a graph case may hold besides the quantization operators: the case schema's ``node.op``."""
    return [op for op in schema_enum("$defs", "node", "properties", "op") if op not in QUANT_OPS]


@dataclass
class Pattern:
    """One distinct graph around a model's nodes: its template, the nodes it stands for, its file; or why it
    has none."""

    key: tuple[object, ...]
    family: str
    text: str
    refs: list[NodeRef] = field(default_factory=list)
    templates: list[dict[str, object]] = field(default_factory=list)
    cases: int = 0
    problem: str = ""
    data: GraphData | None = None

    @property
    def id(self) -> str:
        return "g" + hashlib.sha1(repr(self.key).encode()).hexdigest()[:8]

    @property
    def file(self) -> str:
        return f"graph_{self.id}.yaml"

    def row(self) -> dict[str, object]:
        return {"id": self.id, "family": self.family or None, "graph": self.text,
                "file": self.file if self.templates else None, "nodes": [r.text() for r in self.refs],
                "cases": self.cases, "problem": self.problem or None}


# -- shapes: how small an op lets its input be ---------------------------------------------------------------


def _known(scope: Scope, name: str) -> tuple[int, ...] | None:
    f = scope.get(name)
    if f is None or f.shape is None:
        return None
    return tuple(SYMBOLIC if d is None else d for d in f.shape)


def _elementwise(dims: tuple[int, ...], attrs: Attrs,
                 consts: dict[int, np.ndarray]) -> tuple[int, ...]:
    return tuple(capped(list(dims), PER_TENSOR_BUDGET))


def _maxpool(dims: tuple[int, ...], attrs: Attrs, consts: dict[int, np.ndarray]) -> tuple[int, ...]:
    """N and C small, each spatial dimension a few windows long (at most the model's)."""
    return pooled(dims, attrs)


def _reshape(dims: tuple[int, ...], attrs: Attrs, consts: dict[int, np.ndarray]) -> tuple[int, ...]:
    """A flattening target (only 0, -1 and the input's own leading dimensions) keeps its meaning at any
    size."""
    target = [int(t) for t in consts[1].reshape(-1)]
    small = tuple(capped(list(dims), PER_TENSOR_BUDGET))
    for k, t in enumerate(target):
        if t not in (0, -1) and not (k < len(dims) and dims[k] == t == small[k]):
            raise LookupError("a Reshape target that names the model's own sizes")
    return small


#: an op's rule for the smallest input it keeps its meaning on (the model's shape when it has none and the
#: tensors are small)
SHRINK: dict[str, Callable[[tuple[int, ...], Attrs, dict[int, np.ndarray]], tuple[int, ...]]] = {
    **{op: _elementwise for op in ("Identity", "Relu", "Clip", "Max", "Min", "Transpose", "Flatten",
                                   "Squeeze", "Unsqueeze", "Concat")},
    "MaxPool": _maxpool, "Reshape": _reshape,
}


# -- finding the patterns ------------------------------------------------------------------------------------


def find(model: onnx.ModelProto, configs: dict[int, NodeConfig], scope: Scope, model_name: str,
         base_dir: Path) -> list[Found]:
    """Every pattern of the main graph (with its template's data, or why it has none)."""
    opset = opspecs.import_version(opspecs.import_table(model.opset_import), "")
    if opset is None or not MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        return []
    g = ModelGraph(model, configs, scope, model_name, base_dir)
    ops = set(judged_ops())
    found: list[Found | None] = []
    for k, node in enumerate(model.graph.node):
        cfg = g.per_tensor(k)
        if cfg is not None and cfg.kind == "Q":
            for j in g.consumers.get(node.output[0], []):
                dq = g.per_tensor(j)
                if dq is not None and dq.kind == "DQ":
                    found.append(_roundtrip(g, cfg, dq, opset))
        elif cfg is not None and cfg.kind == "DQ":
            q = g.next_q(node.output[0])
            if q is not None:
                found.append(_chain(g, [cfg], None, q, opset))
        elif cfg is not None and cfg.kind == "DQL":
            found += compute.dynamic(g, k, opset)
        elif normalize(node) in COMPUTE_OPS and node.output:
            found.append(compute.around(g, k, opset))
        elif normalize(node) in ops and node.output:
            found.append(_around(g, k, node, opset))
        elif node.output and compute.between(g, k):
            found.append(compute.unjudged(g, k))
    return [f for f in found if f is not None]


def normalize(node: onnx.NodeProto) -> str:
    return node.op_type if opspecs.normalize_domain(node.domain) == opspecs.AI_ONNX else ""


def _around(g: ModelGraph, k: int, node: onnx.NodeProto, opset: int) -> Found | None:
    """DQ(s) -> OP -> Q: each data input from a per-tensor DQ, the others constants, the output into a Q."""
    q = g.next_q(node.output[0])
    if q is None:
        return None
    dqs: list[NodeConfig] = []
    consts: dict[int, np.ndarray] = {}
    for i, name in enumerate(node.input):
        if not name:
            continue
        bound = i in CONSTANTS.get(node.op_type, ()) or node.op_type in ("Max", "Min")
        if name in g.constants and bound:
            consts[i] = g.constants[name]
            continue
        dq = g.per_tensor(g.producer.get(name, -1))
        if dq is None or dq.kind != "DQ":
            return None
        dqs.append(dq)
    attrs = attributes(node)
    if not dqs or attrs is None:
        return None
    return _chain(g, dqs, (node, attrs, consts), q, opset)


#: an exact op between the quantization nodes: the node, its attributes, its constant inputs by position
Op = tuple[onnx.NodeProto, Attrs, dict[int, np.ndarray]]


def _chain(g: ModelGraph, dqs: list[NodeConfig], op: Op | None, q: NodeConfig, opset: int) -> Found | None:
    """x_k -> Q(dq_k's parameters) -> dq_k -> [op] -> q -> DQ(q's parameters) -> y."""
    shapes: list[tuple[int, ...]] = []
    for dq in dqs:
        dims = _known(g.scope, g.model.graph.node[dq.ref.index].input[0])
        if dims is None:
            return None
        shapes.append(dims)
    name = op[0].op_type if op else ""
    if op is not None and name not in FAMILIES:
        return None  # (an op of the schema's list no family here names yet)
    try:
        if op is not None and name in SHRINK:
            shapes = [SHRINK[name](d, op[1], op[2]) for d in shapes]
        elif op is not None and max(math.prod(d) for d in shapes) > SMALL:
            return None  # (no rule to make it small: the model's own shapes, when they are small)
        elif op is None:
            shapes = [tuple(capped(list(d), PER_TENSOR_BUDGET)) for d in shapes]
    except (LookupError, ValueError):
        return None
    if op is not None and name == "Concat":
        axis = int_list(op[1], "axis", [0])[0]
        base = shapes[0]
        shapes = [tuple(d if k % len(base) == axis % len(base) else base[k] for k, d in enumerate(s))
                  for s in shapes]
    key = (name, repr(sorted((k, v) for k, v in (op[1] if op else {}).items())),
           repr({k: v.tolist() for k, v in (op[2] if op else {}).items()}),
           tuple(dq.key() for dq in dqs), q.key(), tuple(len(s) for s in shapes))
    family = FAMILIES[name] if op else "graph-requantize"
    data = op_data(_inputs(dqs, op, shapes), name or None, op[1] if op else {}, q, opset)
    text = " -> ".join(["DQ" if len(dqs) == 1 else f"{len(dqs)} DQ", *([name] if name else []), "Q"])
    ref = g.ref(op_index(g, op[0])) if op else dqs[0].ref
    return Found(key, family, text, data, ref)


def _inputs(dqs: list[NodeConfig], op: Op | None, shapes: list[tuple[int, ...]]) -> list[Input]:
    if op is None:
        return [Input("act", dqs[0], shapes[0])]
    node, _, consts = op
    out: list[Input] = []
    acts = iter(zip(dqs, shapes, strict=True))
    for i, name in enumerate(node.input):
        if i in consts:
            arr = consts[i]
            out.append(Input("const", values=arr, type="int64" if arr.dtype.kind in "iu" else dqs[0].y))
        elif not name:
            out.append(Input("absent"))
        else:
            dq, shape = next(acts)
            out.append(Input("act", dq, shape))
    return out


def _roundtrip(g: ModelGraph, q: NodeConfig, dq: NodeConfig, opset: int) -> Found | None:
    dims = _known(g.scope, g.model.graph.node[q.ref.index].input[0])
    if dims is None or q.scale is None or q.scale_values is None:
        return None
    shape = tuple(capped(list(dims), PER_TENSOR_BUDGET))
    key = ("roundtrip", q.key(), dq.key(), len(shape))
    first = First(q.spec, q.x, q.scale, q.y, q.scale_values, q.zero_point_values)
    data = GraphData([qnode(q, "x", "q", "s1", "z1"), qnode(dq, "q", "y", "s2", "z2")],
                     {**params(q, "s1", "z1"), **params(dq, "s2", "z2")},
                     {"x": GraphInput(q.x, list(shape), first)}, {}, [(q, "per-tensor", False),
                                                                      (dq, "per-tensor", False)], opset, [])
    return Found(key, "graph-roundtrip", "Q -> DQ", data, q.ref)


def op_index(g: ModelGraph, node: onnx.NodeProto) -> int:
    return list(g.model.graph.node).index(node)
