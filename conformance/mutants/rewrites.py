"""Mutants of the graph: optimizations a runtime performs on Q/DQ before running the model.

Each is a rewrite of the model (and its feeds) that a graph optimizer might believe harmless: collapsing a
requantization chain, removing a QuantizeLinear -> DequantizeLinear round trip, moving a data-movement op onto
the integers, dropping an activation the quantization "already clips", folding a requantization into one
multiply. The kernel then runs the rewritten graph (``reference.run_any``), so a case kills the mutant exactly
when the rewrite changes the graph's values: only graph cases can.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import onnx
from onnx import helper

from ..reference.graph_oracle import tensor_proto, tensor_value
from ..types import by_dtype
from .mutant import F32, I8, U8, GraphWitness, a, rewrite_mutant

GRAPH = ("ONNX IR: each computation dataflow graph is structured as a topologically sorted list of nodes ... "
         "Each node represents a call to an operator. (A model's outputs are its nodes', executed in order.)")
Q_SENTENCE = ("QuantizeLinear: y = saturate ((x / y_scale) + y_zero_point). For (x / y_scale), it rounds to "
              "the nearest even.")
DQ_SENTENCE = "DequantizeLinear: the dequantization formula is y = (x - x_zero_point) * x_scale."
#: the ops a DQ -> op -> Q rewrite moves onto the integers (they only move or select elements)
MOVEMENT = frozenset({"Identity", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Slice",
                      "Gather", "MaxPool", "Concat"})

Feeds = dict[str, np.ndarray]


def _producer(g: onnx.GraphProto, name: str) -> onnx.NodeProto | None:
    return next((n for n in g.node if name in n.output), None)


def _consumers(g: onnx.GraphProto, name: str) -> list[onnx.NodeProto]:
    return [n for n in g.node if name in n.input]


def _private(g: onnx.GraphProto, name: str) -> bool:
    """Read by one node only, and no graph output (a rewrite may then drop it)."""
    return len(_consumers(g, name)) == 1 and name not in {o.name for o in g.output}


def _fed(g: onnx.GraphProto, n: onnx.NodeProto, k: int, op: str) -> onnx.NodeProto | None:
    """The node of type ``op`` that produces input ``k`` of ``n`` and whose output only ``n`` reads."""
    if k >= len(n.input) or not n.input[k]:
        return None
    p = _producer(g, n.input[k])
    return p if p is not None and p.op_type == op and _private(g, n.input[k]) else None


def _value(model: onnx.ModelProto, feeds: Feeds, name: str) -> np.ndarray | None:
    if name in feeds:
        return np.asarray(feeds[name])
    init = next((i for i in model.graph.initializer if i.name == name), None)
    return None if init is None else tensor_value(init)


def _prune(g: onnx.GraphProto) -> None:
    """Remove the nodes nothing reads (repeatedly), as an optimizer's dead-code pass does."""
    while True:
        read = {i for n in g.node for i in n.input} | {o.name for o in g.output}
        dead = [k for k, n in enumerate(g.node) if not any(o in read for o in n.output if o)]
        if not dead:
            return
        for k in reversed(dead):
            del g.node[k]


def _identity(g: onnx.GraphProto, n: onnx.NodeProto, source: str) -> None:
    """Replace node ``n`` by Identity(source) -> its first output."""
    k = list(g.node).index(n)
    g.node[k].CopyFrom(helper.make_node("Identity", [source], [n.output[0]], name=n.name + "_rewritten"))


def _matches(model: onnx.ModelProto, op: str) -> Iterator[onnx.NodeProto]:
    yield from [n for n in model.graph.node if n.op_type == op and n.domain in ("", "ai.onnx")]


