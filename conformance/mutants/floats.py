"""Mutants of QuantizeLinear's float8 / float4 / float6 targets: rounding to the target and the Cast tables.

Each replaces the kernel's ``to_float`` step (``Steps.to_float(q, zp, out, saturate)``). The kernel adds the
zero point exactly, rounds once to the target (ties to even, gradual underflow) and applies the Cast tables
(saturate: +-inf and out-of-range values to +-max; saturate=0: to inf (float8e5m2) or NaN; NaN stays NaN; fnuz
types have no -0). The com.amd.quark float16 / bfloat16 targets (16 bits) are left alone: their saturation is
catalogued (quark-float-saturation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import ml_dtypes
import numpy as np
from onnx import TensorProto

from ..reference import arith
from ..reference.granularity import Granularity
from ..reference.ops import SPEC
from ..reference.steps import Steps
from ..types import ElementType, by_dtype
from .mutant import F32, W, a, mutant

CAST = ("Cast 19+, conversion to float 8 (table rows): 0 -> 0; -0 -> -0 (FNUZ: 0); NaN -> NaN; Inf -> "
        "FLT_MAX; -Inf -> -FLT_MAX; [x] > FLT_MAX -> FLT_MAX; else RNE. The behavior changes if the "
        "parameter 'saturate' is set to False: Inf -> NaN (E5M2: Inf); [x] > FLT_MAX -> NaN (E5M2: Inf).")
SATURATE = ("saturate: The parameter defines how the conversion behaves if an input value is out of range of "
            "the destination type. It only applies for float 8 quantization (float8e4m3fn, float8e4m3fnuz, "
            "float8e5m2, float8e5m2fnuz). It is true by default. All cases are fully described in two tables "
            "inserted in the operator description.")
RNE = "Cast to float 8 / float 4 types: else RNE (round to nearest, ties to even)."

Step = Callable[[np.ndarray, ElementType, bool], np.ndarray]


def _floats(fn: Step, *, only: Callable[[ElementType], bool] = lambda t: t.bits <= 8,
            with_zero_point: bool = True) -> Steps:
    """The kernel's steps with the float-target step replaced by ``fn(v, out, saturate) -> array of out``,
    where ``v`` is the exact sum x / y_scale + zero point in float64; targets outside ``only`` keep the
    kernel's step."""
    original = SPEC.to_float

    def to_float(q: np.ndarray, zp: np.ndarray | None, out: ElementType, saturate: bool) -> np.ndarray:
        if not only(out):
            return original(q, zp, out, saturate)
        v = arith.to_float64(q)
        if zp is not None and with_zero_point:
            v = v + arith.to_float64(zp)
        with np.errstate(all="ignore"):
            return fn(v, out, saturate)

    return replace(SPEC, to_float=to_float)


def _standard(v: np.ndarray, out: ElementType, saturate: bool) -> np.ndarray:
    return arith.encode_float(arith.round_to(v, out), out, saturate)


def _after(post: Callable[[np.ndarray, np.ndarray, ElementType], np.ndarray]) -> Step:
    """The kernel's step, then ``post(v, y, out)`` rewriting some of the encoded outputs ``y``."""
    def fn(v: np.ndarray, out: ElementType, saturate: bool) -> np.ndarray:
        y = _standard(v, out, saturate)
        return np.asarray(post(v, y, out), np.float32).astype(out.dtype)
    return fn


def _via(dtype: type) -> Step:
    def fn(v: np.ndarray, out: ElementType, saturate: bool) -> np.ndarray:
        w = v.astype(np.float32).astype(dtype).astype(np.float64)  # the shortcut: an intermediate 16-bit type
        return _standard(arith.to_float64(np.asarray(w)), out, saturate)
    return fn


@mutant("float8-via-float16",
        "converts the quotient to float16 first, then to the float8 / float4 / float6 target "
        "(two roundings)", RNE,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: 1.0627 is just above the tie 1.0625 between 1 and "
                                        "1.125 (-> 1.125); float16 rounds it onto the tie first (-> 1)",
                  a([1.0625 + 2**-12], F32), a(1, F32), a(0, ml_dtypes.float8_e4m3fn)))
def _via_f16() -> Steps:
    return _floats(_via(np.float16))


@mutant("float8-via-bfloat16",
        "converts the quotient to bfloat16 first, then to the float8 / float4 / float6 "
        "target (two roundings)", RNE,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: 1.0635 is just above the tie 1.0625 (-> 1.125); "
                                        "bfloat16 rounds it onto the tie first (-> 1)",
                  a([1.0625 + 2**-10], F32), a(1, F32), a(0, ml_dtypes.float8_e4m3fn)))
