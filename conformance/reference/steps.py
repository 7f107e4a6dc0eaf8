"""The kernel's overridable steps: the seam through which the mutant zoo swaps one step for a shortcut.

The kernel computes every operator through a :class:`Steps` value, one field per spec-visible step: the
attributes as read, the granularity, the broadcasting of scale and zero point, the division, rounding and
saturation, the float conversions, the whole per-operator computations, the compute ops of a graph.
``qdq_conformance.reference.ops.SPEC`` holds the spec's steps; with it (the default) the kernel is the oracle.
A mutant is ``dataclasses.replace(SPEC, <field>=<shortcut>)`` put in force with :func:`using` while it runs a
model.

An evaluation reads the steps in force once, in its operator entry (:func:`active`), and hands them down
explicitly (the ``steps`` argument of :func:`.quantize.quantize`, :func:`.dequantize.dequantize`,
:func:`.dynamic.dynamic_quantize`). The steps in force are a context variable: a thread or task running a
mutant never changes what another sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..opspecs import OpSpec
from ..types import ElementType
from .granularity import Granularity
from .interval import Interval
from .node_args import Attrs

Shape = tuple[int, ...]
#: attributes as the node carries them -> attributes as the kernel reads them
ReadAttributes = Callable[[OpSpec, Mapping[str, int]], Mapping[str, int]]
#: (spec, x shape, scale shape, zero point shape, attributes, scale's input name) -> granularity
Resolve = Callable[[OpSpec, Shape, Shape, "Shape | None", Mapping[str, "int | None"], str], Granularity]
#: (scale or zero point, x shape, granularity) -> the parameter shaped to broadcast against x
Broadcast = Callable[[np.ndarray, Shape, Granularity], np.ndarray]
#: (x, scale, precision) -> x / scale in the precision, as floats
Divide = Callable[[np.ndarray, np.ndarray, ElementType], np.ndarray]
#: (a, float precision) -> a rounded once to the precision, as an array of it
ToPrecision = Callable[[np.ndarray, ElementType], np.ndarray]
#: (dest, quotient, zero point, lower bound, upper bound, integer target) -> None (dest = saturate(round(q) +
#: zp))
ToInteger = Callable[[np.ndarray, np.ndarray, "np.ndarray | None", "np.ndarray | int", "np.ndarray | int",
                      ElementType], None]
#: (quotient, zero point, float target, saturate) -> the encoded target values
ToFloat = Callable[[np.ndarray, "np.ndarray | None", ElementType, bool], np.ndarray]
#: a compute op's oracle: (exact inputs, the node's attributes) -> its outputs' intervals
#: (:data:`.compute.COMPUTE_OPS`)
ComputeKernel = Callable[[list["np.ndarray | None"], Attrs], list[Interval]]


class Quantize(Protocol):
    """QuantizeLinear's computation on validated inputs (:func:`.quantize.quantize`)."""

    def __call__(self, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray: ...


class Dequantize(Protocol):
    """DequantizeLinear's computation on validated inputs (:func:`.dequantize.dequantize`)."""

    def __call__(self, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, steps: Steps) -> np.ndarray: ...


class DynamicQuantize(Protocol):
    """DynamicQuantizeLinear's function body (:func:`.dynamic.dynamic_quantize`): (y, y_scale,
    y_zero_point)."""

    def __call__(self, x: np.ndarray, *, steps: Steps) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class Steps:
    """One implementation of every overridable step. ``ops.SPEC`` is the spec's; a mutant replaces one
    field."""

    #: The node's attributes as the planners read them (the spec's: as given, defaults filled in later).
    attributes: ReadAttributes
    #: "There are three supported quantization granularities, determined by the shape of `y_scale`."
    resolve: Resolve
    #: QuantizeLinear's scale and zero point broadcast against x (per-tensor, per-axis, blocks expanded).
    broadcast_quantize: Broadcast
    #: DequantizeLinear's scale and zero point broadcast against x.
    broadcast_dequantize: Broadcast
    #: "The type of `y_scale` determines the precision of the division operation between `x` and `y_scale`,
    #: unless the `precision` attribute is specified."
    divide: Divide
    #: One rounding to a float precision: the operands of DequantizeLinear's product ("The output type also
    #: determines the precision of the multiplication operation").
    to_precision: ToPrecision
    #: Integer targets: "For `(x / y_scale)`, it rounds to the nearest even", adds the zero point, saturates.
    to_integer: ToInteger
    #: Float targets: the zero point added, one rounding to the target, the Cast tables for ``saturate``.
    to_float: ToFloat
    #: QuantizeLinear: ``y = saturate((x / y_scale) + y_zero_point)``.
    quantize: Quantize
    #: DequantizeLinear: ``y = (x - x_zero_point) * x_scale``.
    dequantize: Dequantize
    #: DynamicQuantizeLinear: its function body.
    dynamic_quantize: DynamicQuantize
    #: The compute ops a graph may hold between DequantizeLinear and QuantizeLinear (Conv, MatMul, Sigmoid,
    #: Softmax ...), by op type: each one's interval oracle (what a legitimate float32 evaluation may give).
    compute: Mapping[str, ComputeKernel]


_ACTIVE: ContextVar[Steps | None] = ContextVar("qdq_conformance_steps", default=None)


def active() -> Steps | None:
    """The steps :func:`using` put in force, or None (the spec's)."""
    return _ACTIVE.get()


@contextmanager
def using(steps: Steps) -> Iterator[None]:
    """``steps`` in force for every evaluation inside the block (in this thread or task); restored after
    it."""
    token = _ACTIVE.set(steps)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
