"""Input values for concrete cases: literals, seeded random data and named recipes.

A recipe is a closed-vocabulary name in a case file (``recipe: ties``); it computes values from the case's
context (operator kind, element types, scale and zero point), so one line of YAML yields the right boundary,
tie or saturation values for every type combination. Recipes return None where they cannot apply (for example
infinities for an int32 input); such variants are dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from qdq_conformance.reference.arith import cast_float, round_to, to_float64
from qdq_conformance.types import ElementType, bit_patterns

from .dq_boundaries import critical_codes, scale_rounding_codes
from .recipe import Ctx, Recipe


def _finite_max(t: ElementType) -> float:
    if t.is_integer:
        assert t.int_max is not None
        return float(t.int_max)
    assert t.max_finite is not None
    return t.max_finite


def _y_bounds(ctx: Ctx) -> tuple[float, float]:
    if ctx.y.is_integer:
        assert ctx.y.int_min is not None and ctx.y.int_max is not None
        return float(ctx.y.int_min) - ctx.zp_value, float(ctx.y.int_max) - ctx.zp_value
    m = _finite_max(ctx.y)
    return -m - ctx.zp_value, m - ctx.zp_value


def _float_codes(t: ElementType) -> np.ndarray:
    v = to_float64(bit_patterns(t))
    return np.unique(v[np.isfinite(v)])


def saturation_finite(ctx: Ctx) -> Recipe | None:
    lo, hi = _y_bounds(ctx)
    s = ctx.scale_value
    if ctx.y.is_integer:
        q = [hi + 1, lo - 1, hi + 7.25, lo - 7.25, 2 * hi + 3, 2 * lo - 3, hi, lo]
    else:
        q = [2 * hi, 2 * lo, hi * 1.0625, lo * 1.0625, hi, lo, hi * 1.5, lo * 1.5]
    return Recipe([v * s for v in q])


def saturation_huge(ctx: Ctx) -> Recipe | None:
    """x / y_scale beyond 2**31: big values, or a tiny scale where the input type cannot hold them."""
    if ctx.x.name == "int32":
        return Recipe([2**31 - 1, -(2**31), 2**31 - 128, -(2**31) + 1],
                      scale=1.0 / 1024 if _float_scale(ctx) else None)
    if ctx.x.name == "float16":
        return Recipe([65504.0, -65504.0, 60000.0, -40000.0], scale=2.0**-14 if _float_scale(ctx) else None)
    return Recipe([3e9, -3e9, 2.0**31 + 2**8, -(2.0**31) - 2**8, 1e30, -1e30, 3e38, -3e38])


def _float_scale(ctx: Ctx) -> bool:
    return ctx.scale is not None and not ctx.scale.is_integer


def saturation_inf(ctx: Ctx) -> Recipe | None:
    if not ctx.x.has_inf:
        return None
    return Recipe([np.inf, -np.inf, 1.0 * ctx.scale_value, -np.inf, np.inf])


def ties(ctx: Ctx) -> Recipe | None:
    """Exact halfway points: k + 0.5 across the target range (integers), or midpoints of adjacent codes."""
    s = ctx.scale_value
    if ctx.y.is_integer:
        lo, hi = _y_bounds(ctx)
        ks = np.unique(np.linspace(lo - 2, hi + 1, num=min(64, int(hi - lo) + 4)).round())
        return Recipe([(k + 0.5) * s for k in ks])
    codes = _float_codes(ctx.y)
    mids = (codes[:-1] + codes[1:]) / 2
    if len(mids) > 128:
        mids = mids[np.linspace(0, len(mids) - 1, 128).astype(int)]
    return Recipe([m * s for m in mids])


def ties_near_bounds(ctx: Ctx) -> Recipe | None:
    s = ctx.scale_value
    lo, hi = _y_bounds(ctx)
    if ctx.y.is_integer:
        return Recipe([(k + 0.5) * s for k in (lo - 1, lo, lo + 1, hi - 2, hi - 1, hi)])
    codes = _float_codes(ctx.y)
    top, below = codes[-1], codes[-2]
    step = top - below
    return Recipe([v * s for v in (top + step / 2, -(top + step / 2), (top + below) / 2, -(top + below) / 2,
                                   top + step / 4, top + 3 * step / 4)])


def signed_zero(ctx: Ctx) -> Recipe | None:
    if ctx.x.is_integer:
        return None
    tiny = float(2.0 ** (ctx.x.min_exp - (ctx.x.mantissa_bits or 0))) if ctx.x.min_exp is not None else 0.0
    return Recipe([-0.0, 0.0, -tiny, tiny, -0.0])


def nan(ctx: Ctx) -> Recipe | None:
    if not ctx.x.has_nan:
        return None
    return Recipe([np.nan, 1.0 * ctx.scale_value, -np.nan, np.nan])


def in_range(ctx: Ctx) -> Recipe | None:
    lo, hi = _y_bounds(ctx)
    if not ctx.y.is_integer:
        lo, hi = lo / 2, hi / 2
    return Recipe([v * ctx.scale_value for v in np.linspace(lo, hi, 17)])


def all_codes(ctx: Ctx) -> Recipe | None:
    if ctx.x.bits > 16:
        return int32_extremes(ctx)
    return Recipe(list(to_float64(bit_patterns(ctx.x))))


def codes_boundary(ctx: Ctx) -> Recipe | None:
    t = ctx.x
    if t.is_integer:
        assert t.int_min is not None and t.int_max is not None
        vals = sorted({t.int_min, t.int_min + 1, -1 if t.int_min < 0 else 0, 0, 1, t.int_max - 1, t.int_max})
        return Recipe([float(v) for v in vals])
    m = _finite_max(t)
    tiny = (2.0 ** (t.min_exp - t.mantissa_bits) if t.min_exp is not None and t.mantissa_bits is not None
            else 0.0)
    floats = [0.0, -0.0, tiny, -tiny, m, -m, 1.0, -1.0]
    if t.has_nan:
        floats.append(np.nan)
    if t.has_inf:
        floats += [np.inf, -np.inf]
    return Recipe(floats)


def int32_extremes(ctx: Ctx) -> Recipe | None:
    return Recipe([-(2.0**31), -(2.0**31) + 1, -1.0, 0.0, 1.0, 2.0**31 - 2, 2.0**31 - 1])


def boundary_dq_codes(ctx: Ctx) -> Recipe | None:
    """DequantizeLinear codes critical for the output type (see generators/dq_boundaries.py)."""
    return critical_codes(ctx)


def boundary_dq_scale_rounding(ctx: Ctx) -> Recipe | None:
    """DequantizeLinear codes where rounding a wider scale to the output type matters (dq_boundaries.py)."""
    return scale_rounding_codes(ctx)


def _constant(values: list[float]) -> Callable[[Ctx], Recipe | None]:
    return lambda ctx: Recipe(values)


X_RECIPES: dict[str, Callable[[Ctx], Recipe | None]] = {
    "saturation-finite": saturation_finite,
    "saturation-huge": saturation_huge,
    "saturation-inf": saturation_inf,
    "ties": ties,
    "ties-near-bounds": ties_near_bounds,
    "signed-zero": signed_zero,
    "nan": nan,
    "in-range": in_range,
    "all-codes": all_codes,
    "codes-boundary": codes_boundary,
    "int32-extremes": int32_extremes,
    "positive": _constant([0.5, 1.0, 2.25, 3.0, 100.0, 0.001]),
    "negative": _constant([-0.5, -1.0, -2.25, -3.0, -100.0, -0.001]),
    "zero": _constant([0.0, 0.0, 0.0, 0.0]),
    "huge-range": _constant([-3e38, 3e38, 1.0, -1.0, 0.0]),
    "inf": _constant([1.0, np.inf, -2.0]),
    "float-specials": _constant([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0]),
    "overflow-float": _constant([7e4, -7e4, 1e10, -1e10, 65504.0, 1.0]),
    "boundary-dq-codes": boundary_dq_codes,
    "boundary-dq-scale-rounding": boundary_dq_scale_rounding,
}

#: Zero-point recipes (``nonzero``: a non-zero zero point for float targets too, which the formula keeps).
ZP_RECIPES = ("min", "max", "mid", "odd", "even", "zero", "nonzero")


def zero_point_value(recipe: str, t: ElementType) -> float | None:
    """A scalar zero point of type ``t`` named by ``recipe`` (one of :data:`ZP_RECIPES`)."""
    if not t.is_integer:
        return 0.0 if recipe in ("zero", "mid", "even") else 1.5 if recipe == "nonzero" else None
    assert t.int_min is not None and t.int_max is not None
    mid = (t.int_min + t.int_max + 1) // 2 if t.int_min == 0 else -1 if t.bits > 2 else 0
    table = {"min": t.int_min, "max": t.int_max, "mid": mid, "zero": 0,
             "odd": mid if mid % 2 else mid + 1, "even": mid if mid % 2 == 0 else mid + 1,
             "nonzero": 3 if t.int_max >= 3 else t.int_max}
    value = table[recipe]
    return float(min(max(value, t.int_min), t.int_max))


def literal(v: float) -> str | int | float:
    """A case-file literal for one float64 value (the inverse of :func:`parse_literal`): whole numbers as
    integers, specials as their names, other values as the shortest text that reads back exactly."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0 and math.copysign(1.0, v) < 0:
        return "-0"
    if v == int(v) and abs(v) < 2**53:
        return int(v)
    return float(v)


