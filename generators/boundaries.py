"""Inputs derived from the types' own structure: the critical points of the target type, and values on and
around them (one ULP of the division precision either side), placed through the case's real scales.

A boundary recipe does not give x directly: it gives *targets* in the target type's space (``r = x / y_scale +
y_zero_point``, before rounding), an offset in ULPs of the division precision, or a literal x (inf, NaN, the
largest finite x, signed zeros). :func:`realize` turns them into x for every element with that element's own
scale and zero point (per-axis and blocked too) and picks, among x's representable neighbours, the x whose
quotient (divided as the oracle divides) lands closest to the target. Where x's type cannot land on the
target, the label says where the value really is: :mod:`generators.labels` recomputes every label from the
final inputs.

Scale recipes (exactly one, powers of two, non-powers of two, tiny, huge, subnormal) and the ``nonzero`` zero
point (a non-zero zero point for float8 / float4 / float6 targets too) live here as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from qdq_conformance import opspecs
from qdq_conformance.reference.arith import round_to, to_float64
from qdq_conformance.reference.granularity import broadcast
from qdq_conformance.reference.ops import plan_quantize_linear
from qdq_conformance.reference.quantize import divide
from qdq_conformance.types import TYPES, ElementType, bit_patterns

from .recipe import Ctx
from .values import to_type

F64_INT32 = TYPES["int32"]


@dataclass(frozen=True)
class Targets:
    """Per value: ``r`` (target space, or x itself where ``literal``), ``off`` (ULPs of the division precision
    added to the quotient ``r - zero_point``)."""

    r: np.ndarray
    off: np.ndarray
    literal: np.ndarray

    @staticmethod
    def of(items: list[tuple[float, int, bool]]) -> Targets:
        seen: dict[tuple[float, int, bool, bool], None] = {}
        for r, off, lit in items:
            seen.setdefault((r, off, lit, bool(np.signbit(r))), None)
        keys = list(seen)
        return Targets(np.array([k[0] for k in keys], np.float64), np.array([k[1] for k in keys], np.int64),
                       np.array([k[2] for k in keys], bool))


def positive_codes(t: ElementType) -> np.ndarray:
    """The finite positive values of a float type, ascending (read-only, computed once per type)."""
    return _positive_codes(t.name)


@cache
def _positive_codes(name: str) -> np.ndarray:
    v = to_float64(bit_patterns(TYPES[name]))
    codes = np.unique(v[np.isfinite(v) & (v > 0)])
    codes.flags.writeable = False
    return codes


def overflow_threshold(t: ElementType) -> float:
    """Where rounding to ``t`` leaves the finite range: the midpoint between the largest finite value and the
    next code the format would have (``saturate=0`` turns what rounds beyond it into inf or NaN)."""
    c = positive_codes(t)
    m = float(c[-1])
    return m + (m - float(c[-2])) / 2


def step(v: np.ndarray, p: ElementType, n: np.ndarray) -> np.ndarray:
    """``v`` (values of precision ``p``) moved by ``n`` representable steps of ``p`` (float64 for int32)."""
    out = np.asarray(v, np.float64).copy()
    for _ in range(int(np.max(np.abs(n), initial=0))):
        move = n != 0
        if p is F64_INT32:
            out = np.where(move, np.nextafter(out, np.sign(n) * np.inf), out)
        else:
            out = np.where(move, _neighbour(out, p, np.sign(n)), out)
        n = n - np.sign(n)
    return out


def _neighbour(v: np.ndarray, p: ElementType, direction: np.ndarray) -> np.ndarray:
    """The adjacent value of float type ``p`` in ``direction`` (+1 up, -1 down; 0 stays)."""
    assert p.mantissa_bits is not None and p.min_exp is not None
    with np.errstate(all="ignore"):
        a = np.abs(v)
        _, e2 = np.frexp(a)
        exponent = np.maximum(e2.astype(np.int64) - 1, p.min_exp)
        quantum = np.ldexp(1.0, (exponent - p.mantissa_bits).astype(np.int32))
        away = np.where(v == 0, direction > 0, np.sign(v) == direction)  # moving away from zero
        # moving towards zero from a power of two (a normal one) crosses into the binade below
        pow2 = (a == np.ldexp(1.0, exponent.astype(np.int32))) & (exponent > p.min_exp)
        q = np.where(~away & pow2, quantum / 2, quantum)
        return np.where(direction == 0, v, v + direction * q)


def _int_targets(y: ElementType) -> tuple[float, float, float]:
    assert y.int_min is not None and y.int_max is not None
    return float(y.int_min), float(y.int_max), float(np.floor((y.int_min + y.int_max) / 2))


def ties(ctx: Ctx) -> Targets | None:
    """Integer targets: k + 0.5 at the low end, the middle, next to both bounds and just outside them.
    Float targets: ties between adjacent codes, the first two pairs of every binade (one rounds down to the
    even code, the other up), signs alternating by binade. Each on the tie and one ULP either side."""
    items: list[tuple[float, int, bool]] = []
    if ctx.y.is_integer:
        lo, hi, mid = _int_targets(ctx.y)
        points = [lo - 0.5, lo + 0.5, lo + 1.5, mid - 0.5, mid + 0.5, mid + 1.5, hi - 1.5, hi - 0.5, hi + 0.5]
    else:
        c = np.concatenate([[0.0], positive_codes(ctx.y)])
        _, e2 = np.frexp(c[1:])
        points = []
        for k, e in enumerate(np.unique(e2)):
            idx = np.flatnonzero(e2 == e) + 1  # indices in c of this binade's codes
            sign = 1.0 if k % 2 == 0 else -1.0
            for i in idx[:2]:
                points.append(sign * (c[i - 1] + c[i]) / 2)
    for p in points:
        items += [(p, -1, False), (p, 0, False), (p, 1, False)]
    return Targets.of(items)


def range_edges(ctx: Ctx) -> Targets | None:
    """The range of the target and beyond: both bounds, one past them, the rounding boundaries around the
    largest finite value and the ``saturate=0`` overflow threshold (either side by one ULP), the subnormal
    boundaries (half the smallest subnormal, the largest subnormal, the smallest normal), 2**31 (where an
    int32 cast wraps), the largest finite x, +-inf, NaN and +-0."""
    items: list[tuple[float, int, bool]] = []
    if ctx.y.is_integer:
        lo, hi, _ = _int_targets(ctx.y)
        for p in (lo, hi, lo - 1, hi + 1, lo - 0.5, hi + 0.5, hi + 2.0**31, lo - 2.0**31):
            items += [(p, -1, False), (p, 0, False), (p, 1, False)]
        items += [(2.0**31, 0, False), (-(2.0**31) - 1, 0, False)]
    else:
        c = positive_codes(ctx.y)
        m, below, thr = float(c[-1]), float(c[-2]), overflow_threshold(ctx.y)
        tiny = float(c[0])
        normal = 2.0 ** (ctx.y.min_exp or 0)
        largest_sub = float(c[c < normal][-1]) if np.any(c < normal) else tiny
        for p in (m, (m + below) / 2, thr, 2 * thr - m, tiny / 2, tiny, (largest_sub + normal) / 2):
            for sign in (1.0, -1.0):
                items += [(sign * p, -1, False), (sign * p, 0, False), (sign * p, 1, False)]
        items += [(2 * m, 0, False), (-2 * m, 0, False)]
    items += _specials(ctx)
    return Targets.of(items)


def _specials(ctx: Ctx) -> list[tuple[float, int, bool]]:
    """The literal x values: +-inf, NaN (not for integer or NaN-less targets: the catalogue's
    ``nan-to-integer`` question), the largest finite x either sign, +-0."""
    x = ctx.x
    if x.is_integer:
        assert x.int_min is not None and x.int_max is not None
        return [(float(x.int_max), 0, True), (float(x.int_min), 0, True), (0.0, 0, True)]
    assert x.max_finite is not None
    nan = [] if ctx.y.is_integer or not ctx.y.has_nan else [(np.nan, 0, True)]
    return [(np.inf, 0, True), (-np.inf, 0, True), *nan, (x.max_finite, 0, True), (-x.max_finite, 0, True),
            (0.0, 0, True), (-0.0, 0, True)]


def specials(ctx: Ctx) -> Targets | None:
    """huge, +-inf, NaN and +-0 among ordinary ties, in a cycle of 7 (integer x) or 13 (float x), prime to
    every dimension of the granularity shapes, so each special falls on first, middle and last positions of
    every axis; :func:`fit` makes the last element special too (the unpaired element of a packed 4-/2-bit
    tensor, a SIMD tail)."""
    sp = _specials(ctx)
    if ctx.y.is_integer:
        lo, hi, mid = _int_targets(ctx.y)
        fill = [mid + 0.5, hi - 0.5, lo + 1.5]
    else:
        c = positive_codes(ctx.y)
        fill = [float(c[len(c) // 2] + c[len(c) // 2 + 1]) / 2, -float(c[-1] + c[-2]) / 2, float(c[1])]
    cycle = [sp[0], (fill[0], 0, False), sp[2 % len(sp)], sp[1], (fill[1], 0, False), sp[-1],
             (fill[2], 0, False)]
    if len(sp) > 3:
        cycle += [sp[3], (fill[0], 1, False), sp[4], (fill[2], -1, False), sp[5 % len(sp)],
                  (fill[1], 0, False)]
    return Targets(np.array([v[0] for v in cycle]), np.array([v[1] for v in cycle]),
                   np.array([v[2] for v in cycle]))


#: Target recipes: the expander places them through :func:`place`.
TARGETS: dict[str, Callable[[Ctx], Targets | None]] = {
    "boundary-ties": ties,
    "boundary-range": range_edges,
    "boundary-specials": specials,
}


def place(name: str, ctx: Ctx, spec: opspecs.OpSpec, shape: tuple[int, ...] | None, scale: np.ndarray | None,
          zp: np.ndarray | None, attrs: dict[str, int]) -> np.ndarray | None:
    """x for the target recipe ``name`` (QuantizeLinear only; None where it cannot apply): ``shape`` is the
    granularity's x shape (None: as many values as the recipe has)."""
    if ctx.kind != "Q" or scale is None:
        return None
    t = _targets(name, ctx.x.name, ctx.y.name)
    if t is None:
        return None
    x_shape = shape if shape is not None else (len(t.r),)
    dummy = np.zeros(x_shape, ctx.x.dtype)
    plan = plan_quantize_linear(spec, [dummy, scale, zp], attrs)
    assert plan.granularity is not None and plan.precision is not None
    s = broadcast(scale, x_shape, plan.granularity)
    z = broadcast(zp, x_shape, plan.granularity) if zp is not None else None
    return realize(t, ctx.x, s, z, plan.precision, x_shape)