def _rewrite(step: Callable[[onnx.ModelProto, Feeds, onnx.NodeProto], bool], op: str
             ) -> Callable[[onnx.ModelProto, Feeds], tuple[onnx.ModelProto, Feeds]]:
    def run(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
        changed = False
        for n in _matches(model, op):
            changed = step(model, feeds, n) or changed
        if changed:
            _prune(model.graph)
        return model, feeds
    return run


# --- witnesses: the smallest graphs on which each rewrite changes the values (initializer form) ---

def _model(nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray], x: np.ndarray, out: str = "y",
           opset: int = 21) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        g = helper.make_graph(nodes, "witness",
                              [helper.make_tensor_value_info("x", _proto(x), list(x.shape))],
                              [helper.make_tensor_value_info(out, onnx.TensorProto.UNDEFINED, None)],
                              initializer=[tensor_proto(v, k) for k, v in inits.items()])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return build


def _proto(x: np.ndarray) -> int:
    return by_dtype(x.dtype).proto


def _requant_chain(s1: float, s2: float) -> GraphWitness:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
             helper.make_node("QuantizeLinear", ["d1", "s2", "z2"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["y"])]
    return GraphWitness(_model(nodes, {"s1": a(s1, F32), "z1": a(0, U8), "s2": a(s2, F32), "z2": a(0, U8)},
                               a([0.26], F32)), {"x": a([0.26], F32)},
                        f"x 0.26, s1 {s1}, s2 {s2}: 0.3 (spec)")


def _chain() -> GraphWitness:
    return _requant_chain(0.01, 0.1)


def _chain_finer() -> GraphWitness:
    return _requant_chain(0.1, 0.01)


def _pair() -> GraphWitness:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    return GraphWitness(_model(nodes, {"s": a(0.1, F32), "z": a(0, U8)}, a([0.26], F32)),
                        {"x": a([0.26], F32)}, "x 0.26, s 0.1: 0.3 (spec)")


def _movement() -> GraphWitness:
    nodes = [helper.make_node("DequantizeLinear", ["x", "s1", "z1"], ["d"]),
             helper.make_node("Reshape", ["d", "shape"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s2", "z2"], ["y"])]
    return GraphWitness(_model(nodes, {"s1": a(0.5, F32), "z1": a(0, U8), "s2": a(1.0, F32), "z2": a(0, U8),
                                       "shape": np.array([2, 1], np.int64)}, a([10, 20], U8)),
                        {"x": a([10, 20], U8)}, "DQ scale 0.5 -> Reshape -> Q scale 1: 5, 10 (spec)")


def _activation(op: str) -> GraphWitness:
    bounds = {"Clip": {"lo": a(0.0, F32), "hi": a(6.0, F32)}}.get(op, {})
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]),
             helper.make_node(op, ["d", *bounds], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"])]
    return GraphWitness(_model(nodes, {"s": a(0.1, F32), "z": a(128, U8), **bounds}, a([100, 130], U8)),
                        {"x": a([100, 130], U8)},
                        f"zero point 128: x 100 is -2.8, which {op} makes 0 (code 128)")


def _fold() -> GraphWitness:
    nodes = [helper.make_node("DequantizeLinear", ["x", "s1", "z1"], ["d"]),
             helper.make_node("QuantizeLinear", ["d", "s2", "z2"], ["y"])]
    x = a([_FOLD_X], I8)
    return GraphWitness(_model(nodes, {"s1": a(_FOLD_S1, F32), "z1": a(0, I8), "s2": a(_FOLD_S2, F32),
                                       "z2": a(0, I8)}, x), {"x": x},
                        f"int8 {_FOLD_X} * {_FOLD_S1} / {_FOLD_S2}: two roundings differ from one multiply")


def _maxpool() -> GraphWitness:
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]),
             helper.make_node("MaxPool", ["d"], ["m"], kernel_shape=[2]),
             helper.make_node("QuantizeLinear", ["m", "s", "z"], ["y"])]
    x = a([[[10, 20]]], U8)
    return GraphWitness(_model(nodes, {"s": a(-0.5, F32), "z": a(0, U8)}, x), {"x": x},
                        "negative scale -0.5: the maximum of -5, -10 is -5 (code 10), not the larger code 20")


def _dynamic() -> GraphWitness:
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
             helper.make_node("DequantizeLinear", ["q", "qs", "qz"], ["y"])]
    x = a([0.0, 0.3, 1.0], F32)
    return GraphWitness(_model(nodes, {}, x), {"x": x}, "0.3 is no multiple of y_scale 1/255")


