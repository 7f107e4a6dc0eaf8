"""DequantizeLinear: ``y = (x - x_zero_point) * x_scale``, one function for every operator version.

Spec (DequantizeLinear 25): "The output type is determined by the attribute `output_dtype`. If `output_dtype` is
not supplied then the output type is the same as `x_scale`. The output type also determines the precision of the
multiplication operation."

Order of operations: ``x - x_zero_point`` exactly (no integer overflow, int32 extremes included), then both
factors rounded once to the output type and multiplied in the output type's precision (ambiguity catalogue:
dq-precision: the literal reading, not a product computed wider and rounded once).
"""

from __future__ import annotations

import numpy as np

from ..types import ElementType, by_dtype
from . import arith
from .granularity import Granularity, broadcast


def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
               granularity: Granularity) -> np.ndarray:
    """Dequantize ``x`` to float type ``out``; inputs are already validated against the operator version."""
    s = arith.to_precision(broadcast(scale, x.shape, granularity), out)
    z = broadcast(zero_point, x.shape, granularity) if zero_point is not None else None
    xt = by_dtype(x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        if out is arith.F32 and xt.is_integer and xt.bits <= 16:
            # |x - zp| < 2**17: exact in float32, so no rounding before the product.
            d = x.astype(np.float32)
            if z is not None:
                d = d - z.astype(np.float32)
            y = np.multiply(d, s)
        else:
            d64 = arith.to_float64(x)
            if z is not None:
                d64 = d64 - arith.to_float64(z)  # exact: 33 bits for int32, a few dozen for float8
            d = arith.to_precision(d64, out)
            if out is arith.F32:
                y = np.multiply(d, s)
            else:
                # float16 / bfloat16: the product of two such values is exact in float64; round once.
                prod = arith.to_float64(d) * arith.to_float64(s)
                y = arith.cast_float(arith.round_to(prod, out), out)
    return np.asarray(y, dtype=out.dtype).reshape(x.shape)
