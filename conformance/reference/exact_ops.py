"""The exact ops of a graph case: they move or select elements, or compare them with constants, so numpy
computes them exactly and the composition stays bit for bit the spec's.

:data:`EXACT_OPS` is their registry (with the quantization ops and the compute ops, the case schema's
vocabulary of graph ops is checked against it). Relu, Clip, Max, Min and MaxPool compare values: the spec does
not say what they give for NaN or for -0 against +0, so they refuse such an input (``ambiguous``), and a graph
case keeps them away. Every one of them is monotone (non-decreasing) in each input, element by element, which
is what lets an interval pass through them (``graph_oracle.py`` maps its endpoints).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .node_args import Attrs, Kernel, integer, ints, need
from .sliding import windows


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
    x = need(inputs, 0)
    return [np.maximum(_comparable(x), 0.0).astype(x.dtype)]


def _clip(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = need(inputs, 0)
    f = _comparable(x)
    lo = inputs[1] if len(inputs) > 1 else None
    hi = inputs[2] if len(inputs) > 2 else None
    if lo is not None:
        f = np.maximum(f, _comparable(lo))
    if hi is not None:
        f = np.minimum(f, _comparable(hi))
    return [f.astype(x.dtype)]


def _reshape(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x, shape = need(inputs, 0), [int(d) for d in need(inputs, 1).reshape(-1)]
    if not integer(attrs, "allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _transpose(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = need(inputs, 0)
    perm = ints(attrs, "perm", list(reversed(range(x.ndim))))
    return [np.ascontiguousarray(np.transpose(x, perm))]


def _flatten(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = need(inputs, 0)
    axis = integer(attrs, "axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"axis {axis} outside [0, {x.ndim}]")
    return [x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))]


def _axes(inputs: list[np.ndarray | None], attrs: Attrs) -> list[int] | None:
    if len(inputs) > 1 and inputs[1] is not None:
        return [int(a) for a in inputs[1].reshape(-1)]
    return ints(attrs, "axes") if "axes" in attrs else None


def _squeeze(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = need(inputs, 0)
    axes = _axes(inputs, attrs)
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = [a + x.ndim if a < 0 else a for a in axes]
    if any(not 0 <= a < x.ndim or x.shape[a] != 1 for a in axes):
        raise ValueError(f"cannot squeeze axes {axes} of shape {list(x.shape)}")
    return [np.squeeze(x, axis=tuple(axes))]


def _unsqueeze(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = need(inputs, 0)
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
    x = need(inputs, 0)
    starts, ends = (list(need(inputs, k).reshape(-1)) for k in (1, 2))
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
    return [np.concatenate(present, axis=integer(attrs, "axis", 0))]


def _gather(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x, idx = need(inputs, 0), need(inputs, 1).astype(np.int64)
    axis = integer(attrs, "axis", 0)
    axis = axis + x.ndim if axis < 0 else axis
    if ((idx < -x.shape[axis]) | (idx >= x.shape[axis])).any():
        raise ValueError(f"an index outside [-{x.shape[axis]}, {x.shape[axis] - 1}]")
    return [np.take(x, np.where(idx < 0, idx + x.shape[axis], idx), axis=axis)]


def _maxpool(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    x = need(inputs, 0)
    kernel = ints(attrs, "kernel_shape")
    n = len(kernel)
    if integer(attrs, "ceil_mode", 0) or x.ndim != n + 2 or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise ValueError("MaxPool: only explicit pads, ceil_mode 0, input rank = 2 + len(kernel_shape)")
    win = windows(_comparable(x), kernel, ints(attrs, "strides", [1] * n), ints(attrs, "pads", [0] * 2 * n),
                  ints(attrs, "dilations", [1] * n), fill=-np.inf)
    return [win.max(axis=tuple(range(-n, 0))).astype(x.dtype)]


#: Pad's modes and numpy.pad's names for them (ONNX's reflect, like numpy's, does not repeat the edge)
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def _pad(inputs: list[np.ndarray | None], attrs: Attrs) -> list[np.ndarray]:
    """ONNX Pad: "Given a tensor containing the data to be padded (`data`), a tensor containing the number of
    start and end pad values for axis (`pads`), (optionally) a `mode`, and (optionally) `constant_value`, a
    padded tensor (`output`) is generated." constant_value: "(Optional) A scalar value to be used if the mode
    chosen is `constant` (by default it is 0, empty string or False)"; axes (opset 18) "to which `pads`
    apply". Non-negative pads (a negative one crops: not computed here)."""
    x = need(inputs, 0)
    pads = [int(p) for p in need(inputs, 1).reshape(-1)]
    axes = ([int(a) + x.ndim if a < 0 else int(a) for a in inputs[3].reshape(-1)]
            if len(inputs) > 3 and inputs[3] is not None else list(range(x.ndim)))
    mode = attrs.get("mode", "constant")
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise ValueError(f"Pad: mode {mode!r} is not one of {', '.join(_PAD_MODES)}")
    if len(pads) != 2 * len(axes) or min(pads, default=0) < 0 or len(set(axes)) != len(axes) or \
            not all(0 <= a < x.ndim for a in axes):
        raise ValueError(f"Pad: pads {pads} do not fit axes {axes} of a rank-{x.ndim} input (or one is "
                         "negative: the oracle pads, it does not crop)")
    width = [(0, 0)] * x.ndim
    for k, a in enumerate(axes):
        width[a] = (pads[k], pads[k + len(axes)])
    if mode != "constant":
        return [np.pad(x, width, mode=_PAD_MODES[mode])]  # type: ignore[call-overload]
    value = inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.zeros((), x.dtype)
    if value.size != 1 or value.dtype != x.dtype:
        raise ValueError("Pad: constant_value must be a scalar of the data's type")
    out = np.empty([d + b + e for d, (b, e) in zip(x.shape, width, strict=True)], x.dtype)
    out[...] = value.reshape(())  # (assigned, not converted: a float8 or a -0 keeps its bits)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, width, strict=True))] = x
    return [out]


#: every non-quantization op a graph may hold, with its exact computation (ai.onnx, opset 13 and later)
EXACT_OPS: dict[str, Kernel] = {
    "Identity": lambda inputs, attrs: [need(inputs, 0)],
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Slice": _slice,
    "Concat": _concat,
    "Gather": _gather,
    "MaxPool": _maxpool,
    "Pad": _pad,
    "Relu": _relu,
    "Clip": _clip,
    "Max": _compare_op(np.maximum),
    "Min": _compare_op(np.minimum),
}
#: the ops whose bounds must be constants (initializers) for the graph to stay exact
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {"Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,),
                                               "Slice": (1, 2, 3, 4), "Gather": (1,), "Clip": (1, 2),
                                               "Pad": (1, 2, 3)}
#: the ops whose values are compared (an input tensor other than the first is a constant bound)
COMPARING: frozenset[str] = frozenset({"Relu", "Clip", "Max", "Min", "MaxPool"})
