"""Mutants of QuantizeLinear's division ``x / y_scale`` and of the choice of its precision.

Each replaces the kernel's ``divide`` step (``Steps.divide(x, scale, precision)``), or the attributes the
planner that picks the precision reads (``Steps.attributes``). The kernel:
float32 precision divides the float32 operands in float32; float16 / bfloat16 round both operands to that type
and round the exact quotient once to it; int32 precision divides the exact values (catalogue:
int32-precision).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
from onnx import TensorProto

from ..opspecs import OpSpec
from ..reference import arith
from ..reference import quantize as qmod
from ..reference.ops import SPEC
from ..reference.steps import Divide, Steps
from ..types import ElementType
from .mutant import F16, F32, I16, U8, W, a, mutant

PRECISION = ("The type of `y_scale` determines the precision of the division operation between `x` and "
             "`y_scale`, unless the `precision` attribute is specified.")
DIVISION = "The quantization formula is `y = saturate((x / y_scale) + y_zero_point)`."


def _divide(fn: Divide) -> Steps:
    return replace(SPEC, divide=fn)


def _without(attribute: str) -> Steps:
    """The kernel's steps with QuantizeLinear's planner reading the node as if it had no ``attribute``."""
    def attributes(spec: OpSpec, attrs: Mapping[str, int]) -> Mapping[str, int]:
        if "Dequantize" in spec.name:
            return attrs
        return {k: v for k, v in attrs.items() if k != attribute}
    return replace(SPEC, attributes=attributes)


def _in(p: ElementType, a: np.ndarray) -> np.ndarray:
    """``a`` rounded once to precision ``p``, as exact float64 values."""
    return arith.to_float64(arith.to_precision(np.asarray(a), p))


@mutant("reciprocal-multiply",
        "computes x * (1 / y_scale), the reciprocal rounded to the precision, instead of "
        "dividing", DIVISION,
        witness=W("QuantizeLinear", 21, "scale 0.1 (not a power of two): 3.2500002 / 0.1 is 32.5 in float32 "
                                        "(-> 32), x * (1/0.1) gives 32.500004 (-> 33)",
                  np.nextafter(a([3.25], F32), F32(4)), a(0.1, F32), a(0, U8)))
def _reciprocal() -> Steps:
    def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType) -> np.ndarray:
        with np.errstate(all="ignore"):
            if precision is arith.F32:
                s = arith.to_precision(scale, precision)
                return np.multiply(arith.to_precision(x, precision), np.float32(1) / s)
            if precision is qmod.INT32:
                return arith.to_float64(x) * (1.0 / arith.to_float64(scale))
            r = _in(precision, 1.0 / _in(precision, scale))
            return _in(precision, _in(precision, x) * r)
    return _divide(divide)


@mutant("divide-float32-always", "divides in float32 whatever the precision (float16 / bfloat16 scales, the "
        "precision attribute, int32)", PRECISION,
        witness=W("QuantizeLinear", 23, "float16 x and scale: 1538 / 3 = 512.67 is 512.5 in float16 (-> "
                                        "512), 512.67 in float32 (-> 513)", a([1538], F16), a(3, F16),
                  a(0, I16)))
def _float32_always() -> Steps:
    def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.divide(arith.to_precision(x, arith.F32), arith.to_precision(scale, arith.F32))
    return _divide(divide)


@mutant("divide-float64-always",
        "divides the exact operand values in float64 whatever the precision, rounding "
        "neither the operands nor the quotient to it", PRECISION,
        witness=W("QuantizeLinear", 23, "float16 x and scale: 1538 / 3 = 512.67 is 512.5 in float16 (-> "
                                        "512), exactly 512.67 in float64 (-> 513)", a([1538], F16), a(3, F16),
                  a(0, I16)))
def _float64_always() -> Steps:
    def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType) -> np.ndarray:
        with np.errstate(all="ignore"):
            return arith.to_float64(x) / arith.to_float64(scale)
    return _divide(divide)


@mutant("float32-division-in-float64",
        "a float32 division carried out in double precision (excess precision, "
        "FLT_EVAL_METHOD 2): the quotient of the float32 operands is not rounded to float32 before rounding "
        "to the integer", PRECISION,
        witness=W("QuantizeLinear", 21,
                  "float32: 0.35 / 0.1 rounds to 3.5 in float32 (-> 4) but is 3.4999999 exactly (-> 3)",
                  a([0.35], F32), a(0.1, F32), a(0, U8)))
def _excess_precision() -> Steps:
    original = SPEC.divide

    def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType) -> np.ndarray:
        if precision is not arith.F32:
            return original(x, scale, precision)
        with np.errstate(all="ignore"):
            return _in(precision, x) / _in(precision, scale)
    return _divide(divide)


@mutant("narrow-division-via-float32", "a float16 / bfloat16 division computed in float32 and the quotient "
        "rounded to float16 / bfloat16", PRECISION,
        equivalent="Double rounding is innocuous for division when the wider format has at least 2p+2 bits "
                   "of "
        "significand (Figueroa, 'When is double rounding innocuous?', 1995): float32 has 24 >= 2*11+2 "
        "(float16) and >= 2*8+2 (bfloat16), so the float32 quotient of two float16 (bfloat16) operands "
        "rounds to the same value as the exact quotient. float32 cannot overflow or underflow on two float16 "
        "operands (|q| within [2**-40, 2**40]); for bfloat16 an overflow is an overflow in both, and a "
        "quotient below bfloat16's normal range (2**-126) only ever meets rounding to an integer or to a "
        "float8 / float4 / float6 code, where it is 0 with its sign either way.")
def _narrow_via_f32() -> Steps:
    original = SPEC.divide

    def divide(x: np.ndarray, scale: np.ndarray, precision: ElementType) -> np.ndarray:
        if precision not in (arith.F16, arith.BF16):
            return original(x, scale, precision)
        with np.errstate(all="ignore"):
            xp = arith.to_precision(arith.to_precision(x, precision), arith.F32)
            sp = arith.to_precision(arith.to_precision(scale, precision), arith.F32)
            return arith.to_float64(arith.to_precision(np.divide(xp, sp), precision))
    return _divide(divide)


@mutant("precision-ignored", "ignores the precision attribute: divides in the scale's type", PRECISION,
        witness=W("QuantizeLinear", 25,
                  "precision=float16 with float32 operands: 2.5004 rounds to 2.5 in float16 (-> 2), not 3",
                  a([2.5004], F32), a(1, F32), a(0, U8), precision=TensorProto.FLOAT16))
def _precision_ignored() -> Steps:
    return _without("precision")


@mutant("output-dtype-ignored",
        "QuantizeLinear ignores output_dtype: without a zero point the output is uint8",
        "output_dtype: (Optional) The output data type. If not supplied, the output data type is inferred "
        "from `y_zero_point` data type (`T3`). If neither `output_dtype` nor `y_zero_point` are supplied, "
        "output data type is uint8.",
        witness=W("QuantizeLinear", 21, "output_dtype int8 without a zero point", a([-1], F32), a(1, F32),
                  output_dtype=TensorProto.INT8))
def _output_dtype_ignored() -> Steps:
    return _without("output_dtype")
