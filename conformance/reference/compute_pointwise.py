"""Add, Mul, LeakyRelu and Cast: one IEEE operation per element, so the float32 result is unique.

A single IEEE 754 addition or multiplication of two float32 values is correctly rounded (round to nearest
even), and computing it wider then rounding to float32 once gives the same value (float64 holds more than
twice float32's significand: double rounding is innocuous for +, -, *), so every legitimate float32 evaluation
gives the one float numpy's float32 arithmetic gives: the interval is that float
(:meth:`.interval.Interval.exact`).
"""

from __future__ import annotations

import numpy as np
import onnx

from .interval import Interval
from .node_args import Attrs, Inputs, float32, integer, need, real


def _broadcast(a: np.ndarray, b: np.ndarray, op: str) -> None:
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{op}: shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None


def add(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Add: "Performs element-wise binary addition (with Numpy-style broadcasting support)." One
    correctly rounded float32 addition per element."""
    a, b = float32(need(inputs, 0), "Add's A"), float32(need(inputs, 1), "Add's B")
    _broadcast(a, b, "Add")
    return [Interval.exact(np.add(a, b, dtype=np.float32))]


def mul(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Mul: "Performs element-wise binary multiplication (with Numpy-style broadcasting support)." One
    correctly rounded float32 multiplication per element."""
    a, b = float32(need(inputs, 0), "Mul's A"), float32(need(inputs, 1), "Mul's B")
    _broadcast(a, b, "Mul")
    return [Interval.exact(np.multiply(a, b, dtype=np.float32))]


def leaky_relu(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX LeakyRelu: "produces one output data (Tensor<T>) where the function `f(x) = alpha * x for x < 0`,
    `f(x) = x for x >= 0`, is applied to the data tensor elementwise." alpha (default 0.01) is the float32 the
    attribute holds; one correctly rounded multiplication for x < 0."""
    x = float32(need(inputs, 0), "LeakyRelu's X")
    alpha = real(attrs, "alpha", 0.01)
    return [Interval.exact(np.where(x < 0, np.multiply(alpha, x, dtype=np.float32), x).astype(np.float32))]


#: Cast's sources a graph case may convert to float (every value of them has one nearest float32)
_CAST_SOURCES = (np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16),
                 np.dtype(np.uint16), np.dtype(np.float32))


def cast(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Cast: "casts the elements of a given input tensor to a data type specified by the 'to' argument".
    From an integer (MatMulInteger's int32 accumulator) to float: the nearest float32, ties to even (exact up
    to 2**24). Only ``to = FLOAT`` is computed here."""
    x = need(inputs, 0)
    if integer(attrs, "to", 0) != onnx.TensorProto.FLOAT or x.dtype not in _CAST_SOURCES:
        raise ValueError("Cast: the oracle computes a cast of an integer (or float) tensor to float only")
    return [Interval.exact(x.astype(np.float32))]
