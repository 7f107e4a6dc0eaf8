"""Mutants of DequantizeLinear: ``y = (x - x_zero_point) * x_scale`` in the output type's precision.

Each replaces the kernel's ``dequantize`` step (``Steps.dequantize(x, scale, zero_point, *, out, granularity,
steps)``), its rounding to the output precision (``to_precision``), or the attributes the planner that picks
the output type reads (``attributes``). The kernel: ``x - x_zero_point`` exactly, rounded once to the output
type; the scale rounded to the output type; the product in the output type's precision (catalogue
dq-precision: literal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial

import ml_dtypes
import numpy as np
from onnx import TensorProto

from ..ambiguities import reading_key
from ..opspecs import OpSpec
from ..reference import arith
from ..reference import granularity as gran
from ..reference import quantize as qmod
from ..reference.granularity import Granularity
from ..reference.ops import SPEC
from ..reference.steps import Steps
from ..types import ElementType, by_dtype
from .mutant import F32, I32, U8, W, a, mutant, wrap

FORMULA = "The dequantization formula is `y = (x - x_zero_point) * x_scale`."
OUTPUT = ("The output type is determined by the attribute `output_dtype`. If `output_dtype` is not supplied "
          "then the output type is the same as `x_scale`. The output type also determines the precision of "
          "the multiplication operation.")

#: fn(x, scale, zero point (or None), out) -> y, the arguments already broadcast against x
Formula = Callable[[np.ndarray, np.ndarray, np.ndarray | None, ElementType], np.ndarray]


def _dq(fn: Formula, *, only: Callable[[np.ndarray, np.ndarray | None], bool] = lambda x, zp: True
        ) -> Steps:
    """The kernel's steps computing DequantizeLinear as ``fn`` for inputs ``only`` selects (the kernel for the
    others)."""
    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        if not only(x, zero_point):
            return SPEC.dequantize(x, scale, zero_point, out=out, granularity=granularity, steps=steps)
        s = gran.broadcast(scale, x.shape, granularity)
        z = None if zero_point is None else gran.broadcast(zero_point, x.shape, granularity)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, s, z, out)).reshape(x.shape).astype(out.dtype)

    return replace(SPEC, dequantize=dequantize)


def product(d: np.ndarray, s: np.ndarray, out: ElementType) -> np.ndarray:
    """The kernel's product: both factors rounded to ``out``, multiplied in ``out``'s precision."""
    dp, sp = arith.to_float64(arith.to_precision(d, out)), arith.to_float64(arith.to_precision(s, out))
    return arith.cast_float(arith.round_to(dp * sp, out), out)


def _exact_difference(x: np.ndarray, z: np.ndarray | None) -> np.ndarray:
    d = arith.to_float64(x)
    return d if z is None else d - arith.to_float64(z)


def _integer(x: np.ndarray, zp: np.ndarray | None) -> bool:
    return by_dtype(x.dtype).is_integer


@mutant("dq-distributed",
        "computes x * x_scale - x_zero_point * x_scale (two products and a subtraction in the "
        "output precision, e.g. a precomputed bias)", FORMULA + " " + OUTPUT,
        witness=W("DequantizeLinear", 21,
                  "scale 0.1, x 1, zero point 3: (1 - 3) * 0.1 = -0.2 in float32, 0.1 - 0.3 = -0.20000002",
                  a([1], U8), a(0.1, F32), a(3, U8)))
def _distributed() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        a = arith.to_float64(product(arith.to_float64(x), s, out))
        if z is None:
            return arith.cast_float(a, out)
        b = arith.to_float64(product(arith.to_float64(z), s, out))
        return arith.cast_float(arith.round_to(a - b, out), out)
    return _dq(fn, only=lambda x, zp: zp is not None)


@mutant("dq-narrow-subtract", "subtracts the zero point in x's own integer type, so x - x_zero_point wraps "
        "(uint8: 3 - 5 = 254)", FORMULA,
        witness=W("DequantizeLinear", 21, "uint8 x 3 below zero point 5: -2, not 254", a([3], U8), a(1, F32),
                  a(5, U8)))
def _narrow() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        t = by_dtype(x.dtype)
        assert t.int_min is not None and t.int_max is not None
        return product(wrap(_exact_difference(x, z), t.int_min, t.int_max), s, out)
    return _dq(fn, only=_integer)


@mutant("dq-product-in-float32",
        "computes (x - x_zero_point) * x_scale in float32 (the exact difference rounded "
        "to float32, the scale as given) and rounds the float32 result to a float16 / bfloat16 output",
        OUTPUT, reading=reading_key("dq-precision", "float32"),
        witness=W("DequantizeLinear", 19,
                  "int32 x 2**24 + 2**16 + 1 to bfloat16: float32 rounds it to 2**24 + 2**16, "
                  "a bfloat16 tie (-> 2**24); rounded once it goes up to 2**24 + 2**17",
                  a([2**24 + 2**16 + 1], I32), a(1, ml_dtypes.bfloat16)))
def _product_f32() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        # the reading: x - x_zero_point exact, rounded
        d = arith.to_precision(_exact_difference(x, z), arith.F32)
        y32 = np.multiply(d, arith.to_precision(s, arith.F32))
        return arith.to_precision(y32, out)
    return _dq(fn)


@mutant("dq-32-bit-operands-in-float32",
        "converts a 32-bit x and its zero point to float32 each before subtracting "
        "(a float kernel's (float)x - (float)zp), so x - x_zero_point is rounded twice", FORMULA,
        witness=W("ExtendedDequantizeLinear", 1,
                  "uint32 4294967295 - 4294967040 is 255; in float32 4294967296 - "
                  "4294967040 = 256", a([4294967295], np.uint32), a(1, F32), a(4294967040, np.uint32),
                  domain="com.amd.quark"))
def _operands_f32() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        assert z is not None
        d = np.subtract(arith.to_precision(x, arith.F32), arith.to_precision(z, arith.F32))
        return product(arith.to_float64(d), s, out)
    return _dq(fn,
               only=lambda x, zp: zp is not None and by_dtype(x.dtype).is_integer
               and by_dtype(x.dtype).bits == 32)


@mutant("dq-unsigned-zero-point-as-signed",
        "reads an unsigned zero point as the signed type of the same width "
        "(uint8 200 -> -56)", FORMULA,
        witness=W("DequantizeLinear", 21, "uint8 zero point 200 (>= 128)", a([200], U8), a(1, F32),
                  a(200, U8)))
def _zp_signed() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        assert z is not None
        t = by_dtype(z.dtype)
        half = 2 ** (t.bits - 1)
        zz = _exact_difference(z, None)
        return product(_exact_difference(x, None) - np.where(zz >= half, zz - 2 * half, zz), s, out)
    return _dq(fn, only=lambda x, zp: zp is not None and by_dtype(zp.dtype).is_integer and
               (by_dtype(zp.dtype).int_min == 0) and by_dtype(zp.dtype).bits < 32)


@mutant("dq-sub-byte-no-sign-extension", "reads int4 / int2 codes without sign extension (int4 -1 -> 15)",
        FORMULA,
        witness=W("DequantizeLinear", 21, "int4 x -1 is -1, not 15", a([-1], ml_dtypes.int4), a(1, F32)))
def _no_sign_extension() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        t = by_dtype(x.dtype)
        xx = _exact_difference(x, None)
        xx = np.where(xx < 0, xx + 2**t.bits, xx)
        return product(xx if z is None else xx - _exact_difference(z, None), s, out)
    return _dq(fn, only=lambda x, zp: by_dtype(x.dtype).is_integer and by_dtype(x.dtype).bits < 8 and
               (by_dtype(x.dtype).int_min or 0) < 0)


@mutant("dq-output-dtype-ignored",
        "ignores output_dtype: the output type (and the product's precision) is the "
        "scale's type", OUTPUT,
        witness=W("DequantizeLinear", 23, "output_dtype float16 with a float32 scale", a([1], U8), a(1, F32),
                  output_dtype=TensorProto.FLOAT16))
def _output_dtype_ignored() -> Steps:
    def attributes(spec: OpSpec, attrs: Mapping[str, int]) -> Mapping[str, int]:
        if "Dequantize" not in spec.name:
            return attrs
        return {k: v for k, v in attrs.items() if k != "output_dtype"}
    return replace(SPEC, attributes=attributes)


@mutant("dq-scale-not-rounded", "multiplies by the scale as given (float32) and rounds the product once to a "
        "narrower output_dtype, instead of multiplying in the output type", OUTPUT,
        witness=W("DequantizeLinear", 23,
                  "uint16 x 2071 (float16 2072), float32 scale 0.5123098, output_dtype float16: "
                  "2072 * float16(scale) and 2071 * scale both round to 1061, 2072 * scale to 1062",
                  a([2071], np.uint16), a(0.5123098, F32), output_dtype=TensorProto.FLOAT16))
def _scale_not_rounded() -> Steps:
    def fn(x: np.ndarray, s: np.ndarray, z: np.ndarray | None, out: ElementType) -> np.ndarray:
        d = arith.to_float64(arith.to_precision(_exact_difference(x, z), out))
        return arith.cast_float(arith.round_to(d * arith.to_float64(s), out), out)
    return _dq(fn)


@mutant("dq-overflow-saturates",
        "clamps a product beyond the output type's range to +-max instead of letting it "
        "overflow to +-inf (a saturating float conversion)",
        OUTPUT + " (IEEE rounding of the product: overflow gives "
        "inf)",
        witness=W("DequantizeLinear", 21,
                  "int32 100000 times a float16 scale 1: beyond float16's 65504, so +inf",
                  a([100000, -100000], I32), a(1, np.float16)))
def _overflow_saturates() -> Steps:
    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        y = SPEC.dequantize(x, scale, zero_point, out=out, granularity=granularity, steps=steps)
        over = np.isinf(y.astype(np.float32)) & np.isfinite(arith.to_float64(x))
        if not over.any():
            return y
        assert out.max_finite is not None  # (a float type)
        big = np.copysign(out.max_finite, y.astype(np.float32))
        return np.where(over, big, y.astype(np.float32)).astype(y.dtype)
    return replace(SPEC, dequantize=dequantize)


@mutant("bfloat16-conversion-truncates",
        "converts float32 values to bfloat16 by dropping the low 16 bits (round "
        "toward zero) instead of rounding to nearest even, for the scale and the operands", OUTPUT,
        witness=W("DequantizeLinear", 23,
                  "float32 scale 0.6288445 to bfloat16 is 0.62890625 (nearest), not 0.625 "
                  "(truncated)", a([1], U8), a(0.6288445, F32), output_dtype=TensorProto.BFLOAT16))
def _bf16_truncates() -> Steps:
    original = SPEC.to_precision

    def to_precision(x: np.ndarray, p: ElementType) -> np.ndarray:
        if p is not arith.BF16 or x.dtype == p.dtype:
            return original(x, p)
        with np.errstate(all="ignore"):
            f = np.asarray(arith.to_float64(np.asarray(x)), np.float32)
        bits = f.view(np.uint32) & np.uint32(0xFFFF0000)
        return np.where(np.isnan(f), f, bits.view(np.float32)).astype(p.dtype)
    # every rounding to a float precision: the product's operands, and the division's (``divide`` takes it)
    return replace(SPEC, to_precision=to_precision, divide=partial(qmod.divide, to_precision=to_precision))