# int8 x, s1, s2 for which round((x * s1) / s2) != round(x * float32(s1 / s2)) (found by a search; see _fold)
_FOLD_X, _FOLD_S1, _FOLD_S2 = -121, 0.3, 0.6


@rewrite_mutant("collapse-requant-chain",
                "collapses Q(s1, z1) -> DQ -> Q(s2, z2) -> DQ into one pair Q(s1, z1) -> "
                "DQ, dropping the second quantization", f"{GRAPH} {Q_SENTENCE}", witness=_chain)
def _collapse(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, dq2: onnx.NodeProto) -> bool:
        g = m.graph
        q2 = _fed(g, dq2, 0, "QuantizeLinear")
        dq1 = _fed(g, q2, 0, "DequantizeLinear") if q2 else None
        q1 = _fed(g, dq1, 0, "QuantizeLinear") if dq1 else None
        if q1 is None or dq1 is None:
            return False
        del dq2.input[:]
        dq2.input.extend(dq1.input)
        return True
    return _rewrite(step, "DequantizeLinear")(model, feeds)


@rewrite_mutant("skip-first-quantization",
                "collapses Q(s1, z1) -> DQ -> Q(s2, z2) -> DQ into Q(s2, z2) -> DQ, "
                "dropping the first quantization", f"{GRAPH} {Q_SENTENCE}", witness=_chain_finer)
def _skip_first(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, q2: onnx.NodeProto) -> bool:
        g = m.graph
        dq1 = _fed(g, q2, 0, "DequantizeLinear")
        q1 = _fed(g, dq1, 0, "QuantizeLinear") if dq1 else None
        if q1 is None:
            return False
        q2.input[0] = q1.input[0]
        return True
    return _rewrite(step, "QuantizeLinear")(model, feeds)


def _equal(lv: np.ndarray | None, rv: np.ndarray | None) -> bool:
    """Two parameters the same by value: type, shape and bits."""
    return (lv is not None and rv is not None and lv.dtype == rv.dtype and lv.shape == rv.shape
            and lv.tobytes() == rv.tobytes())


def _same(model: onnx.ModelProto, feeds: Feeds, left: list[str], right: list[str]) -> bool:
    """The same parameters (scale, zero point) by name or by value."""
    for k in (1, 2):
        ln = left[k] if k < len(left) else ""
        rn = right[k] if k < len(right) else ""
        if ln != rn and not _equal(*(_value(model, feeds, n) if n else None for n in (ln, rn))):
            return False
    return True


@rewrite_mutant("remove-qdq-pair",
                "removes a Q -> DQ round trip with the same scale and zero point, as if it "
                "were the identity", f"{GRAPH} {Q_SENTENCE} {DQ_SENTENCE}", witness=_pair)
def _remove_pair(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, dq: onnx.NodeProto) -> bool:
        q = _fed(m.graph, dq, 0, "QuantizeLinear")
        if q is None or not _same(m, f, list(q.input), list(dq.input)):
            return False
        _identity(m.graph, dq, q.input[0])
        return True
    return _rewrite(step, "DequantizeLinear")(model, feeds)


@rewrite_mutant("dq-movement-q-on-integers",
                "runs DQ -> data-movement op -> Q as the op on the integers, whatever "
                "the parameters on either side", f"{GRAPH} {Q_SENTENCE} {DQ_SENTENCE}", witness=_movement)
def _movement_on_integers(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, q: onnx.NodeProto) -> bool:
        g = m.graph
        mid = _producer(g, q.input[0])
        if mid is None or mid.op_type not in MOVEMENT or not _private(g, q.input[0]):
            return False
        dqs = [_fed(g, mid, k, "DequantizeLinear") for k in range(len(mid.input))]
        if mid.op_type == "Concat" and not all(dqs):
            return False
        if dqs[0] is None:
            return False
        for k, dq in enumerate(dqs):
            if dq is not None:
                mid.input[k] = dq.input[0]
        _identity(g, q, q.input[0])
        return True
    return _rewrite(step, "QuantizeLinear")(model, feeds)


