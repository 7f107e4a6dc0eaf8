"""The oracle on a small graph: quantization nodes, exact ops and compute ops, node by node.

ONNX's rule: a model's outputs are those of its nodes executed in topological order, each node reading the
values its inputs name (graph inputs, initializers, or earlier nodes' outputs). Quantization nodes are
computed by the kernel (:func:`qdq_conformance.reference.evaluate`, the node's version resolved from the
model's opset imports); the exact ops (:mod:`.exact_ops`: they move or select elements, or compare them with
constants) by numpy, exactly; the compute ops (:mod:`.compute`: Conv, MatMul, Gemm, Add, pooling, Softmax,
Resize ...) by their interval oracles, which give what a legitimate float32 evaluation may give.

Every value of the graph is an :class:`.interval.Interval` (an exact one has one value). An interval passes
through the exact ops and the quantization nodes endpoint by endpoint: each is monotone element by element
(QuantizeLinear and DequantizeLinear non-increasing with a negative scale, which puts the endpoints back in
order), so QuantizeLinear turns a compute op's interval into the set of acceptable codes. A compute op takes
exact inputs (an earlier compute op's result must have one acceptable value where it feeds another), as do
DynamicQuantizeLinear and the parameters of the quantization nodes, except the ops of one correctly rounded
operation per element (Add, Mul, LeakyRelu, Cast: :data:`.compute.ROUNDED_ONCE`), which take an interval
through its corners (MatMul -> Add of a bias, Conv -> Add of a residual). The registries :data:`QUANT_OPS`,
:data:`.exact_ops.EXACT_OPS` and :data:`.compute.COMPUTE_OPS` together are :data:`GRAPH_OPS`, the case
schema's vocabulary of graph ops (a test checks they agree). Where an interval reaches a comparison (Relu,
MaxPool ...), a zero at either end is compared as a number and accepts either sign after.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from .. import opspecs
from ..errors import SpecViolation
from ..types import by_dtype, from_tensor_proto, to_tensor_proto
from .compute import COMPUTE_CONSTANT_INPUTS, COMPUTE_OPS, ROUNDED_ONCE
from .exact_ops import COMPARING, CONSTANT_INPUTS, EXACT_OPS
from .interval import Interval, ordered
from .model import node_spec
from .node_args import Attrs
from .ops import ENTRIES, SPEC
from .steps import active

__all__ = ["COMPARING", "COMPUTE_OPS", "CONSTANTS", "EXACT_OPS", "GRAPH_OPS", "QUANT_OPS", "GraphError",
           "Interval", "Step", "is_graph", "order", "run_graph", "run_graph_bounded", "run_node"]

#: the quantization operators a graph may hold (each domain's, as the kernel knows them)
QUANT_OPS: tuple[str, ...] = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                              "ExtendedQuantizeLinear", "ExtendedDequantizeLinear")
#: every op a graph case may hold: the case schema's ``node.op`` vocabulary, in its order
GRAPH_OPS: tuple[str, ...] = (*QUANT_OPS, *EXACT_OPS, *COMPUTE_OPS)
#: the inputs of each op that must be constants (initializers) for the graph to stay computable
CONSTANTS: dict[str, tuple[int, ...]] = {**CONSTANT_INPUTS, **COMPUTE_CONSTANT_INPUTS}


class GraphError(ValueError):
    """A graph the oracle cannot compose: ``node`` (its index) and what is wrong, in one line."""

    def __init__(self, node: int | None, message: str) -> None:
        super().__init__(message)
        self.node = node


#: the lowest ai.onnx opset a graph may import (the ops' input forms above: Squeeze's axes and Clip's bounds)
MIN_OPSET = 13


#: the element type of shapes, axes, indices and bounds of the exact ops (not a quantization type)
INDEX_TYPE = "int64"


def tensor_value(t: onnx.TensorProto) -> np.ndarray:
    """An initializer's array: a quantization type's (the registry's dtypes) or int64 (shapes, indices)."""
    if t.data_type == onnx.TensorProto.INT64:
        return numpy_helper.to_array(t)
    return from_tensor_proto(t)


def tensor_proto(value: np.ndarray, name: str) -> onnx.TensorProto:
    """:func:`tensor_value`'s inverse."""
    if value.dtype == np.int64:
        return numpy_helper.from_array(value, name)
    return to_tensor_proto(value, name)


def node_attrs(node: onnx.NodeProto) -> Attrs:
    """A node's attributes: INT, INTS, FLOAT, FLOATS and STRING (SpecViolation for another kind)."""
    attrs: Attrs = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.INT:
            attrs[a.name] = int(a.i)
        elif a.type == onnx.AttributeProto.INTS:
            attrs[a.name] = [int(i) for i in a.ints]
        elif a.type == onnx.AttributeProto.FLOAT:
            attrs[a.name] = float(a.f)
        elif a.type == onnx.AttributeProto.FLOATS:
            attrs[a.name] = [float(f) for f in a.floats]
        elif a.type == onnx.AttributeProto.STRING:
            attrs[a.name] = a.s.decode("utf-8", errors="replace")
        else:
            raise SpecViolation("QDQ010", f"attribute {a.name!r} must be INT, INTS, FLOAT(S) or STRING",
                                op=node.op_type)
    return attrs


@dataclass
class Step:
    """One node of a graph as the oracle ran it: its inputs and outputs (their representatives), and each
    output's interval (``bounds``), for a node-by-node replay."""

    index: int
    node: onnx.NodeProto
    inputs: list[np.ndarray | None]
    outputs: list[np.ndarray]
    bounds: list[Interval] = field(default_factory=list)


def order(nodes: Sequence[onnx.NodeProto], available: set[str]) -> list[int]:
    """The nodes' indices in a topological order (a node after every node it reads from, stable otherwise);
    GraphError for a cycle, a name nothing produces, or a name produced twice."""
    producer: dict[str, int] = {}
    for k, n in enumerate(nodes):
        for o in n.output:
            if o in producer or o in available:
                raise GraphError(k, f"tensor {o!r} is produced twice")
            producer[o] = k
    for k, n in enumerate(nodes):
        for i in n.input:
            if i and i not in producer and i not in available:
                raise GraphError(k, f"input {i!r} is no graph input, initializer or node output (dangling)")
    done: list[int] = []
    state = [0] * len(nodes)  # 0 new, 1 on the path, 2 done
    for start in range(len(nodes)):
        stack = [(start, iter([producer[i] for i in nodes[start].input if i in producer]))]
        if state[start]:
            continue
        state[start] = 1
        while stack:
            k, deps = stack[-1]
            nxt = next(deps, None)
            if nxt is None:
                stack.pop()
                state[k] = 2
                done.append(k)
            elif state[nxt] == 1:
                raise GraphError(nxt, f"the graph has a cycle through node {nxt} ({nodes[nxt].op_type})")
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter([producer[i] for i in nodes[nxt].input if i in producer])))
    return done


