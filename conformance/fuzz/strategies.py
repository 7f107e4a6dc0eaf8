"""Hypothesis strategies for case descriptions: every operator version, type combination, zero-point mode,
granularity (per-tensor, per-axis with any axis or the default one, blocked with any valid block size), shape,
attribute (saturate, precision; axis and block_size with the granularity; output_dtype with the types) and
value distribution.

Values come from pools ordered simplest first (so Hypothesis shrinks towards 0, 1 and the plainest scales),
filled by the corpus's own generators: the x recipes of ``generators/values.py`` (ties, saturation, specials,
codes), the boundary-derived points of ``generators/boundaries.py`` placed through the drawn scale and zero
point, its scale recipes and zero-point recipes; plus free draws over each type's range.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
from hypothesis import strategies as st

from qdq_conformance import opspecs
from qdq_conformance.domain import PER_TENSOR_1D
from qdq_conformance.generators.boundaries import SCALE_RECIPES, place, scale_values
from qdq_conformance.generators.recipe import Ctx
from qdq_conformance.generators.values import X_RECIPES, ZP_RECIPES, to_type, zero_point_value
from qdq_conformance.reference.arith import to_float64
from qdq_conformance.types import TYPES, ElementType

from .describe import Description, kind_of

#: x recipes of generators/values.py the pools draw from (Q / DQL, and DQ)
Q_RECIPES = ("ties", "ties-near-bounds", "saturation-finite", "saturation-huge", "saturation-inf",
             "signed-zero", "nan", "in-range", "float-specials", "overflow-float")
DQ_RECIPES = ("codes-boundary", "all-codes", "int32-extremes", "boundary-dq-codes",
              "boundary-dq-scale-rounding")
BOUNDARY_RECIPES = ("boundary-ties", "boundary-range", "boundary-specials")
MAX_ELEMENTS = 64


def spec_keys(ops: Sequence[str] = (), versions: Sequence[int] = ()) -> list[tuple[str, str, int]]:
    """(domain, operator, version) of :func:`select_specs`."""
    return [(s.domain, s.name, s.version) for s in select_specs(ops, versions)]


def select_specs(ops: Sequence[str] = (), versions: Sequence[int] = ()) -> list[opspecs.OpSpec]:
    """The operator versions to fuzz: ``ops`` names operators (``QuantizeLinear``, or ``com.microsoft::
    QuantizeLinear``), ``versions`` their versions (default: every one)."""
    out = []
    for spec in opspecs.all_specs():
        if ops and not any(o in (spec.name, f"{spec.domain}::{spec.name}") for o in ops):
            continue
        if versions and spec.version not in versions:
            continue
        out.append(spec)
    return out


def _exact(values: Sequence[float], t: ElementType) -> list[float]:
    """``values`` made exact in type ``t`` (converted and read back), without the ones it cannot hold, in
    order, without repeats (by bit pattern of the float64)."""
    out: dict[bytes, float] = {}
    for v in values:
        v = float(v)
        if t.is_integer and not math.isfinite(v):
            continue
        try:
            got = float(to_float64(to_type(np.array([v]), t, coerce=True))[0])
        except (ValueError, OverflowError, AssertionError):
            continue
        out.setdefault(np.float64(got).tobytes(), got)
    return list(out.values())


@cache
def _scale_pool(t: str) -> tuple[float, ...]:
    et = TYPES[t]
    base = [1.0, 0.5, 2.0, 0.25, 0.1, 3.0, 0.007] if not et.is_integer else [1.0, 2.0, 3.0, 7.0]
    for name in SCALE_RECIPES:
        got = scale_values(name, et, 5)
        if got is not None:
            base += [float(v) for v in np.asarray(got, dtype=np.float64).reshape(-1)]
    return tuple(v for v in _exact(base, et) if v != 0 and math.isfinite(v))


@cache
def _zp_pool(t: str) -> tuple[float, ...]:
    et = TYPES[t]
    got = [zero_point_value(r, et) for r in ("zero", *ZP_RECIPES)]
    # simplest first: the smallest magnitudes (so a shrunk zero point is 3 rather than the type's maximum,
    # when either fails the same way)
    return tuple(sorted(_exact([v for v in got if v is not None], et),
                        key=lambda v: (not math.isfinite(v), abs(v) if math.isfinite(v) else 0.0, v < 0)))


def _x_pool(d: dict[str, Any], spec: opspecs.OpSpec) -> list[float]:
    """Interesting x values for this case, simplest first: the corpus's recipes and boundary points."""
    kind = kind_of(spec.name)
    x = TYPES[d["types"][0]]
    scale_t = TYPES[d["types"][1]] if kind != "DQL" else None
    y = TYPES[d["types"][-1]]
    s0 = d["scale"][0] if d.get("scale") else 1.0
    zps = d.get("zero_point_values")
    z0 = zps[0] if zps else 0.0
    ctx = Ctx(kind, x, scale_t, y, s0, z0)
    pool: list[float] = [0.0, 1.0, -1.0, 2.0, 0.5, -0.5, 1.5, 2.5]
    for name in (DQ_RECIPES if kind == "DQ" else Q_RECIPES):
        try:
            recipe = X_RECIPES[name](ctx)
        except Exception:  # a recipe that does not fit this combination offers nothing
            recipe = None
        if recipe is not None and (recipe.scale is None or recipe.scale == s0):
            pool += [float(v) for v in recipe.values][:48]
    if kind == "Q" and scale_t is not None:
        scale = np.array(s0, dtype=np.float64)
        attrs = dict(d.get("attributes", ()))
        for name in BOUNDARY_RECIPES:
            try:
                got = place(name, ctx, spec, None, to_type(scale.reshape(()), scale_t),
                            None if zps is None else to_type(np.array(z0), y), attrs)
            except Exception:
                got = None
            if got is not None:
                pool += [float(v) for v in np.asarray(got).astype(np.float64).reshape(-1)][:64]
    return _exact(pool, x)