def literals(values: Iterable[float]) -> list[str | int | float]:
    return [literal(float(v)) for v in values]


def parse_literal(value: object) -> np.ndarray:
    """A float64 array from case-file literals (numbers, or the strings nan, -nan, inf, -inf, -0)."""
    special = {"nan": np.nan, "-nan": -np.nan, "inf": np.inf, "+inf": np.inf, "-inf": -np.inf, "-0": -0.0,
               "-0.0": -0.0}

    def conv(v: object) -> object:
        if isinstance(v, list):
            return [conv(i) for i in v]
        if isinstance(v, str):
            key = v.strip().lower()
            if key in special:
                return special[key]
            try:
                return float(key)  # YAML 1.1 reads 3.0e4 (no exponent sign) as a string
            except ValueError:
                raise ValueError(f"{v!r} is not a number (use a number, nan, -nan, inf, -inf or "
                                 "-0)") from None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{v!r} is not a number")
        return v

    return np.array(conv(value), dtype=np.float64)


def to_type(values: np.ndarray, t: ElementType, coerce: bool = False) -> np.ndarray:
    """float64 values as an array of type ``t``: integers must be in range and whole (``coerce``: rounded and
    clipped, for recipes); floats round to nearest even (the case's data is the converted value, which the
    manifest records)."""
    if t.is_integer and coerce:
        assert t.int_min is not None and t.int_max is not None
        values = np.clip(np.rint(values[np.isfinite(values)]), t.int_min, t.int_max)
    if t.is_integer:
        assert t.int_min is not None and t.int_max is not None
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            raise ValueError(f"{t.name} values must be whole numbers, got {values.tolist()[:8]}")
        if np.any(values < t.int_min) or np.any(values > t.int_max):
            raise ValueError(f"{t.name} values must lie in [{t.int_min}, {t.int_max}]")
        return values.astype(np.int64).astype(t.dtype)
    rounded = round_to(values, t)
    if not t.has_inf:
        rounded = np.where(np.isinf(rounded), np.copysign(t.max_finite or 0.0, rounded), rounded)
    if not t.has_nan and np.isnan(rounded).any():
        raise ValueError(f"{t.name} has no NaN")
    if t.name == "float8e8m0":
        if np.any(values <= 0):
            raise ValueError("float8e8m0 values must be positive powers of two")
        return np.exp2(np.round(np.log2(values))).astype(np.float32).astype(t.dtype)
    return cast_float(rounded, t)