@cache
def _targets(name: str, x: str, y: str) -> Targets | None:
    """The targets of a recipe for one x and target type (they depend on nothing else), computed once."""
    t = TARGETS[name](Ctx("Q", TYPES[x], None, TYPES[y]))
    if t is not None and TYPES[x].is_integer:  # no inf or NaN in an integer x: drop them
        keep = ~(t.literal & ~np.isfinite(t.r))
        t = Targets(t.r[keep], t.off[keep], t.literal[keep])
    return t


def fit(t: Targets, n: int) -> Targets:
    """``t`` repeated to ``n`` values; a specials cycle also ends on a special."""
    idx = np.resize(np.arange(len(t.r)), n)
    if n and np.any(t.literal) and not t.literal[idx[-1]]:
        idx[-1] = np.flatnonzero(t.literal)[n % int(np.sum(t.literal))]
    return Targets(t.r[idx], t.off[idx], t.literal[idx])


def realize(t: Targets, x_t: ElementType, s: np.ndarray, z: np.ndarray | None, precision: ElementType,
            shape: tuple[int, ...]) -> np.ndarray:
    """x of type ``x_t`` and ``shape`` whose quotients (``x / s`` in ``precision``, plus ``z``) land on or
    next to the targets; ``s`` and ``z`` broadcast against x (the element's own scale and zero point)."""
    n = int(np.prod(shape))
    t = fit(t, n)
    s64 = np.broadcast_to(to_float64(np.asarray(s)), shape).reshape(-1)
    z64 = np.zeros(n) if z is None else np.broadcast_to(to_float64(np.asarray(z)), shape).reshape(-1)
    with np.errstate(all="ignore"):
        q = t.r - z64
        qp = q if precision is F64_INT32 else round_to(q, precision)
        qp = np.where(np.isfinite(qp), step(np.where(np.isfinite(qp), qp, 0.0), precision, t.off), qp)
        want = np.where(t.literal, t.r, qp * s64)
    base = to_float64(_to_x(want, x_t))
    both = _x_step(np.concatenate([base, base]), x_t, np.repeat(np.array([-1, 1]), n))
    cands = np.concatenate([base, both]).reshape(3, n)  # x and its own neighbours below and above
    typed = _to_x(cands.reshape(-1), x_t)
    scale_arr = np.broadcast_to(np.asarray(s), shape).reshape(-1)
    with np.errstate(all="ignore"):
        got = to_float64(np.asarray(divide(typed, np.tile(scale_arr, 3), precision))).reshape(3, n)
        err = np.abs(got - qp)
    err = np.where(np.isnan(err), np.inf, err)
    err[0] = np.where(t.literal, -1.0, err[0])  # a literal stays as it is
    choice = np.argmin(err, axis=0)  # the first of equals: the direct rounding wins a draw
    return typed.reshape(3, n)[choice, np.arange(n)].reshape(shape)