def _zeros_plus(a: np.ndarray) -> np.ndarray:
    """A float array with every -0 made +0 (an interval's endpoints reach a comparison as numbers)."""
    if a.dtype.kind in "iub" or not a.size:
        return a
    f = a.astype(np.float32)
    return np.where(f == 0, np.zeros((), a.dtype), a).astype(a.dtype)


def _either_sign_zero(iv: Interval | None) -> bool:
    """Whether some element of ``iv`` is a zero of either sign (low -0, high +0)."""
    if iv is None or iv.value.dtype.kind in "iub":
        return False
    low, high = iv.low.astype(np.float32), iv.high.astype(np.float32)
    return bool(((low == 0) & np.signbit(low) & (high == 0) & ~np.signbit(high)).any())


def _zero_ends(iv: Interval, either: bool = False) -> Interval:
    """A float interval whose zero endpoints accept either sign of zero (as :func:`.interval.from_real`'s);
    an exact one too when ``either`` (its zeros came from a zero of either sign)."""
    if iv.value.dtype.kind in "iub" or iv.is_exact() and not either:
        return iv
    low = np.where(iv.low.astype(np.float32) == 0, np.asarray(-0.0).astype(iv.low.dtype), iv.low)
    high = np.where(iv.high.astype(np.float32) == 0, np.zeros((), iv.high.dtype), iv.high)
    return Interval(iv.value, low.astype(iv.low.dtype), high.astype(iv.high.dtype))