def _drop(op: str) -> Callable[[onnx.ModelProto, Feeds], tuple[onnx.ModelProto, Feeds]]:
    def step(m: onnx.ModelProto, f: Feeds, q: onnx.NodeProto) -> bool:
        g = m.graph
        act = _fed(g, q, 0, op)
        if act is None or _fed(g, act, 0, "DequantizeLinear") is None:
            return False
        q.input[0] = act.input[0]
        return True
    return _rewrite(step, "QuantizeLinear")


@rewrite_mutant("drop-relu-between-dq-q",
                "drops a Relu between DQ and Q (\"the quantization clips at the zero "
                "point anyway\")", f"{GRAPH} Relu: y = max(0, x). {Q_SENTENCE}",
                witness=lambda: _activation("Relu"))
def _drop_relu(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    return _drop("Relu")(model, feeds)


@rewrite_mutant("drop-clip-between-dq-q",
                "drops a Clip between DQ and Q (\"the quantization saturates anyway\")",
                f"{GRAPH} Clip: y = min(max(x, min), max). {Q_SENTENCE}", witness=lambda: _activation("Clip"))
def _drop_clip(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    return _drop("Clip")(model, feeds)


@rewrite_mutant("fold-requant-multiply", "folds DQ(s1, z1) -> Q(s2, z2) into one integer requantization: "
                "round((x - z1) * float32(s1 / s2)) + z2, one rounding instead of two",
                f"{GRAPH} {DQ_SENTENCE} {Q_SENTENCE}", witness=_fold)
def _fold_requant(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, q: onnx.NodeProto) -> bool:
        g = m.graph
        dq = _fed(g, q, 0, "DequantizeLinear")
        if dq is None or len(dq.input) < 2 or len(q.input) < 2:
            return False
        s1, s2 = _value(m, f, dq.input[1]), _value(m, f, q.input[1])
        if s1 is None or s2 is None or s1.size != 1 or s2.size != 1 or s1.dtype != np.float32 or \
                s2.dtype != np.float32:
            return False
        with np.errstate(all="ignore"):
            ratio = np.float32(s1.reshape(()) / s2.reshape(()))
        if not np.isfinite(ratio) or ratio == 0:
            return False
        r, one = f"{dq.name}_folded_ratio", f"{q.name}_folded_one"
        g.initializer.extend([tensor_proto(np.asarray(ratio, np.float32), r),
                              tensor_proto(np.asarray(1.0, np.float32), one)])
        dq.input[1] = r
        q.input[1] = one
        return True
    return _rewrite(step, "QuantizeLinear")(model, feeds)


@rewrite_mutant("maxpool-on-integers",
                "runs DQ -> MaxPool -> Q as MaxPool on the integer codes (the larger code "
                "is the larger value only for a positive scale)",
                f"{GRAPH} MaxPool: the maximum of each window. "
                f"{DQ_SENTENCE}", witness=_maxpool)
def _maxpool_first(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, pool: onnx.NodeProto) -> bool:
        g = m.graph
        dq = _fed(g, pool, 0, "DequantizeLinear")
        if dq is None:
            return False
        codes, pooled = dq.input[0], pool.output[0]
        pool.input[0] = codes
        pool.output[0] = pooled + "_codes"
        dq.input[0] = pooled + "_codes"
        dq.output[0] = pooled
        return True
    return _rewrite(step, "MaxPool")(model, feeds)


@rewrite_mutant("dynamic-roundtrip-identity",
                "removes DynamicQuantizeLinear -> DequantizeLinear as the identity",
                f"{GRAPH} DynamicQuantizeLinear: y = saturate (round (x / y_scale) + y_zero_point). "
                f"{DQ_SENTENCE}",
                witness=_dynamic)
def _dynamic_identity(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    def step(m: onnx.ModelProto, f: Feeds, dq: onnx.NodeProto) -> bool:
        g = m.graph
        dql = _producer(g, dq.input[0])
        if (dql is None or dql.op_type != "DynamicQuantizeLinear"
            or list(dq.input[1:]) != list(dql.output[1:])):
            return False
        _identity(g, dq, dql.input[0])
        return True
    return _rewrite(step, "DequantizeLinear")(model, feeds)
