"""DequantizeLinear: ``y = (x - x_zero_point) * x_scale``, one function for every operator version.

Spec (DequantizeLinear 25): "The output type is determined by the attribute `output_dtype`. If `output_dtype`
is not supplied then the output type is the same as `x_scale`. The output type also determines the precision
of the multiplication operation."

Order of operations: ``x - x_zero_point`` exactly (no integer overflow, int32 extremes included), then both
factors rounded once to the output type and multiplied in the output type's precision (ambiguity catalogue:
dq-precision: the literal reading, not a product computed wider and rounded once).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ..types import ElementType, by_dtype
from . import arith
from .chunks import map_chunked
from .granularity import Granularity
from .steps import Steps, ToPrecision


def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
               granularity: Granularity, steps: Steps) -> np.ndarray:
    """Dequantize ``x`` to float type ``out``; inputs are already validated against the operator version.

    ``steps`` carry out the broadcasting and the roundings to the output type's precision."""
    broadcast, to_precision = steps.broadcast_dequantize, steps.to_precision
    s = to_precision(broadcast(scale, x.shape, granularity), out)
    fast = out is arith.F32 and by_dtype(x.dtype).is_integer and by_dtype(x.dtype).bits <= 16
    if fast and zero_point is not None and not zero_point.any():
        zero_point = None  # symmetric quantization's zero point: x - 0 == x, so no subtraction pass
    z = broadcast(zero_point, x.shape, granularity) if zero_point is not None else None
    if fast and z is not None:
        z = z.astype(np.float32)  # exact for <= 16-bit codes; converted once, not per chunk

    def kernel(dest: np.ndarray, xc: np.ndarray, sc: np.ndarray, zc: np.ndarray | None) -> None:
        if fast:
            # |x - zp| < 2**17: exact in float32, so no rounding before the product. Three plain in-place
            # passes over a cache-sized chunk beat one subtraction with a buffered int -> float32 cast.
            np.copyto(dest, xc, casting="unsafe")
            if zc is not None:
                np.subtract(dest, zc, out=dest)
            np.multiply(dest, sc, out=dest)
        else:
            dest[...] = _dequantize(xc, sc, zc, out, to_precision)

    # a product beyond float32's range is inf, the IEEE answer the spec gives
    with np.errstate(over="ignore"):
        return map_chunked(kernel, x, [s, z], out.dtype)


def _dequantize(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType,
                to_precision: ToPrecision) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        d64 = arith.to_float64(x)
        if z is not None:
            # Exact: 33 bits for int32, a few dozen for float8. An int32 zero point is subtracted like any
            # other (ambiguity catalogue: int32-zero-point).
            d64 = d64 - arith.to_float64(z)
        return multiply(d64, s, out, to_precision)


def multiply(d64: np.ndarray, s: np.ndarray, out: ElementType,
             to_precision: ToPrecision = arith.to_precision) -> np.ndarray:
    """``d64 * s`` in the output type's precision: the exact difference ``d64`` (float64) and the scale ``s``
    (already in ``out``) each rounded once to ``out`` (by ``to_precision``), and the product rounded once to
    it."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = to_precision(d64, out)
        if out is arith.F32:
            return cast(np.ndarray, np.multiply(d, s))
        # float16 / bfloat16: the product of two such values is exact in float64; round once.
        prod = arith.to_float64(d) * arith.to_float64(s)
        return arith.cast_float(arith.round_to(prod, out), out)