def _free(t: ElementType) -> st.SearchStrategy[float]:
    """Any value of type ``t`` (made exact later)."""
    if t.is_integer:
        assert t.int_min is not None and t.int_max is not None
        return st.integers(t.int_min, t.int_max).map(float)
    big = min(t.max_finite or 3e38, 3e38)
    finite = st.floats(-big * 1.5, big * 1.5, allow_nan=False, allow_infinity=False, width=64)
    specials = [v for v, ok in ((math.inf, t.has_inf), (-math.inf, t.has_inf), (math.nan, t.has_nan)) if ok]
    return st.one_of(finite, st.sampled_from(specials)) if specials else finite


def _near(t: ElementType, radius: float) -> st.SearchStrategy[float]:
    """Values of type ``t`` within ``radius`` of 0 (integers: the type's range)."""
    if t.is_integer:
        return _free(t)
    r = min(radius, t.max_finite or radius)
    return st.floats(-r, r, allow_nan=False, allow_infinity=False, width=64)


def _element(t: ElementType, pool: Sequence[float],
             free: Sequence[st.SearchStrategy[float]]) -> st.SearchStrategy[float]:
    """One value of type ``t`` (made exact later): from ``pool`` (simplest first) half the time, else from the
    ``free`` strategies."""
    branches = [st.sampled_from(list(pool))] * max(1, len(free)) if pool else []
    return st.one_of(*branches, *free)


def _exact_one(v: float, t: ElementType) -> float:
    return (_exact([v], t) or _exact([1.0], t) or [0.0])[0]


def _values(draw: Any, t: ElementType, n: int, pool: Sequence[float],
            free: Sequence[st.SearchStrategy[float]]) -> tuple[float, ...]:
    """``n`` values of type ``t`` (see :func:`_element`)."""
    raw = draw(st.lists(_element(t, pool, free), min_size=n, max_size=n))
    return tuple(_exact_one(v, t) for v in raw)


