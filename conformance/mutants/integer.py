"""Mutants of QuantizeLinear's integer path: rounding, the zero point, saturation.

Each replaces the kernel's ``to_integer`` step (``Steps.to_integer(dest, q, zp, lo, hi, out)``, the step after
the division: round half to even, add the zero point, clip in float to the target range, cast) with a copy in
which one step is wrong. The
copy works in float64 on the quotient ``q`` and the zero point ``zp`` (already in the working float type), and
keeps the kernel's reading of a NaN quotient (catalogue: nan-to-integer, the zero point) unless that is the
step being mutated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import ml_dtypes
import numpy as np

from ..reference import arith
from ..reference import granularity as gran
from ..reference.granularity import Granularity
from ..reference.ops import SPEC
from ..reference.steps import Steps
from ..types import ElementType
from .mutant import F16, F32, I8, I16, U8, W, a, mutant, store_int, wrap

Rounding = Callable[[np.ndarray], np.ndarray]

TIES = ("For `(x / y_scale)`, it rounds to the nearest even. Refer to https://en.wikipedia.org/wiki/Rounding "
        "for details.")
FORMULA = "The quantization formula is `y = saturate((x / y_scale) + y_zero_point)`."
SATURATION = ("Saturation is done according to: - uint16: [0, 65535] - int16: [-32768, 32767] - uint8: [0, "
              "255] - int8: [-128, 127] - uint4: [0, 15] - int4: [-8, 7] - uint2: [0, 3] - int2: [-2, 1]")


def _ints(fn: Callable[[np.ndarray, np.ndarray, ElementType], np.ndarray], steps: Steps = SPEC) -> Steps:
    """``steps`` with the integer step replaced by ``fn(q, z, out) -> final integer values (float64)``."""
    def to_integer(dest: np.ndarray, q: np.ndarray, zp: np.ndarray | None, lo: object, hi: object,
                   out: ElementType) -> None:
        q64 = np.asarray(q, np.float64)
        z64 = np.zeros((), np.float64) if zp is None else np.asarray(zp, np.float64)
        with np.errstate(all="ignore"):
            v = fn(q64, z64, out)
        dest[...] = store_int(np.broadcast_to(v, dest.shape), dest.dtype)

    return replace(steps, to_integer=to_integer)


def _saturated(q: np.ndarray, z: np.ndarray, out: ElementType, rnd: Rounding = np.rint) -> np.ndarray:
    """The kernel's step, written plainly: round, NaN -> 0 (so the output is the zero point), add, clip."""
    r = rnd(q)
    r = np.where(np.isnan(r), 0.0, r)
    return np.clip(r + z, out.int_min, out.int_max)


def _half_away(v: np.ndarray) -> np.ndarray:
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


@mutant("round-half-away", "rounds x / y_scale half away from zero (C's round()) instead of half to even",
        TIES,
        witness=W("QuantizeLinear", 21, "a tie: 2.5 / 1 rounds to 2 (even), not 3", a([2.5], F32), a(1, F32),
                  a(0, U8)))
def _round_half_away() -> Steps:
    return _ints(lambda q, z, out: _saturated(q, z, out, _half_away))


@mutant("round-half-up", "rounds x / y_scale as floor(q + 0.5) (ties toward +inf)", TIES,
        witness=W("QuantizeLinear", 21, "a negative tie: -1.5 / 1 rounds to -2, not -1", a([-1.5], F32),
                  a(1, F32), a(0, I8)))
def _round_half_up() -> Steps:
    return _ints(lambda q, z, out: _saturated(q, z, out, lambda v: np.floor(v + 0.5)))


@mutant("truncate", "truncates x / y_scale toward zero (a plain float-to-int cast) instead of rounding", TIES,
        witness=W("QuantizeLinear", 21, "a quotient above k + 0.5: 1.7 / 1 rounds to 2, not 1", a([1.7], F32),
                  a(1, F32), a(0, U8)))