def _via_bf16() -> Steps:
    return _floats(_via(ml_dtypes.bfloat16))


@mutant("saturate-ignored", "always saturates, whatever the saturate attribute says", SATURATE + " " + CAST,
        witness=W("QuantizeLinear", 21, "float8e4m3fn, saturate=0: 1000 becomes NaN, not 448", a([1000], F32),
                  a(1, F32), a(0, ml_dtypes.float8_e4m3fn), saturate=0))
def _saturate_ignored() -> Steps:
    return _floats(lambda v, out, saturate: _standard(v, out, True))


@mutant("saturate-inverted",
        "reads saturate the wrong way round (saturate=1 overflows, saturate=0 saturates)",
        SATURATE + " " + CAST,
        witness=W("QuantizeLinear", 21, "float8e4m3fn, saturate=0: 1000 becomes NaN, not 448", a([1000], F32),
                  a(1, F32), a(0, ml_dtypes.float8_e4m3fn), saturate=0))
def _saturate_inverted() -> Steps:
    return _floats(lambda v, out, saturate: _standard(v, out, not saturate))


@mutant("nan-to-zero", "a NaN quotient becomes 0 in float8 targets (a NaN-unaware conversion)", CAST,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: NaN stays NaN", a([np.nan], F32), a(1, F32),
                  a(0, ml_dtypes.float8_e4m3fn)))
def _nan_zero() -> Steps:
    return _floats(_after(lambda v, y, out: np.where(np.isnan(v), 0.0, y.astype(np.float32))),
                   only=lambda t: t.bits == 8)


@mutant("nan-to-neg-max", "a NaN quotient becomes -max in float8 targets (the sign bit of NaN kept through a "
        "saturating conversion)", CAST,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: NaN stays NaN", a([np.nan], F32), a(1, F32),
                  a(0, ml_dtypes.float8_e4m3fn)))
def _nan_neg_max() -> Steps:
    return _floats(_after(lambda v, y,
                          out: np.where(np.isnan(v), -(out.max_finite or 0), y.astype(np.float32))),
                   only=lambda t: t.bits == 8)


@mutant("nan-to-max", "a NaN quotient becomes +max in float8 targets (NaN saturated like an overflow)", CAST,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: NaN stays NaN", a([np.nan], F32), a(1, F32),
                  a(0, ml_dtypes.float8_e4m3fn)))
def _nan_max() -> Steps:
    return _floats(_after(lambda v, y, out: np.where(np.isnan(v), out.max_finite or 0, y.astype(np.float32))),
                   only=lambda t: t.bits == 8)


@mutant("negative-zero-lost", "every zero result is stored as +0 (the sign of -0 and of negative underflows "
        "dropped)", CAST,
        witness=W("QuantizeLinear", 21,
                  "float8e4m3fn without a zero point (output_dtype): -0.0001 underflows to -0",
                  a([-0.0001, -0.0], F32), a(1, F32), output_dtype=TensorProto.FLOAT8E4M3FN))
def _neg_zero_lost() -> Steps:
    return _floats(_after(lambda v, y, out: np.where(y.astype(np.float32) == 0, 0.0, y.astype(np.float32))))


@mutant("fnuz-as-fn", "encodes fnuz targets with the fn tables, so -0 becomes the code 0x80 (NaN in fnuz)",
        CAST + " (fnuz: -0 -> 0)",
        witness=W("QuantizeLinear", 21, "float8e4m3fnuz without a zero point (output_dtype): -0.0001 "
                                        "underflows to +0 (fnuz has no -0), not NaN", a([-0.0001], F32),
                  a(1, F32), output_dtype=TensorProto.FLOAT8E4M3FNUZ))
def _fnuz_as_fn() -> Steps:
    def post(v: np.ndarray, y: np.ndarray, out: ElementType) -> np.ndarray:
        y32 = y.astype(np.float32)
        if out.has_negative_zero or out.bits != 8:
            return y32
        negative_zero = (arith.round_to(v, out) == 0) & np.signbit(v)
        return np.where(negative_zero, np.nan, y32)
    return _floats(_after(post))


@mutant("subnormal-flush", "flushes subnormal float8 / float4 / float6 results to zero (FTZ)", RNE,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: 2**-9 is the smallest subnormal", a([2**-9], F32),
                  a(1, F32), a(0, ml_dtypes.float8_e4m3fn)))