def combinations(spec: opspecs.OpSpec, patterns: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """The allowed type combinations of ``spec`` whose ``x/scale/y`` matches one of ``patterns`` (all if
    none)."""
    return [c for c in opspecs.type_combinations(spec)
            if not patterns or any(fnmatch.fnmatchcase("/".join(c), p) for p in patterns)]


def _modes(kind: str, spec: opspecs.OpSpec, y: str) -> list[str]:
    if kind == "DQL":
        return ["given"]
    modes = ["given"]
    if kind == "DQ" or y == "uint8":
        modes.append("omitted")
    if kind == "Q" and "output_dtype" in spec.attributes:
        modes.append("output_dtype")
    return modes


def _granularities(kind: str, spec: opspecs.OpSpec) -> list[str]:
    if kind == "DQL":
        return [opspecs.PER_TENSOR]
    # the version's own granularities (opspecs.OpSpec.granularities), and a one-element 1-D scale, which every
    # version takes as per-tensor
    return [opspecs.PER_TENSOR, PER_TENSOR_1D, *(g for g in spec.granularities if g != opspecs.PER_TENSOR)]


def _dims(draw: Any, rank: int, low: int = 1, budget: int = MAX_ELEMENTS) -> list[int]:
    """``rank`` dimensions of 1 to 4 (``low`` 0: an empty dimension now and then) whose product stays within
    ``budget``: each dimension's bound is what the ones before it leave, so a shape never needs clamping (a
    clamp would hide from the shrinker that a smaller dimension gives a smaller case)."""
    out: list[int] = []
    for _ in range(rank):
        top = max(1, min(4, budget // max(1, math.prod(d for d in out if d))))
        if low:
            out.append(draw(st.integers(1, top)))
        else:
            v = draw(st.integers(0, 3 * top))
            out.append(v // 3 + 1 if v < 3 * top else 0)
    return out


def _parameters(draw: Any, kind: str, types: tuple[str, ...], zp_mode: str, groups: int,
                count: tuple[int, int] | None = None) -> tuple[int, list[float], list[float] | None]:
    """The scale and zero-point values, drawn together per element (a list of (scale, zero point) pairs): when
    the shape shrinks, an element's pair goes with it, so the parameters left stay aligned with their
    elements.

    ``count`` (per-axis: 1 to 4 channels; blocked: 1 to 3 blocks): a list of ``groups`` pairs is drawn a free
    number of times within ``count``, and that number *is* the axis dimension or the number of blocks
    (``groups``: the blocked scale's other dimensions), so shrinking it shrinks the shape and the parameters
    at once; without ``count``, ``groups`` pairs. Returns the number drawn (1 without ``count``), the scales,
    the zero points."""
    st_ = TYPES[types[1]]
    scale_free = (st.integers(1, 64).map(float) if st_.is_integer else
                  st.floats(2.0**-10, 2.0**10, allow_nan=False, allow_infinity=False, width=64))
    scale_el = _element(st_, _scale_pool(st_.name), [scale_free])
    zt = TYPES[types[2]] if kind == "Q" else TYPES[types[0]]
    element: st.SearchStrategy[Any] = scale_el
    if zp_mode == "given":
        element = st.tuples(scale_el, _element(zt, _zp_pool(zt.name), [_free(zt)]))
    group = st.lists(element, min_size=groups, max_size=groups)
    drawn = [draw(group)] if count is None else draw(st.lists(group, min_size=count[0], max_size=count[1]))
    raw = [e for g in drawn for e in g]
    if zp_mode != "given":
        return len(drawn), [_exact_one(v, st_) for v in raw], None
    return len(drawn), [_exact_one(v, st_) for v, _ in raw], [_exact_one(z, zt) for _, z in raw]


@st.composite
def descriptions(draw: st.DrawFn, keys: Sequence[tuple[str, str, int]], types: Sequence[str] = (),
                 granularities: Sequence[str] = ()) -> Description:
    """One case description over the operator versions ``keys`` ((domain, operator, version), see
    :func:`spec_keys`); ``types``: glob patterns on ``x/scale/y`` (``x/y`` for DynamicQuantizeLinear);
    ``granularities``: the granularities to draw (default: every one the version has)."""
    usable = [k for k in keys if combinations(opspecs.get(*k), types)
              and any(not granularities or g in granularities
                      for g in _granularities(kind_of(k[1]), opspecs.get(*k)))]
    spec = opspecs.get(*draw(st.sampled_from(usable)))
    kind = kind_of(spec.name)
    combo: tuple[str, ...] = draw(st.sampled_from(combinations(spec, types)))
    y = combo[-1]
    zp_mode = draw(st.sampled_from(_modes(kind, spec, y)))
    gran = draw(st.sampled_from([g for g in _granularities(kind, spec)
                                 if not granularities or g in granularities]))
    axis: int | None = None
    block_size: int | None = None
    n_scale = 1
    count: tuple[int, int] | None = None
    if gran in (opspecs.PER_TENSOR, PER_TENSOR_1D):
        x_shape = _dims(draw, draw(st.integers(1, 3) if kind != "DQL" else st.integers(1, 2)), low=0)
        scale_shape: list[int] = [] if gran == opspecs.PER_TENSOR else [1]
    else:
        # The rank and the axis first, then the parameters, whose number sets the axis dimension (per-axis) or
        # the number of blocks (blocked); the other dimensions fit in what that leaves (no clamping).
        rank = draw(st.integers(1, 4 if gran == opspecs.PER_AXIS else 3))
        omit = rank >= 2 and spec.attributes.get("axis") is not None and draw(st.booleans())
        a = 1 if omit else draw(st.integers(-rank, rank - 1))
        axis = None if omit else a
        a %= rank
        if gran == opspecs.BLOCKED:
            block_size = draw(st.integers(1, 5))
        per_scale = 4 if gran == opspecs.PER_AXIS else 3 * (block_size or 1)
        others = _dims(draw, rank - 1, budget=MAX_ELEMENTS // per_scale)
        n_scale = math.prod(others) if gran == opspecs.BLOCKED else 1
        count = (1, 4) if gran == opspecs.PER_AXIS else (1, 3)
    attrs: list[tuple[str, int]] = []
    yt = TYPES[y]
    if "saturate" in spec.attributes and not yt.is_integer and kind == "Q":
        attrs.append(("saturate", draw(st.sampled_from([1, 0]))))
    if "precision" in spec.attributes and kind == "Q":
        precision = draw(st.sampled_from([0, TYPES["float"].proto, TYPES["float16"].proto,
                                          TYPES["bfloat16"].proto]))
        if precision:  # (0: the attribute omitted: the scale's type sets the precision)
            attrs.append(("precision", precision))
    d: dict[str, Any] = {"types": combo, "attributes": attrs}
    if kind != "DQL":
        drawn, scales, zps = _parameters(draw, kind, combo, zp_mode, n_scale, count)
        if gran == opspecs.PER_AXIS:
            x_shape = [*others[:a], drawn, *others[a:]]
            scale_shape = [drawn]
        elif gran == opspecs.BLOCKED:
            assert block_size is not None
            dim = draw(st.integers(0, block_size - 1))  # the last block's elements past its first
            x_shape = [*others[:a], (drawn - 1) * block_size + 1 + dim, *others[a:]]
            scale_shape = [*others[:a], drawn, *others[a:]]
            # the pairs were drawn block by block: put the block axis where the axis is
            order = np.moveaxis(np.arange(len(scales)).reshape([drawn, *others]), 0, a).reshape(-1)
            scales = [scales[k] for k in order]
            zps = None if zps is None else [zps[k] for k in order]
        d["scale"] = tuple(scales)
        if zps is not None:
            d["zero_point_values"] = tuple(zps)
    x_t = TYPES[combo[0]]
    if kind == "DQ":
        x_free = [_free(x_t)]
    else:
        reach = (2.0**(yt.bits + 1) if yt.is_integer
                 else (yt.max_finite or 1.0) * 2) * abs(d.get("scale", (1.0,))[0]
                                                      or 1.0)
        x_free = [_near(x_t, min(reach, 3e38)), _free(x_t)]
    x = _values(draw, x_t, math.prod(x_shape), _x_pool(d, spec), x_free)
    return Description(spec.domain, spec.name, spec.version, tuple(combo), zp_mode, gran, tuple(x_shape),
                       tuple(scale_shape), axis, block_size, tuple(attrs), x, tuple(d.get("scale", ())),
                       d.get("zero_point_values"))
