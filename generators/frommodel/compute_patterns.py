"""A model's own compute patterns as graph cases, judged by the interval oracle.

- Around a compute node (the ops of ``reference.graph.COMPUTE_OPS`` that :data:`.compute_shapes.RULES`
  makes small): each input a per-tensor DequantizeLinear of an activation, a DequantizeLinear of a constant
  (the model's own weights and biases, per tensor, per channel or blocked, sliced by :mod:`.compute_shapes`
  and read by :mod:`.weights`), a small constant (Resize's scales) or omitted; the output into a per-tensor
  QuantizeLinear. Weight-only quantization (float activations, weights through a DequantizeLinear) keeps the
  op's float output (``graph-compute-float-output``).
- DynamicQuantizeLinear -> MatMulInteger with constant weights, and after it Cast -> Mul by the product of
  the two scales where the model has them (as ONNX Runtime's dynamic quantizer writes it):
  ``graph-compute-integer``.
- A node between a DequantizeLinear and a QuantizeLinear whose op the oracle does not compute, or whose case
  cannot keep its meaning, is a pattern with the reason (accounted for, no file).
Patterns are deduplicated like node configurations: the op, its attributes as the case holds them, each
input's kind, configuration and case shape, the output's configuration.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto

from qdq_conformance.checker.tensors import Unreadable
from qdq_conformance.reference.graph_oracle import CONSTANTS, QUANT_OPS
from qdq_conformance.types import by_proto

from .compute_shapes import K_CAP, OUT_CHANNELS, RULES, Operand, Refused, Shrunk, parameters
from .graph_templates import Found, GraphData, GraphInput, Input, op_data, value
from .modelgraph import ModelGraph, attributes
from .node_configs import NodeConfig
from .shapes import extremes, listed, shape_text, spread
from .weights import SliceTooLarge, read_slice

#: the family of a compute op's graph case (its output into a QuantizeLinear)
FAMILIES: dict[str, str] = {
    "Conv": "graph-compute-conv", "MatMul": "graph-compute-matmul", "Gemm": "graph-compute-matmul",
    **{op: "graph-compute-elementwise" for op in ("Add", "Mul", "LeakyRelu")},
    **{op: "graph-compute-pool" for op in ("AveragePool", "GlobalAveragePool")},
    **{op: "graph-compute-exp" for op in ("Sigmoid", "Softmax")}, "Resize": "graph-compute-resize"}
FLOAT_OUTPUT = "graph-compute-float-output"
INTEGER = "graph-compute-integer"


def _operand(g: ModelGraph, op: str, i: int, name: str) -> tuple[Operand, str] | None:
    """Input ``i`` of the node (and the name of the constant a weight's codes are), None when it comes from
    something no case holds."""
    if not name:
        return Operand("absent"), ""
    if i in CONSTANTS.get(op, ()):
        value = g.constants.get(name)
        return None if value is None else (Operand("const", g.dims(name), value=value), name)
    k = g.producer.get(name, -1)
    cfg = g.configs.get(k)
    if cfg is not None and cfg.kind == "DQ":
        codes = g.model.graph.node[k].input[0]
        t = g.tensor(codes)
        if t is not None:
            return Operand("weight", tuple(int(d) for d in t.dims), cfg), codes
        return (Operand("act", g.dims(name), cfg), "") if cfg.granularity.startswith("per-tensor") else None
    if k >= 0 and g.model.graph.node[k].op_type in QUANT_OPS:
        return None  # (a quantization node whose configuration made no case)
    if name in g.constants:
        return Operand("const", g.dims(name), value=g.constants[name]), name
    if g.tensor(name) is None and g.elem(name) == TensorProto.FLOAT:
        return Operand("float", g.dims(name)), ""
    return None


def _text(ops: list[Operand], op: str, q: NodeConfig | None) -> str:
    parts = []
    for o in ops:
        if o.kind == "act":
            parts.append("DQ")
        elif o.kind == "float":
            parts.append("x")
        elif o.kind == "weight" and o.cfg is not None:
            parts.append(f"DQ({o.cfg.x} {o.cfg.granularity})")
    return f"{' + '.join(parts)} -> {op} -> {'Q' if q else 'float'}"


def around(g: ModelGraph, k: int, opset: int) -> Found | None:
    """The pattern around compute node ``k`` (None when it is not between quantization nodes)."""
    node = g.model.graph.node[k]
    op = node.op_type
    got = [_operand(g, op, i, name) for i, name in enumerate(node.input)]
    if op not in RULES or any(x is None for x in got):
        return None
    ops = [x[0] for x in got if x is not None]
    kinds = {o.kind for o in ops}
    q = g.next_q(node.output[0])
    if ("act" in kinds and ("float" in kinds or q is None)) or ("act" not in kinds and not {"weight", "float"}
                                                                <= kinds):
        return None
    family = FAMILIES[op] if q is not None else FLOAT_OUTPUT
    text = _text(ops, op, q)
    attrs = attributes(node)
    try:
        if attrs is None:
            raise Refused("an attribute a case cannot hold (a tensor or a graph)")
        shrunk = RULES[op](ops, attrs)
        named = [x for x in got if x is not None]
        inputs = [_input(g, i, o, name, shrunk) for i, (o, name) in enumerate(named)]
    except Refused as e:
        return Found(("refused", op, str(e)), family, text, None, g.ref(k), f"{op}: {e}")
    except (SliceTooLarge, Unreadable) as e:
        return Found(("unread", op, str(e)), family, text, None, g.ref(k), f"a weight that is not read: {e}")
    key = (op, repr(sorted(shrunk.attrs.items())), tuple(_signature(i, o, shrunk) for i, o in enumerate(ops)),
           q.key() if q else "float")
    return Found(key, family, text, op_data(inputs, op, shrunk.attrs, q, opset, shrunk.notes), g.ref(k))


def _signature(i: int, o: Operand, shrunk: Shrunk) -> tuple[object, ...]:
    shape = shrunk.shapes.get(i) or tuple(len(p) for p in shrunk.picks.get(i, []))
    value = shrunk.consts.get(i, o.value)
    return (o.kind, o.cfg.key() if o.cfg else None, shape, None if value is None else repr(value.tolist()),
            i in shrunk.dropped)


def _type(g: ModelGraph, name: str, default: str = "float") -> str:
    elem = g.elem(name) if name else None
    try:
        return by_proto(elem).name if elem else default
    except KeyError:
        return default


def _input(g: ModelGraph, i: int, o: Operand, name: str, shrunk: Shrunk) -> Input:
    """Input ``i`` as the case holds it (a weight's codes read here, only the slice kept)."""
    if o.kind == "absent" or i in shrunk.dropped:
        return Input("absent")
    if o.kind == "const":
        value = shrunk.consts.get(i, o.value)
        assert value is not None
        return Input("const", values=value, type="int64" if value.dtype.kind in "iu" else _type(g, name))
    if o.kind == "float":
        return Input("float", shape=shrunk.shapes[i], type="float")
    if o.kind == "act":
        return Input("act", o.cfg, shrunk.shapes[i])
    assert o.cfg is not None
    t = g.tensor(name)
    assert t is not None
    picks = shrunk.picks[i]
    scale, zp, note = parameters(o.cfg, picks)
    if note:
        shrunk.notes.append(f"input {i}: {note}")
    return Input("weight", o.cfg, values=read_slice(t, g.base_dir, picks), scale=scale, zero_point=zp)


def between(g: ModelGraph, k: int) -> bool:
    """Node ``k`` reads a DequantizeLinear whose configuration made cases and feeds a QuantizeLinear."""
    node = g.model.graph.node[k]
    if node.op_type in QUANT_OPS or not node.output:
        return False
    fed = any((c := g.configs.get(g.producer.get(n, -1))) is not None and c.kind == "DQ" for n in node.input)
    return fed and g.next_q(node.output[0]) is not None


def unjudged(g: ModelGraph, k: int) -> Found:
    """A node between quantization nodes whose op the oracle does not compute: accounted for, with the
    reason."""
    node = g.model.graph.node[k]
    domain = node.domain if node.domain not in ("", "ai.onnx") else ""
    op = f"{domain}::{node.op_type}" if domain else node.op_type
    return Found(("unjudged", op), "", f"DQ -> {op} -> Q", None, g.ref(k),
                 f"{op}: an op the oracle does not compute (not a graph op of the case schema)")


# -- DynamicQuantizeLinear -> MatMulInteger ------------------------------------------------------------------


def _only(g: ModelGraph, tensor: str, op: str) -> onnx.NodeProto | None:
    users = [g.model.graph.node[j] for j in g.consumers.get(tensor, [])]
    return users[0] if len(users) == 1 and users[0].op_type == op else None


def _scales(g: ModelGraph, mmi: onnx.NodeProto, dql_scale: str) -> tuple[str, str] | None:
    """After MatMulInteger: Cast(to float) -> Mul by (DQL's scale x a constant scale); (the Mul's output, the
    constant's name), or None when the model has not that chain."""
    cast = _only(g, mmi.output[0], "Cast")
    if cast is None or [a.i for a in cast.attribute if a.name == "to"] != [TensorProto.FLOAT]:
        return None
    mul = _only(g, cast.output[0], "Mul")
    if mul is None:
        return None
    other = next((n for n in mul.input if n != cast.output[0]), "")
    producer = g.model.graph.node[g.producer[other]] if other in g.producer else None
    if producer is None or producer.op_type != "Mul" or dql_scale not in producer.input:
        return None
    ws = next((n for n in producer.input if n != dql_scale), "")
    return (mul.output[0], ws) if g.tensor(ws) is not None else None


def dynamic(g: ModelGraph, k: int, opset: int) -> list[Found]:
    """DynamicQuantizeLinear ``k`` -> each MatMulInteger reading it with constant weights."""
    dql = g.configs[k]
    y, y_scale, y_zp = (list(g.model.graph.node[k].output) + ["", "", ""])[:3]
    out = []
    for j in g.consumers.get(y, []):
        mmi = g.model.graph.node[j]
        ins = list(mmi.input) + ["", "", ""]
        if mmi.op_type == "MatMulInteger" and ins[0] == y and ins[2] == y_zp and g.tensor(ins[1]) is not None:
            try:
                out.append(_dynamic(g, dql, mmi, j, y_scale, opset))
            except (Refused, SliceTooLarge, Unreadable) as e:
                out.append(Found(("refused", "MatMulInteger", str(e)), INTEGER, "DQL -> MatMulInteger", None,
                                 g.ref(j), f"MatMulInteger: {e}"))
    return out


def _dynamic(g: ModelGraph, dql: NodeConfig, mmi: onnx.NodeProto, j: int, y_scale: str, opset: int) -> Found:
    w = g.tensor(mmi.input[1])
    assert w is not None
    dims = [int(d) for d in w.dims]
    wz_name = mmi.input[3] if len(mmi.input) > 3 else ""
    wz = g.tensor(wz_name) if wz_name else None
    if len(dims) != 2 or (wz_name and wz is None):
        raise Refused("weights that are not 2-D, or a weight zero point computed at run time")
    wz_cols = wz is not None and len(wz.dims) == 1 and wz.dims[0] == dims[1] > 1
    scale_mul = _scales(g, mmi, y_scale)
    ws = g.tensor(scale_mul[1]) if scale_mul else None
    ws_cols = ws is not None and len(ws.dims) == 1 and ws.dims[0] == dims[1] > 1
    cols = spread(dims[1], OUT_CHANNELS, extremes(read_slice(wz, g.base_dir, [list(range(dims[1]))]))
                  if wz_cols and wz is not None else [])
    ks = list(range(min(dims[0], K_CAP)))
    x_dims = g.dims(g.model.graph.node[dql.ref.index].input[0])
    m = 4 if x_dims is None or len(x_dims) < 2 or x_dims[-2] is None else min(x_dims[-2], 4)
    shape = [m, len(ks)]
    nodes: list[dict[str, object]] = [
        {"op": "DynamicQuantizeLinear", "inputs": ["x"], "outputs": ["q", "qs", "qz"]},
        {"op": "MatMulInteger", "inputs": ["q", "w", "qz", "wz" if wz is not None else ""],
         "outputs": ["acc" if scale_mul else "y"]}]
    values: dict[str, object] = {}
    w_type = by_proto(w.data_type).name
    if wz is not None:
        zp = read_slice(wz, g.base_dir, [cols] if wz_cols else [list(range(d)) for d in wz.dims])
        values["wz"] = value(by_proto(wz.data_type).name, zp)
    if scale_mul and ws is not None:
        s = read_slice(ws, g.base_dir, [cols] if ws_cols else [list(range(d)) for d in ws.dims])
        values["ws"] = value(by_proto(ws.data_type).name, s)
        nodes += [{"op": "Cast", "inputs": ["acc"], "outputs": ["accf"],
                   "attributes": {"to": TensorProto.FLOAT}},
                  {"op": "Mul", "inputs": ["qs", "ws"], "outputs": ["sc"]},
                  {"op": "Mul", "inputs": ["accf", "sc"], "outputs": ["y"]}]
    codes = read_slice(w, g.base_dir, [ks, cols])
    constants: dict[str, object] = {"w": value(w_type, codes)}
    notes = [f"B {dims} as {[len(ks), len(cols)]} (columns {listed(cols)}; K {listed(ks)})",
             f"x {shape_text(x_dims)} tested as {shape}"]
    ops = ["MatMulInteger", *(["Cast", "Mul"] if scale_mul else [])]
    data = GraphData(nodes, values, {"x": GraphInput(dql.x, shape, None)}, constants,
                     [(dql, "per-tensor", False)], opset, ops, notes, True)
    key = ("dql-matmulinteger", dql.key(), w_type, wz_cols, wz is not None, ws_cols, bool(scale_mul),
           (len(ks), len(cols)))
    return Found(key, INTEGER, " -> ".join(["DQL", *ops]), data, g.ref(j))

