"""Mutants that only a negative scale shows: shortcuts that assume a scale is positive.

The spec puts no sign condition on y_scale / x_scale (the checker accepts negative scales), and symmetric
weight compression (NNCF, ONNX Runtime's 4-bit MatMul quantizer) emits them. With a positive scale each of
these shortcuts computes the kernel's values (in exact arithmetic); with a negative one, x / y_scale and
(x - x_zero_point) * x_scale change sign and the shortcut goes to the wrong end. Each wraps the kernel's
per-operator computation (the ``quantize`` and ``dequantize`` steps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..reference import arith
from ..reference import granularity as gran
from ..reference.granularity import Granularity
from ..reference.ops import SPEC
from ..reference.steps import Steps
from ..types import ElementType
from .mutant import F32, I8, U8, W, a, mutant

Q_FORMULA = "The quantization formula is `y = saturate((x / y_scale) + y_zero_point)`."
DQ_FORMULA = "The dequantization formula is `y = (x - x_zero_point) * x_scale`."
SATURATION = "For saturation, it saturates to [0, 255] if it's uint8, or [-128, 127] if it's int8."


@mutant("scale-abs",
        "divides (QuantizeLinear) and multiplies (DequantizeLinear) by |scale|, as if a scale were "
        "never negative", Q_FORMULA + " " + DQ_FORMULA,
        witness=W("QuantizeLinear", 21, "x 1 with y_scale -0.5 is -2 (int8), not 2", a([1], F32),
                  a(-0.5, F32), a(0, I8)))
def _scale_abs() -> Steps:
    def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray:
        return SPEC.quantize(x, np.abs(scale), zero_point, out=out, granularity=granularity,
                             precision=precision, saturate=saturate, steps=steps)

    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        return SPEC.dequantize(x, np.abs(scale), zero_point, out=out, granularity=granularity, steps=steps)

    return replace(SPEC, quantize=quantize, dequantize=dequantize)


def _after_quantize(edit: Callable[[np.ndarray, np.ndarray, np.ndarray, ElementType], np.ndarray]
                    ) -> Steps:
    """The kernel's steps replacing QuantizeLinear's integer outputs ``y`` by ``edit(y, x, scale broadcast to
    x, out)``."""
    def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray:
        y = SPEC.quantize(x, scale, zero_point, out=out, granularity=granularity, precision=precision,
                          saturate=saturate, steps=steps)
        if not out.is_integer or not y.size:
            return y
        s = np.broadcast_to(arith.to_float64(gran.broadcast(scale, x.shape, granularity)), x.shape)
        with np.errstate(all="ignore"):
            return edit(y, arith.to_float64(x), s, out)
    return replace(SPEC, quantize=quantize)


@mutant("clamp-x-in-scale-order",
        "saturates in x's domain before dividing: x clamped to min(max(x, (qmin - zp) * "
        "y_scale), (qmax - zp) * y_scale), the bounds in the scale's order, so a negative scale (bounds "
        "swapped) sends every x to qmax", Q_FORMULA + " " + SATURATION,
        witness=W("QuantizeLinear", 21, "x 1 with y_scale -0.5 and zero point 128 is 126, not 255",
                  a([1], F32), a(-0.5, F32), a(128, U8)))
def _clamp_in_scale_order() -> Steps:
    # With a positive scale the clamp before the division changes no value (in exact arithmetic the division
    # is monotonic, and the kernel saturates the quotient to the same bounds); with a negative one the lower
    # bound exceeds the upper and min(max(x, lo), hi) is hi for every x that is not NaN.
    def edit(y: np.ndarray, x: np.ndarray, s: np.ndarray, out: ElementType) -> np.ndarray:
        swapped = (s < 0) & ~np.isnan(x)
        if not swapped.any():
            return y
        y = y.copy()
        y[swapped] = np.asarray(out.int_max).astype(y.dtype)
        return y
    return _after_quantize(edit)


@mutant("inf-sign-from-x",
        "saturates an infinite x by the sign of x (+inf to qmax, -inf to qmin) instead of the "
        "sign of x / y_scale", Q_FORMULA + " " + SATURATION,
        witness=W("QuantizeLinear", 21, "+inf / -1 is -inf: uint8 0, not 255", a([np.inf], F32), a(-1, F32),
                  a(0, U8)))
def _inf_sign_from_x() -> Steps:
    def edit(y: np.ndarray, x: np.ndarray, s: np.ndarray, out: ElementType) -> np.ndarray:
        pos, neg = x == np.inf, x == -np.inf
        if not (pos.any() or neg.any()):
            return y
        y = y.copy()
        y[pos] = np.asarray(out.int_max).astype(y.dtype)
        y[neg] = np.asarray(out.int_min).astype(y.dtype)
        return y
    return _after_quantize(edit)
