"""QuantizeLinear: ``y = saturate((x / y_scale) + y_zero_point)``, one function for every operator version.

Spec (QuantizeLinear 25): "For `(x / y_scale)`, it rounds to the nearest even. [...] `x` and `y_scale` are allowed
to have different types. The type of `y_scale` determines the precision of the division operation between `x` and
`y_scale`, unless the `precision` attribute is specified." Saturation bounds are the target type's range.

Order of operations, for every version:
1. convert x and the scale to the division precision P (one rounding each) and divide in P;
2. integer targets: round half to even, add the zero point exactly, clip in float to the target range, then
   cast (never an integer cast before the clip, so values beyond 2**31 and +-inf saturate to the right end);
3. float targets (float8 / float4 / float6, and float16 / bfloat16 for com.amd.quark): add the zero point
   exactly, round once to the target (ties to even) and apply the Cast tables for ``saturate``.
"""

from __future__ import annotations

import numpy as np

from ..types import TYPES, ElementType, by_dtype
from . import arith
from .granularity import Granularity, broadcast

INT32 = TYPES["int32"]

#: What a NaN quotient becomes for an integer target. Ambiguity catalogue: ``nan-to-integer``.
#: The kernel reads NaN as a zero quotient, so the output is the zero point.
NAN_TO_INTEGER = "zero-point"


def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType) -> np.ndarray:
    """``x / scale`` in the given precision (ambiguity catalogue: division-precision, int32-precision).

    float32: both operands rounded to float32, IEEE division. float16 / bfloat16: both operands rounded to that
    type, exact quotient (float64 holds it to well within the double-rounding bound) rounded once. int32: an
    integer precision has no fractional quotient to round half to even, so the kernel divides the exact
    operand values in float64 (ambiguity catalogue: int32-precision).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if precision is arith.F32:
            return np.divide(arith.to_precision(x, precision), arith.to_precision(scale, precision))
        if precision is INT32:
            return arith.to_float64(x) / arith.to_float64(scale)
        xp = arith.to_float64(arith.to_precision(x, precision))
        sp = arith.to_float64(arith.to_precision(scale, precision))
        return arith.to_float64(arith.to_precision(xp / sp, precision))


def _to_integer(q: np.ndarray, zp: np.ndarray | None, out: ElementType) -> np.ndarray:
    assert out.int_min is not None and out.int_max is not None
    # float32 is enough below 2**24; beyond it every <=16-bit target saturates whatever the rounding of the sum.
    work = np.float32 if (q.dtype == np.float32 and out.bits <= 16) else np.float64
    v = q.astype(work, copy=False)  # q is a fresh array: round in place
    np.rint(v, out=v)
    if zp is not None:
        z = zp.astype(work)
        np.add(v, z, out=v)
    nan = np.isnan(v)
    if nan.any():
        fill = np.broadcast_to(z, v.shape) if zp is not None else np.zeros((), work)
        np.copyto(v, fill, where=nan)
    np.clip(v, out.int_min, out.int_max, out=v)
    if out.bits < 8:
        return v.astype(np.int8).astype(out.dtype)
    return v.astype(out.dtype)


def _to_float(q: np.ndarray, zp: np.ndarray | None, out: ElementType, saturate: bool) -> np.ndarray:
    v = arith.to_float64(q)
    if zp is not None:
        z = arith.to_float64(zp)
        # Ambiguity catalogue: float-zero-point. The formula's addition is carried out as IEEE arithmetic on
        # exact values (so -0 + 0 = +0, as ONNX's own float4 node test expects), rounded once to the target.
        v = v + z
    return arith.encode_float(arith.round_to(v, out), out, saturate)


def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
             granularity: Granularity, precision: ElementType, saturate: bool = True) -> np.ndarray:
    """Quantize ``x`` to type ``out``; inputs are already validated against the operator version."""
    s = broadcast(scale, x.shape, granularity)
    z = broadcast(zero_point, x.shape, granularity) if zero_point is not None else None
    q = divide(x, s, precision)
    if out.is_integer:
        result = _to_integer(q, z, out)
    else:
        result = _to_float(q, z, out, saturate)
    assert by_dtype(result.dtype) is out
    return result.reshape(x.shape)