def random_values(seed: int, n: int, ctx: Ctx, span: float = 1.2, low: float | None = None,
                  high: float | None = None, role: str = "x") -> np.ndarray:
    """Seeded values: for a quantized x, uniform codes; otherwise uniform over [low, high] or the target
    range."""
    rng = np.random.default_rng(seed)
    t = ctx.x if role == "x" else ctx.scale
    assert t is not None
    if role == "x" and ctx.kind == "DQ":
        codes = bit_patterns(t) if t.bits <= 16 else None
        if codes is not None:
            return codes[rng.integers(0, len(codes), n)]
        return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    if low is None or high is None:
        lo, hi = _y_bounds(ctx) if role == "x" else (0.25, 2.0)
        scale = ctx.scale_value if role == "x" else 1.0
        low, high = sorted((lo * span * scale, hi * span * scale))  # a negative scale mirrors the range
    v = rng.uniform(low, high, n)
    if t.is_integer:
        v = np.round(v)
        assert t.int_min is not None and t.int_max is not None
        v = np.clip(v, t.int_min, t.int_max)
    return to_type(v, t)


def default_scale(t: ElementType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A case's scale when its file gives none: 0.5 (2 for an integer scale), seeded vectors when per-axis."""
    n = int(np.prod(shape)) if shape else 1
    if not shape:
        v = np.array([2.0 if t.is_integer else 0.5])
    elif t.is_integer:
        v = np.random.default_rng(seed).integers(1, 5, n).astype(np.float64)
    else:
        v = np.exp2(np.random.default_rng(seed).integers(-3, 2, n)) * (1 if t.name == "float8e8m0" else 0.75)
    return to_type(np.resize(v, n), t).reshape(shape)


def default_zp(t: ElementType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A case's zero point when its file gives none: the middle code, seeded codes when per-axis, zero for
    float and 32-bit types."""
    n = int(np.prod(shape)) if shape else 1
    if not t.is_integer:
        return to_type(np.zeros(n), t).reshape(shape)
    if not shape:
        v = 0.0 if t.bits > 16 else zero_point_value("mid", t)
        return to_type(np.array([v]), t).reshape(shape)
    assert t.int_min is not None and t.int_max is not None
    lo, hi = (0, 0) if t.bits > 16 else (t.int_min, t.int_max)
    return np.random.default_rng(seed).integers(lo, hi + 1, n).astype(np.int64).astype(t.dtype).reshape(shape)