def _x_step(v: np.ndarray, x_t: ElementType, d: np.ndarray) -> np.ndarray:
    if x_t.is_integer:
        return v + d
    return _neighbour(v, x_t, d)


def _to_x(v: np.ndarray, x_t: ElementType) -> np.ndarray:
    if x_t.is_integer:
        assert x_t.int_min is not None and x_t.int_max is not None
        w = np.where(np.isnan(v), 0.0, v)
        return np.clip(np.rint(w), x_t.int_min, x_t.int_max).astype(np.int64).astype(x_t.dtype)
    r = round_to(v, x_t)
    return to_type(r, x_t)


# -- scales and zero points
# ------------------------------------------------------------------------------------

#: Non-powers of two whose reciprocals are not exact either: quotients come out inexact.
INEXACT = (0.1, 0.3, 0.7, 1.1, 3.3, 0.0123, 17.7, 0.05)


def scale_values(name: str, t: ElementType, n: int) -> np.ndarray | None:
    """``n`` scale values of type ``t`` for the scale recipe ``name`` (None: the recipe cannot apply)."""
    got = _scale_values(name, t.name, n)
    return None if got is None else got.copy()


@cache
def _scale_values(name: str, type_name: str, n: int) -> np.ndarray | None:
    t = TYPES[type_name]
    if t.is_integer:
        table = {"scale-one": [1.0], "scale-pow2": [2.0, 4.0, 1.0], "scale-inexact": [3.0, 7.0, 5.0],
                 "scale-huge": [2.0**20 + 1, 3e6], "scale-tiny": None, "scale-subnormal": None}
        vals = table[name]
    else:
        assert t.max_finite is not None and t.min_exp is not None and t.mantissa_bits is not None
        normal = 2.0**t.min_exp
        table = {"scale-one": [1.0], "scale-pow2": [0.5, 2.0, 0.125, 4.0, 0.25],
                 "scale-inexact": list(INEXACT),
                 "scale-tiny": [normal * 3, normal * 1.5, normal * 5],
                 "scale-huge": [t.max_finite / 3, t.max_finite / 7, t.max_finite / 2],
                 "scale-subnormal": [normal / 2, normal * 0.75, 2.0 ** (t.min_exp - t.mantissa_bits)]}
        vals = table[name]
        if vals is not None and t.name == "float8e8m0":
            vals = [2.0 ** round(np.log2(v)) for v in vals] if name in ("scale-one", "scale-pow2") else None
        if name == "scale-subnormal" and t.mantissa_bits == 0:
            vals = None
    if vals is None:
        return None
    return to_type(np.resize(np.array(vals, np.float64), n), t)


SCALE_RECIPES = ("scale-one", "scale-pow2", "scale-inexact", "scale-tiny", "scale-huge", "scale-subnormal")