def _ftz() -> Steps:
    def post(v: np.ndarray, y: np.ndarray, out: ElementType) -> np.ndarray:
        y32 = y.astype(np.float32)
        assert out.min_exp is not None
        return np.where(np.abs(y32) < 2.0**out.min_exp, np.copysign(0.0, y32), y32)
    return _floats(_after(post))


@mutant("overflow-before-rounding",
        "with saturate=0, any |value| above the largest finite one overflows, even "
        "those that round down to it", CAST,
        witness=W("QuantizeLinear", 21,
                  "float8e4m3fn, saturate=0: 460 rounds down to 448 (below the overflow threshold 464)",
                  a([460], F32), a(1, F32), a(0, ml_dtypes.float8_e4m3fn), saturate=0))
def _overflow_first() -> Steps:
    def fn(v: np.ndarray, out: ElementType, saturate: bool) -> np.ndarray:
        r = arith.round_to(v, out)
        assert out.max_finite is not None
        r = np.where(np.isfinite(v) & (np.abs(v) > out.max_finite), np.copysign(np.inf, v), r)
        return arith.encode_float(r, out, saturate)
    return _floats(fn)


def _rounder(step: Callable[[np.ndarray], np.ndarray]) -> Step:
    """The kernel's rounding to the target with ``step`` in place of round-half-to-even on the scaled
    magnitude."""
    def fn(v: np.ndarray, out: ElementType, saturate: bool) -> np.ndarray:
        assert out.mantissa_bits is not None and out.min_exp is not None and out.max_finite is not None
        a = np.abs(v)
        _, e2 = np.frexp(a)
        exponent = np.maximum(e2.astype(np.int64) - 1, out.min_exp)
        quantum = np.ldexp(1.0, (exponent - out.mantissa_bits).astype(np.int32))
        r = step(a / quantum) * quantum
        r = np.copysign(np.where(r > out.max_finite, np.inf, r), v)
        return arith.encode_float(r, out, saturate)
    return fn


@mutant("float-round-half-away",
        "rounds to the float8 / float4 / float6 target half away from zero (add half an "
        "ulp, truncate the mantissa)", RNE,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: the tie 1.0625 rounds to 1 (even), not 1.125",
                  a([1.0625], F32), a(1, F32), a(0, ml_dtypes.float8_e4m3fn)))
def _float_half_away() -> Steps:
    return _floats(_rounder(lambda m: np.floor(m + 0.5)))


@mutant("float-truncate",
        "truncates the mantissa when converting to the float8 / float4 / float6 target (round "
        "toward zero)", RNE,
        witness=W("QuantizeLinear", 21, "float8e4m3fn: 1.12 rounds up to 1.125", a([1.12], F32), a(1, F32),
                  a(0, ml_dtypes.float8_e4m3fn)))
def _float_truncate() -> Steps:
    return _floats(_rounder(np.floor))


@mutant("inf-kept-when-saturating", "with saturate=1, +-inf stays +-inf in float8e5m2 (only finite overflow "
        "saturates)", CAST + " (Inf -> FLT_MAX)",
        witness=W("QuantizeLinear", 21, "float8e5m2, saturate=1: +inf becomes 57344", a([np.inf], F32),
                  a(1, F32), a(0, ml_dtypes.float8_e5m2)))
def _inf_kept() -> Steps:
    def post(v: np.ndarray, y: np.ndarray, out: ElementType) -> np.ndarray:
        return np.where(np.isinf(v), v, y.astype(np.float32)) if out.has_inf else y.astype(np.float32)
    return _floats(_after(post))


@mutant("float8-zero-point-ignored",
        "ignores a float8 / float4 zero point (QuantizeLinear and DequantizeLinear)",
        "`y_zero_point` is usually not used for quantization to float8 and 4bit types, but the quantization "
        "formula remains the same for consistency",
        witness=W("QuantizeLinear", 21, "float8e4m3fn zero point 0.5: 1 + 0.5 = 1.5", a([1], F32), a(1, F32),
                  a(0.5, ml_dtypes.float8_e4m3fn)))
def _float_zp_ignored() -> Steps:
    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        if zero_point is not None and not by_dtype(zero_point.dtype).is_integer:
            zero_point = None
        return SPEC.dequantize(x, scale, zero_point, out=out, granularity=granularity, steps=steps)
    quantize = _floats(lambda v, out, saturate: _standard(v, out, saturate), with_zero_point=False)
    return replace(quantize, dequantize=dequantize)
