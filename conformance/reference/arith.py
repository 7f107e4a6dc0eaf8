"""Exact arithmetic helpers: one correct rounding per spec-visible operation.

numpy rounds float64 -> float32 and float64 -> float16 correctly; ml_dtypes does not round float64 -> bfloat16
/ float8 directly (it goes through float32 and so rounds twice), so :func:`round_to` rounds every other format
itself from float64, with round-half-to-even, gradual underflow and IEEE overflow to infinity. The Cast tables
(saturation, NaN, infinities) are applied afterwards by :func:`encode_float`.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ..types import NUMPY_NATIVE, TYPES, ElementType

F32 = TYPES["float"]
F16 = TYPES["float16"]
BF16 = TYPES["bfloat16"]
_NATIVE = NUMPY_NATIVE | {np.dtype(np.float64), np.dtype(np.int64)}  # exact in float64


def to_float64(a: np.ndarray) -> np.ndarray:
    """Every element's exact value as float64 (exact for every registry type, including int32/uint32)."""
    if a.dtype in _NATIVE:  # numpy's own integer and float types convert exactly
        return a.astype(np.float64)
    # ml_dtypes types (bfloat16, float8, float4, float6, int4, int2) convert exactly through float32.
    with np.errstate(invalid="ignore"):
        return a.astype(np.float32).astype(np.float64)


def round_to(v: np.ndarray, t: ElementType) -> np.ndarray:
    """Round float64 values to the nearest value of float type ``t`` (ties to even), IEEE-style.

    Returns float64 values that ``t`` represents exactly; a value whose rounding exceeds ``t``'s largest
    finite value becomes +-inf (the caller applies the type's own overflow rule); NaN stays NaN; the sign of
    zero is kept.
    """
    if t is F32:
        with np.errstate(over="ignore"):
            return v.astype(np.float32).astype(np.float64)
    if t is F16:
        with np.errstate(over="ignore"):
            return v.astype(np.float16).astype(np.float64)
    assert t.mantissa_bits is not None and t.min_exp is not None and t.max_finite is not None
    with np.errstate(all="ignore"):
        a = np.abs(v)
        _, e2 = np.frexp(a)  # a = f * 2**e2 with f in [0.5, 1): the leading bit has exponent e2 - 1
        exponent = np.maximum(e2.astype(np.int64) - 1, t.min_exp)
        quantum = np.ldexp(1.0, (exponent - t.mantissa_bits).astype(np.int32))
        r = np.rint(a / quantum) * quantum  # exact: scaling by a power of two, rint ties to even
        r = np.where(r > t.max_finite, np.inf, r)
        return cast(np.ndarray, np.copysign(r, v))


def cast_float(v: np.ndarray, t: ElementType) -> np.ndarray:
    """Values already representable in ``t`` (or +-inf / NaN where ``t`` has them) as an array of ``t``."""
    with np.errstate(all="ignore"):
        return v.astype(np.float32).astype(t.dtype)


def encode_float(rounded: np.ndarray, t: ElementType, saturate: bool) -> np.ndarray:
    """Apply the Cast tables to values rounded to ``t`` by :func:`round_to` and store them as ``t``.

    With ``saturate`` (and always for types without infinity *and* NaN), out-of-range values and +-inf become
    +-max finite; otherwise they become inf (float8e5m2) or NaN (float8e4m3fn and the fnuz types). NaN stays
    NaN where ``t`` has one. fnuz types have no negative zero: -0 becomes +0 (ml_dtypes does that).
    """
    assert t.max_finite is not None
    with np.errstate(invalid="ignore"):
        nan = np.isnan(rounded)
        over = np.isinf(rounded)
    if saturate or not (t.has_inf or t.has_nan):
        if over.any():
            rounded = np.where(over, np.copysign(t.max_finite, rounded), rounded)
    elif not t.has_inf and over.any():
        rounded = np.where(over, np.nan, rounded)
    if not t.has_nan and nan.any():
        # Ambiguity catalogue: nan-to-nanless-float. The float4 technical note's Cast table maps NaN to +6
        # (the largest finite value); the kernel applies the same rule to the float6 types.
        rounded = np.where(nan, t.max_finite, rounded)
    return cast_float(rounded, t)


def to_precision(a: np.ndarray, p: ElementType) -> np.ndarray:
    """Convert ``a`` to float precision ``p`` with one rounding; returns an array of dtype ``p``."""
    if a.dtype == p.dtype:
        return a
    if p is F32 and a.dtype in _NATIVE and a.dtype != np.float64:
        return a.astype(np.float32)  # numpy rounds int32 -> float32 to nearest even
    return cast_float(round_to(to_float64(a), p), p)
