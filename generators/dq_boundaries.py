"""DequantizeLinear boundary codes: the x values whose ``(x - x_zero_point) * x_scale`` is critical for the
output type, found by evaluating the exact product over x's codes (a sample of them for 32-bit x)."""

from __future__ import annotations

import numpy as np

from qdq_conformance.reference.arith import F32, round_to, to_float64
from qdq_conformance.types import ElementType, bit_patterns

from .recipe import Ctx, Recipe

#: At most this many codes of each kind (ties, double rounding, overflow) per case.
PER_KIND = 6


def _candidates(x: ElementType, zp: float) -> np.ndarray:
    if x.bits <= 16:
        return np.unique(to_float64(bit_patterns(x)))
    assert x.int_min is not None and x.int_max is not None
    around = [2.0**24, 2.0**25, 2.0**31 - 1, 2.0**30, 3 * 2.0**22]
    near = [c + d for c in around for d in range(-4, 5)] + [-c + d for c in around for d in range(-4, 5)]
    near += [zp + d for d in range(-4, 5)]
    v = np.array(near, np.float64)
    return np.unique(v[(v >= x.int_min) & (v <= x.int_max)])


def _output_floats(y: ElementType, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the exact product ``p`` is a tie of ``y``, and where rounding through float32 first changes
    it."""
    r = round_to(p, y)
    with np.errstate(all="ignore"):
        up = round_to(p + np.abs(p) * 2.0**-60 + 2.0**-1074, y)  # nudged: a tie rounds up instead
        tie = (r != up) & (np.abs(r - p) == np.abs(up - p))
        via32 = round_to(round_to(p, F32), y) != r if y is not F32 else np.zeros(p.shape, bool)
    return tie & np.isfinite(r), via32 & np.isfinite(r)


def _pick(codes: np.ndarray, mask: np.ndarray) -> list[float]:
    hit = codes[mask]
    if len(hit) <= PER_KIND:
        return hit.tolist()
    return hit[np.linspace(0, len(hit) - 1, PER_KIND).astype(int)].tolist()


def critical_codes(ctx: Ctx) -> Recipe | None:
    """Codes of x: its extremes (with the zero point, ``x - x_zero_point`` leaves x's own range), zero point
    and neighbours, products that tie in the output type, that round otherwise through float32, that round
    otherwise when a scale wider than the output is first rounded to the output type, and the codes either
    side of the output's overflow (and of its largest finite value)."""
    x, y = ctx.x, ctx.y
    if ctx.kind != "DQ" or not y.is_float:
        return None
    if not x.is_integer:  # float8 / float4 / float6: every code, NaN and infinities included
        return Recipe(to_float64(bit_patterns(x)).tolist())
    codes = _candidates(x, ctx.zp_value)
    assert x.int_min is not None and x.int_max is not None and y.max_finite is not None
    zp, s = ctx.zp_value, ctx.scale_value
    with np.errstate(all="ignore"):
        p = (codes - zp) * s
    picked = [x.int_min, x.int_min + 1, x.int_max - 1, x.int_max, zp, zp - 1, zp + 1, 0]
    tie, via32 = _output_floats(y, p)
    picked += _pick(codes, tie) + _pick(codes, via32)
    if ctx.scale is not None and ctx.scale.bits > y.bits:  # output_dtype narrower than the scale
        assert y.mantissa_bits is not None
        s_y = float(round_to(np.array([s]), y)[0])
        exact = np.abs(codes - zp) <= 2.0 ** (y.mantissa_bits + 1)  # x - zp exact in the output type
        with np.errstate(all="ignore"):
            # the scale rounded to y first, or not
            differs = round_to((codes - zp) * s_y, y) != round_to(p, y)
        picked += _pick(codes, differs & exact)
    over = np.abs(round_to(p, y)) > y.max_finite
    if over.any() and (~over).any():
        below = codes[~over]
        beyond = codes[over]
        picked += [float(below[np.argmax(np.abs(p[~over]))]), float(beyond[np.argmin(np.abs(p[over]))])]
    v = np.array(picked, np.float64)
    v = v[(v >= x.int_min) & (v <= x.int_max)]
    return Recipe(list(dict.fromkeys(v.tolist())))


def scale_rounding_codes(ctx: Ctx) -> Recipe | None:
    """Codes where converting a wider scale to the output type first matters and nothing else does: float32
    scale, float16 / bfloat16 output; ``x - x_zero_point`` not exact in the output type, yet the catalogued
    dq-precision readings (literal, widened, float32) agree, while a product with the scale as given (after
    rounding ``x - x_zero_point``) rounds otherwise ("The output type also determines the precision of the
    multiplication operation")."""
    x, y = ctx.x, ctx.y
    if (ctx.kind != "DQ" or not x.is_integer or not y.is_float or ctx.scale is None
        or ctx.scale.bits <= y.bits):
        return None
    codes = _candidates(x, ctx.zp_value)
    d = codes - ctx.zp_value
    s = ctx.scale_value
    with np.errstate(all="ignore"):
        d_y = round_to(d, y)
        literal = round_to(d_y * float(round_to(np.array([s]), y)[0]), y)
        widened = round_to(d * s, y)
        f32 = round_to(round_to(d * s, F32), y)
        shortcut = round_to(d_y * s, y)
    keep = (d_y != d) & (literal == widened) & (widened == f32) & (shortcut != literal) & np.isfinite(literal)
    if not keep.any():
        return None
    return Recipe(_pick(codes, keep) + [float(ctx.zp_value)])