def _exact_inputs(node: onnx.NodeProto, inputs: Sequence[Interval | None], which: Sequence[int]
                  ) -> list[np.ndarray | None]:
    """The inputs' values, each of ``which`` required to have one acceptable value (ValueError)."""
    out: list[np.ndarray | None] = []
    for k, iv in enumerate(inputs):
        if iv is not None and k in which and not iv.is_exact() and not iv.single().all():
            raise ValueError(f"input {k} ({node.input[k]!r}) has more than one acceptable value (an "
                             "earlier compute op's interval): the oracle computes this op on exact inputs "
                             "only; choose values whose earlier result is exact")
        out.append(None if iv is None else iv.value)
    return out


def _quantization(model: onnx.ModelProto, node: onnx.NodeProto, inputs: Sequence[Interval | None]
                  ) -> list[Interval]:
    spec = node_spec(model, node)
    ints = {k: v for k, v in node_attrs(node).items() if isinstance(v, int)}
    entry = ENTRIES[(spec.domain, spec.name)]
    free = () if node.op_type == "DynamicQuantizeLinear" else (0,)
    args = _exact_inputs(node, inputs, [k for k in range(len(inputs)) if k not in free])
    while args and args[-1] is None:
        args.pop()
    x = inputs[0] if inputs else None
    if x is None or x.is_exact():
        return [Interval.exact(o) for o in entry(spec, args, ints)[: len(node.output)]]
    if len(node.output) != 1:
        raise ValueError(f"{node.op_type} with more than one output on an interval")
    return [_zero_ends(x.map(lambda v: entry(spec, [v, *args[1:]], ints)[0]))]


def _exact_op(node: onnx.NodeProto, inputs: Sequence[Interval | None]) -> list[Interval]:
    """An exact op, monotone non-decreasing in each input: on the values, and on the low and high ends."""
    fn, attrs = EXACT_OPS[node.op_type], node_attrs(node)
    if all(iv is None or iv.is_exact() for iv in inputs):
        return [Interval.exact(o) for o in fn([None if iv is None else iv.value for iv in inputs], attrs)]
    value = fn([None if iv is None else _zeros_plus(iv.value) for iv in inputs], attrs)
    low = fn([None if iv is None else _zeros_plus(iv.low) for iv in inputs], attrs)
    high = fn([None if iv is None else _zeros_plus(iv.high) for iv in inputs], attrs)
    # (a zero of either sign made +0 for the op keeps accepting either sign, even where every element the op
    # gives has one value: a Slice of a MatMul's zero row)
    either = any(_either_sign_zero(iv) for iv in inputs)
    return [_zero_ends(Interval(v, lo, hi), either) for v, lo, hi in zip(value, low, high, strict=True)]


def _corners(node: onnx.NodeProto, inputs: Sequence[Interval | None]) -> list[Interval]:
    """An op of :data:`.compute.ROUNDED_ONCE` on inputs of which one or two are intervals: every output
    element is one correctly rounded operation, monotone in each input for the others fixed (rounding is
    monotone), so its extremes over the inputs' box are at the box's corners: the op at each corner, the
    smallest and the largest element by element."""
    kernel, attrs = (active() or SPEC).compute[node.op_type], node_attrs(node)
    wide = [k for k, iv in enumerate(inputs) if iv is not None and not iv.is_exact()]
    if len(wide) > 2:
        raise ValueError(f"{node.op_type} with more than two inputs of more than one acceptable value")
    if float(attrs.get("alpha", 0.0)) < 0:  # type: ignore[arg-type]
        raise ValueError("LeakyRelu with a negative alpha is not monotone: "
                         "an interval cannot pass through it")
    base = [None if iv is None else iv.value for iv in inputs]
    value = kernel(base, attrs)[0].value
    low = high = value
    for pick in itertools.product((0, 1), repeat=len(wide)):
        args = list(base)
        for k, end in zip(wide, pick, strict=True):
            iv = inputs[k]
            assert iv is not None
            args[k] = _zeros_plus(iv.high if end else iv.low)
        corner = kernel(args, attrs)[0].value
        low, high = ordered(low, corner)[0], ordered(high, corner)[1]
    return [_zero_ends(Interval(value, low, high))]


