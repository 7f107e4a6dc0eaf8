"""QuantizeLinear: ``y = saturate((x / y_scale) + y_zero_point)``, one function for every operator version.

Spec (QuantizeLinear 25): "For `(x / y_scale)`, it rounds to the nearest even. [...] `x` and `y_scale` are
allowed to have different types. The type of `y_scale` determines the precision of the division operation
between `x` and `y_scale`, unless the `precision` attribute is specified." Saturation bounds are the target
type's range.

Order of operations, for every version:
1. convert x and the scale to the division precision P (one rounding each) and divide in P;
2. integer targets: round half to even, add the zero point exactly, clip in float to the target range, then
   cast (never an integer cast before the clip, so values beyond 2**31 and +-inf saturate to the right end);
3. float targets (float8 / float4 / float6, and float16 / bfloat16 for com.amd.quark): add the zero point
   exactly, round once to the target (ties to even) and apply the Cast tables for ``saturate``.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ..types import TYPES, ElementType
from . import arith
from .chunks import map_chunked
from .granularity import Granularity
from .steps import Steps, ToPrecision

INT32 = TYPES["int32"]


def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType,
           to_precision: ToPrecision = arith.to_precision) -> np.ndarray:
    """``x / scale`` in the given precision (ambiguity catalogue: division-precision; also
    mixed-precision-operands and int32-precision).

    float32: both operands rounded to float32, IEEE division. float16 / bfloat16: both operands rounded to
    that type, exact quotient (float64 holds it to well within the double-rounding bound) rounded once. int32:
    an integer precision has no fractional quotient to round half to even, so the kernel divides the exact
    operand values in float64 (ambiguity catalogue: int32-precision). ``to_precision`` rounds once to a float
    precision (the kernel's :func:`.arith.to_precision`).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if precision is arith.F32:
            return np.divide(to_precision(x, precision), to_precision(scale, precision))
        if precision is INT32:
            return cast(np.ndarray, arith.to_float64(x) / arith.to_float64(scale))
        xp = arith.to_float64(to_precision(x, precision))
        sp = arith.to_float64(to_precision(scale, precision))
        return arith.to_float64(to_precision(xp / sp, precision))


def to_integer(dest: np.ndarray, q: np.ndarray, zp: np.ndarray | None, lo: np.ndarray | int,
                hi: np.ndarray | int, out: ElementType) -> None:
    """``dest = saturate(round(q) + zp)``, clipping in float before any integer cast.

    The zero point is an integer, so clipping q to [lo, hi] = [min - zp, max - zp] before rounding half to
    even gives the same value as rounding, adding and clipping to [min, max]; the addition then fuses with the
    cast.
    """
    # float32 holds every integer below 2**24 and every <=16-bit range with its zero point exactly.
    work = np.float32 if (q.dtype == np.float32 and out.bits <= 16) else np.float64
    v = q.astype(work, copy=False)  # q is a fresh array: work in place
    if isinstance(lo, np.ndarray):
        np.maximum(v, lo, out=v)  # both propagate NaN
        np.minimum(v, hi, out=v)
    else:
        np.clip(v, lo, hi, out=v)
    np.rint(v, out=v)
    if v.size and np.isnan(np.minimum.reduce(v, axis=None)):  # NaN survives the clip; one cheap check
        np.copyto(v, 0, where=np.isnan(v))  # ambiguity catalogue: nan-to-integer (a zero quotient)
    target = dest if out.bits >= 8 else np.empty(dest.shape, np.int8)
    if zp is None:
        np.copyto(target, v, casting="unsafe")
    else:
        np.add(v, zp, out=target, casting="unsafe")
    if target is not dest:
        dest[...] = target.astype(out.dtype)


def to_float(q: np.ndarray, zp: np.ndarray | None, out: ElementType, saturate: bool) -> np.ndarray:
    v = arith.to_float64(q)
    if zp is not None:
        z = arith.to_float64(zp)
        # Ambiguity catalogue: float-zero-point. The formula's addition is carried out as IEEE arithmetic on
        # exact values (so -0 + 0 = +0, as ONNX's own float4 node test expects), rounded once to the target.
        v = v + z
    return arith.encode_float(arith.round_to(v, out), out, saturate)


def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
             granularity: Granularity, precision: ElementType, saturate: bool = True,
             steps: Steps) -> np.ndarray:
    """Quantize ``x`` to type ``out``; inputs are already validated against the operator version.

    ``steps`` carry out the broadcasting, the division (``steps.divide``: the kernel's :func:`divide`, another
    reading of the division for :mod:`.readings`, or a mutant's) and the conversion to the target."""
    broadcast, divide, to_integer, to_float = (steps.broadcast_quantize, steps.divide, steps.to_integer,
                                               steps.to_float)
    s = broadcast(scale, x.shape, granularity)
    z = broadcast(zero_point, x.shape, granularity) if zero_point is not None else None

    if not out.is_integer:
        def floats(dest: np.ndarray, xc: np.ndarray, sc: np.ndarray, zc: np.ndarray | None) -> None:
            dest[...] = to_float(divide(xc, sc, precision), zc, out, saturate)

        return map_chunked(floats, x, [s, z], out.dtype)
    assert out.int_min is not None and out.int_max is not None
    int_min, int_max = out.int_min, out.int_max
    work = np.float64 if out.bits > 16 else np.float32
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    if z is not None:  # exact in the working type; computed once, not per chunk
        z = z.astype(work)
        lo, hi = (work(out.int_min) - z), (work(out.int_max) - z)

    def integers(dest: np.ndarray, xc: np.ndarray, sc: np.ndarray, zc: np.ndarray | None,
                 loc: np.ndarray | None, hic: np.ndarray | None) -> None:
        q = np.asarray(divide(xc, sc, precision))  # rank 0: numpy returns a scalar; work on an array
        to_integer(dest, q, zc, int_min if loc is None else loc, int_max if hic is None else hic, out)

    return map_chunked(integers, x, [s, z, lo, hi], out.dtype)