def _truncate() -> Steps:
    return _ints(lambda q, z, out: _saturated(q, z, out, np.trunc))


@mutant("zp-before-round", "adds the zero point before rounding: round(x / y_scale + y_zero_point)",
        FORMULA + " " + TIES,
        witness=W("QuantizeLinear", 21,
                  "a tie with an odd zero point: round(0.5) + 1 = 1, not round(1.5) = 2", a([0.5], F32),
                  a(1, F32), a(1, U8)))
def _zp_before_round() -> Steps:
    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        v = np.rint(q + z)
        v = np.where(np.isnan(q), z, v)
        return np.clip(v, out.int_min, out.int_max)
    return _ints(fn)


@mutant("int-cast-before-clip",
        "casts the rounded quotient to int32 before clipping, so values beyond 2**31 and "
        "+-inf become INT32_MIN (x86's 'integer indefinite') and saturate to the wrong end",
        FORMULA + " " + SATURATION,
        witness=W("QuantizeLinear", 21, "+inf (and |x / y_scale| >= 2**31) saturates to 255, not 0",
                  a([np.inf, 3e9], F32), a(1, F32), a(0, U8)))
def _int_cast_before_clip() -> Steps:
    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        r = np.rint(q)
        r = np.where(np.isnan(r), 0.0, r)
        r = np.where((r >= 2.0**31) | (r < -(2.0**31)), -(2.0**31), r)  # cvttsd2si out of range
        return np.clip(r + z, out.int_min, out.int_max)
    return _ints(fn)


@mutant("clip-8bit-for-subbyte",
        "clips 4-bit and 2-bit targets to the 8-bit range of the same signedness, then "
        "stores the low bits (so out-of-range values wrap)", SATURATION,
        witness=W("QuantizeLinear", 21, "100 saturates to int4 7, not 100 mod 16 = 4", a([100], F32),
                  a(1, F32), a(0, ml_dtypes.int4)))
def _clip_8bit() -> Steps:
    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        if out.bits >= 8:
            return _saturated(q, z, out)
        assert out.int_min is not None and out.int_max is not None
        lo, hi = (-128, 127) if out.int_min < 0 else (0, 255)
        r = np.rint(q)
        r = np.clip(np.where(np.isnan(r), 0.0, r) + z, lo, hi)
        return wrap(r, out.int_min, out.int_max)
    return _ints(fn)


@mutant("symmetric-range", "saturates signed targets to the symmetric range [-max, max] (int8: [-127, 127])",
        SATURATION,
        witness=W("QuantizeLinear", 21, "-200 saturates to int8 -128, not -127", a([-200], F32), a(1, F32),
                  a(0, I8)))
def _symmetric() -> Steps:
    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        v = _saturated(q, z, out)
        assert out.int_min is not None and out.int_max is not None
        return np.maximum(v, -out.int_max) if out.int_min < 0 else v
    return _ints(fn)


@mutant("clip-before-zp",
        "saturates round(x / y_scale) to the target range, then adds the zero point (and the "
        "sum wraps)", FORMULA,
        witness=W("QuantizeLinear", 21, "300 with zero point 128 saturates to 255, not (255 + 128) wrapped",
                  a([300], F32), a(1, F32), a(128, U8)))
def _clip_before_zp() -> Steps:
    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        assert out.int_min is not None and out.int_max is not None
        r = np.rint(q)
        r = np.clip(np.where(np.isnan(r), 0.0, r), out.int_min, out.int_max)
        return wrap(r + z, out.int_min, out.int_max)
    return _ints(fn)


@mutant("zp-ignored", "ignores y_zero_point (a symmetric-only kernel)", FORMULA,
        witness=W("QuantizeLinear", 21, "0 with zero point 5 is 5", a([0], F32), a(1, F32), a(5, U8)))
def _zp_ignored() -> Steps:
    return _ints(lambda q, z, out: _saturated(q, np.zeros((), np.float64), out))