def run_node(model: onnx.ModelProto, node: onnx.NodeProto,
             inputs: Sequence[Interval | np.ndarray | None]) -> list[Interval]:
    """One node of ``model`` on ``inputs`` (intervals, or exact arrays): its outputs' intervals. SpecViolation
    for what the kernel must not compute; ValueError or ArithmeticError for an op it cannot."""
    ivs = [iv if iv is None or isinstance(iv, Interval) else Interval.exact(np.asarray(iv)) for iv in inputs]
    domain = opspecs.normalize_domain(node.domain)
    if node.op_type in QUANT_OPS:
        return _quantization(model, node, ivs)
    if domain == opspecs.AI_ONNX and node.op_type in EXACT_OPS:
        return _exact_op(node, ivs)
    if domain == opspecs.AI_ONNX and node.op_type in COMPUTE_OPS:
        if node.op_type in ROUNDED_ONCE and any(iv is not None and not iv.is_exact() for iv in ivs):
            return _corners(node, ivs)
        args = _exact_inputs(node, ivs, range(len(ivs)))
        return (active() or SPEC).compute[node.op_type](args, node_attrs(node))
    raise SpecViolation("QDQ012", f"{node.op_type} is not an op a graph case may hold", op=node.op_type,
                        domain=domain)


def run_graph_bounded(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
                      steps: list[Step] | None = None) -> list[Interval]:
    """The graph's outputs as intervals (an exact output has one value), its nodes executed in topological
    order; ``steps`` (when given) receives each node's inputs and outputs. Raises SpecViolation (a
    quantization node's rule), GraphError (the node and why)."""
    g = model.graph
    values: dict[str, Interval] = {i.name: Interval.exact(tensor_value(i)) for i in g.initializer}
    for i in g.input:
        if i.name in feeds:
            values[i.name] = Interval.exact(np.asarray(feeds[i.name]))
        elif i.name not in values:
            raise GraphError(None, f"graph input {i.name!r} is not fed")
    nodes = list(g.node)
    for k in order(nodes, set(values)):
        n = nodes[k]
        args = [values[name] if name else None for name in n.input]
        try:
            out = run_node(model, n, args)
        except SpecViolation:
            raise
        except (ValueError, ArithmeticError, IndexError, TypeError) as e:
            raise GraphError(k, f"{n.op_type}: {e}") from None
        if len(out) < len(n.output):
            raise GraphError(k, f"{n.op_type} gives {len(out)} output(s), the node names {len(n.output)}")
        for name, v in zip(n.output, out, strict=False):
            if name:
                values[name] = v
        if steps is not None:
            steps.append(Step(k, n, [None if a is None else a.value for a in args], [o.value for o in out],
                              list(out)))
    missing = [o.name for o in g.output if o.name not in values]
    if missing:
        raise GraphError(None, f"graph output(s) {missing} produced by no node")
    return [values[o.name] for o in g.output]


def run_graph(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
              steps: list[Step] | None = None) -> list[np.ndarray]:
    """The graph's outputs (each interval's representative: the oracle as a backend would run it),
    :func:`run_graph_bounded`'s."""
    return [iv.value for iv in run_graph_bounded(model, feeds, steps)]


def is_graph(model: onnx.ModelProto) -> bool:
    """More than one node (Constant nodes aside), or one that is no quantization node: a graph case's
    model."""
    nodes = [n for n in model.graph.node if not (n.op_type == "Constant" and n.domain in ("", "ai.onnx"))]
    return len(nodes) > 1 or (len(nodes) == 1 and (nodes[0].op_type in EXACT_OPS or
                                                   nodes[0].op_type in COMPUTE_OPS))


def dtype_proto(a: np.ndarray) -> int:
    return by_dtype(a.dtype).proto
