"""The oracle on a small graph: quantization nodes and exact data-movement / selection ops, node by node.

ONNX's rule: a model's outputs are those of its nodes executed in topological order, each node reading the
values its inputs name (graph inputs, initializers, or earlier nodes' outputs). Quantization nodes are
computed by the kernel (:func:`qdq_conformance.reference.evaluate`, the node's version resolved from the
model's opset imports); the other ops are exact on any value (they move or select elements, or compare them
with constants), so numpy computes them exactly and the composition stays bit for bit the spec's.

:data:`EXACT_OPS` is the one registry of those ops (the case schema's vocabulary of graph ops is checked
against it). Relu, Clip, Max, Min and MaxPool compare values: the spec does not say what they give for NaN or
for -0 against +0, so :func:`run_graph` refuses such an input to them (``ambiguous``), and a graph case keeps
them away.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from .. import opspecs
from ..errors import SpecViolation
from ..types import by_dtype, from_tensor_proto, to_tensor_proto
from .model import opset_version
from .ops import ENTRIES

Attrs = dict[str, "int | list[int]"]
Kernel = Callable[[list["np.ndarray | None"], Attrs], list[np.ndarray]]

#: the quantization operators a graph may hold (each domain's, as the kernel knows them)
QUANT_OPS: tuple[str, ...] = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                              "ExtendedQuantizeLinear", "ExtendedDequantizeLinear")


class GraphError(ValueError):
    """A graph the oracle cannot compose: ``node`` (its index) and what is wrong, in one line."""

    def __init__(self, node: int | None, message: str) -> None:
        super().__init__(message)
        self.node = node


def _ints(attrs: Attrs, key: str, default: list[int] | None = None) -> list[int]:
    v = attrs.get(key, default)
    if v is None:
        raise ValueError(f"attribute {key} is required")
    return list(v) if isinstance(v, list) else [int(v)]


def _int(attrs: Attrs, key: str, default: int) -> int:
    v = attrs.get(key, default)
    if isinstance(v, list):
        raise ValueError(f"attribute {key} must be one integer")
    return int(v)


def _need(inputs: list[np.ndarray | None], k: int) -> np.ndarray:
    v = inputs[k] if k < len(inputs) else None
    if v is None:
        raise ValueError(f"input {k} is required")
    return v


def _comparable(x: np.ndarray) -> np.ndarray:
    """``x`` as float64 (exact for every type a graph case compares), refusing what the spec leaves open."""
    if x.dtype.kind in "iub":
        return x.astype(np.float64)
    f = x.astype(np.float64)
    if np.isnan(f).any():
        raise ArithmeticError("a NaN reaches a comparison (the spec does not say what max/min give for NaN)")
    if (np.signbit(f) & (f == 0)).any():
        raise ArithmeticError("a -0 reaches a comparison (the spec does not say what max/min give for -0 vs "
                              "+0)")
    return f


def _compare_op(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def run(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
        present = [v for v in inputs if v is not None]
        if not present:
            raise ValueError("needs at least one input")
        dtype = present[0].dtype
        acc = _comparable(present[0])
        for v in present[1:]:
            acc = fn(acc, _comparable(v))
        return [acc.astype(dtype)]
    return run


def _relu(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    return [np.maximum(_comparable(x), 0.0).astype(x.dtype)]


def _clip(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    f = _comparable(x)
    lo = inputs[1] if len(inputs) > 1 else None
    hi = inputs[2] if len(inputs) > 2 else None
    if lo is not None:
        f = np.maximum(f, _comparable(lo))
    if hi is not None:
        f = np.minimum(f, _comparable(hi))
    return [f.astype(x.dtype)]


def _reshape(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x, shape = _need(inputs, 0), [int(d) for d in _need(inputs, 1).reshape(-1)]
    if not _int(attrs, "allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _transpose(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    perm = _ints(attrs, "perm", list(reversed(range(x.ndim))))
    return [np.ascontiguousarray(np.transpose(x, perm))]


def _flatten(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    axis = _int(attrs, "axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"axis {axis} outside [0, {x.ndim}]")
    return [x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))]


def _axes(inputs: list[np.ndarray | None], attrs: Attrs) -> list[int] | None:
    if len(inputs) > 1 and inputs[1] is not None:
        return [int(a) for a in inputs[1].reshape(-1)]
    return _ints(attrs, "axes") if "axes" in attrs else None


def _squeeze(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    axes = _axes(inputs, attrs)
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = [a + x.ndim if a < 0 else a for a in axes]
    if any(not 0 <= a < x.ndim or x.shape[a] != 1 for a in axes):
        raise ValueError(f"cannot squeeze axes {axes} of shape {list(x.shape)}")
    return [np.squeeze(x, axis=tuple(axes))]


def _unsqueeze(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    axes = _axes(inputs, attrs)
    if axes is None:
        raise ValueError("axes are required")
    rank = x.ndim + len(axes)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    shape = list(x.shape)
    for a in axes:
        if not 0 <= a <= len(shape):
            raise ValueError(f"axis {a} outside the output rank {rank}")
        shape.insert(a, 1)
    return [x.reshape(shape)]


def _slice(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    starts, ends = (list(_need(inputs, k).reshape(-1)) for k in (1, 2))
    axes = (list(inputs[3].reshape(-1)) if len(inputs) > 3 and inputs[3] is not None
            else list(range(len(starts))))
    steps = list(inputs[4].reshape(-1)) if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index: list[slice] = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = int(a) + x.ndim if a < 0 else int(a)
        if int(st) == 0:
            raise ValueError("a step of 0")
        index[a] = slice(int(s), int(e), int(st))  # (Python clamps starts and ends as ONNX does)
    return [np.ascontiguousarray(x[tuple(index)])]


def _concat(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    present = [v for v in inputs if v is not None]
    return [np.concatenate(present, axis=_int(attrs, "axis", 0))]


def _gather(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x, idx = _need(inputs, 0), _need(inputs, 1).astype(np.int64)
    axis = _int(attrs, "axis", 0)
    axis = axis + x.ndim if axis < 0 else axis
    if ((idx < -x.shape[axis]) | (idx >= x.shape[axis])).any():
        raise ValueError(f"an index outside [-{x.shape[axis]}, {x.shape[axis] - 1}]")
    return [np.take(x, np.where(idx < 0, idx + x.shape[axis], idx), axis=axis)]


def _maxpool(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = _need(inputs, 0)
    kernel = _ints(attrs, "kernel_shape")
    n = len(kernel)
    strides = _ints(attrs, "strides", [1] * n)
    pads = _ints(attrs, "pads", [0] * 2 * n)
    dil = _ints(attrs, "dilations", [1] * n)
    if _int(attrs, "ceil_mode", 0) or x.ndim != n + 2 or attrs.get("auto_pad", 0):
        raise ValueError("MaxPool: only explicit pads, ceil_mode 0, input rank = 2 + len(kernel_shape)")
    f = _comparable(x)
    f = np.pad(f, [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)], constant_values=-np.inf)
    spatial = f.shape[2:]
    out_shape = [(spatial[i] - ((kernel[i] - 1) * dil[i] + 1)) // strides[i] + 1 for i in range(n)]
    if min(out_shape, default=1) < 1:
        raise ValueError(f"kernel {kernel} larger than the padded input {list(spatial)}")
    out = np.full(list(f.shape[:2]) + out_shape, -np.inf)
    for pos in itertools.product(*(range(o) for o in out_shape)):
        for k in itertools.product(*(range(kk) for kk in kernel)):
            src: tuple[Any, ...] = (Ellipsis, *(pos[i] * strides[i] + k[i] * dil[i] for i in range(n)))
            at: tuple[Any, ...] = (Ellipsis, *pos)
            out[at] = np.maximum(out[at], f[src])
    return [out.astype(x.dtype)]


#: every non-quantization op a graph may hold, with its exact computation (ai.onnx, opset 13 and later)
EXACT_OPS: dict[str, Kernel] = {
    "Identity": lambda inputs, attrs: [_need(inputs, 0)],
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Slice": _slice,
    "Concat": _concat,
    "Gather": _gather,
    "MaxPool": _maxpool,
    "Relu": _relu,
    "Clip": _clip,
    "Max": _compare_op(np.maximum),
    "Min": _compare_op(np.minimum),
}
#: the ops whose bounds must be constants (initializers) for the graph to stay exact
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {"Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,),
                                               "Slice": (1, 2, 3, 4), "Gather": (1,), "Clip": (1, 2)}
#: the ops whose values are compared (an input tensor other than the first is a constant bound)
COMPARING: frozenset[str] = frozenset({"Relu", "Clip", "Max", "Min", "MaxPool"})
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
    attrs: Attrs = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.INT:
            attrs[a.name] = int(a.i)
        elif a.type == onnx.AttributeProto.INTS:
            attrs[a.name] = [int(i) for i in a.ints]
        else:
            raise SpecViolation("QDQ010", f"attribute {a.name!r} must be INT or INTS", op=node.op_type)
    return attrs


@dataclass
class Step:
    """One node of a graph as the oracle ran it: its inputs and outputs, for a node-by-node replay."""

    index: int
    node: onnx.NodeProto
    inputs: list[np.ndarray | None]
    outputs: list[np.ndarray]


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


def run_node(model: onnx.ModelProto, node: onnx.NodeProto,
             inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    """One node of ``model`` on ``inputs`` (SpecViolation for what the kernel must not compute; ValueError or
    ArithmeticError for an exact op it cannot)."""
    domain = opspecs.normalize_domain(node.domain)
    if node.op_type in QUANT_OPS:
        opset = opset_version(model, node.domain)
        if opset is None:
            raise SpecViolation("QDQ001", f"the model imports no opset for domain {domain!r}",
                                op=node.op_type, domain=domain)
        spec = opspecs.resolve(domain, node.op_type, opset)
        ints = {k: v for k, v in node_attrs(node).items() if isinstance(v, int)}
        args = list(inputs)
        while args and args[-1] is None:
            args.pop()
        out = ENTRIES[(spec.domain, spec.name)](spec, args, ints)
        return out[: len(node.output)]
    if domain != opspecs.AI_ONNX or node.op_type not in EXACT_OPS:
        raise SpecViolation("QDQ012", f"{node.op_type} is not an op a graph case may hold", op=node.op_type,
                            domain=domain)
    return EXACT_OPS[node.op_type](list(inputs), node_attrs(node))


def run_graph(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
              steps: list[Step] | None = None) -> list[np.ndarray]:
    """The graph's outputs, its nodes executed in topological order; ``steps`` (when given) receives each
    node's inputs and outputs. Raises SpecViolation (a quantization node's rule), GraphError (the node and
    why)."""
    g = model.graph
    values: dict[str, np.ndarray] = {i.name: tensor_value(i) for i in g.initializer}
    for i in g.input:
        if i.name in feeds:
            values[i.name] = np.asarray(feeds[i.name])
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
            steps.append(Step(k, n, args, out))
    missing = [o.name for o in g.output if o.name not in values]
    if missing:
        raise GraphError(None, f"graph output(s) {missing} produced by no node")
    return [values[o.name] for o in g.output]


def is_graph(model: onnx.ModelProto) -> bool:
    """More than one node (Constant nodes aside), or one that is no quantization node: a graph case's
    model."""
    nodes = [n for n in model.graph.node if not (n.op_type == "Constant" and n.domain in ("", "ai.onnx"))]
    return len(nodes) > 1 or (len(nodes) == 1 and nodes[0].op_type in EXACT_OPS)


def dtype_proto(a: np.ndarray) -> int:
    return by_dtype(a.dtype).proto