@mutant("scale-one-fast-path",
        "when every scale is 1, converts x with a plain cast (truncation, no saturation: "
        "values wrap) and adds the zero point, skipping the division, rounding and clipping",
        FORMULA + " " + TIES,
        witness=W("QuantizeLinear", 21, "scale exactly 1: 2.7 rounds to 3, 300 saturates to 255",
                  a([2.7, 300], F32), a(1, F32), a(0, U8)))
def _scale_one() -> Steps:
    def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray:
        if not (scale.size and np.all(arith.to_float64(scale) == 1.0)):
            return SPEC.quantize(x, scale, zero_point, out=out, granularity=granularity, precision=precision,
                                 saturate=saturate, steps=steps)
        with np.errstate(all="ignore"):
            v = arith.to_float64(x)
            if zero_point is not None:
                v = v + arith.to_float64(gran.broadcast(zero_point, x.shape, granularity))
            if out.is_integer:
                assert out.int_min is not None and out.int_max is not None
                return store_int(wrap(np.trunc(v), out.int_min, out.int_max), out.dtype)
            return v.astype(np.float32).astype(out.dtype)  # ml_dtypes: rounds, never saturates
    return replace(SPEC, quantize=quantize)


@mutant("zp-add-in-narrow-precision",
        "with a float16 / bfloat16 division precision, adds the zero point and clips "
        "in that precision too: zero points and bounds it cannot hold are rounded (int16 32767 -> 32768, "
        "which then wraps to -32768)", FORMULA + " " + SATURATION,
        witness=W("QuantizeLinear", 23,
                  "float16 scale, int16 target: zero point 2049 (float16 2048), and 40000 "
                  "saturating to 32767 (float16 32768)", a([30000, 40000], F16), a(1, F16), a(2049, I16)))
def _zp_in_narrow() -> Steps:
    held: list[ElementType] = []  # the division precision of the QuantizeLinear running

    def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray:
        held.append(precision)
        try:
            return SPEC.quantize(x, scale, zero_point, out=out, granularity=granularity, precision=precision,
                                 saturate=saturate, steps=steps)
        finally:
            held.pop()

    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        p = held[-1] if held else arith.F32
        if p not in (arith.F16, arith.BF16):
            return _saturated(q, z, out)
        assert out.int_min is not None and out.int_max is not None

        def narrow(v: object) -> np.ndarray:
            return arith.to_float64(arith.to_precision(np.asarray(v, np.float64), p))
        r = np.rint(q)
        v = narrow(np.where(np.isnan(r), 0.0, r) + narrow(z))
        v = np.clip(v, narrow(out.int_min), narrow(out.int_max))
        return wrap(v, out.int_min, out.int_max)
    return _ints(fn, replace(SPEC, quantize=quantize))


@mutant("neg-inf-to-upper-bound",
        "saturates a -inf quotient to the upper bound (an unsigned compare or an abs() "
        "in the saturation of infinities)", SATURATION,
        witness=W("QuantizeLinear", 21, "-inf saturates to the lower bound 0", a([-np.inf], F32), a(1, F32),
                  a(0, U8)))
def _neg_inf_up() -> Steps:
    return _ints(lambda q, z, out: np.where(q == -np.inf, float(out.int_max or 0), _saturated(q, z, out)))


@mutant("neg-overflow-to-upper-bound",
        "saturates finite values below the range to the upper bound (an unsigned "
        "compare in the saturation)", SATURATION,
        witness=W("QuantizeLinear", 21, "-1000 saturates to the lower bound -128", a([-1000], F32), a(1, F32),
                  a(0, I8)))
def _neg_overflow_up() -> Steps:
    def fn(q: np.ndarray, z: np.ndarray, out: ElementType) -> np.ndarray:
        below = np.isfinite(q) & (np.rint(q) + z < (out.int_min or 0))
        return np.where(below, float(out.int_max or 0), _saturated(q, z, out))
    return _ints(fn)
