"""Hypothesis strategies for case descriptions: every operator version, type combination, zero-point mode,
granularity (per-tensor, per-axis with any axis or the default one, blocked with any valid block size), shape,
attribute (saturate, precision; axis and block_size with the granularity; output_dtype with the types) and value
distribution.

Values come from pools ordered simplest first (so Hypothesis shrinks towards 0, 1 and the plainest scales),
filled by the corpus's own generators: the x recipes of ``generators/values.py`` (ties, saturation, specials,
codes), the boundary-derived points of ``generators/boundaries.py`` placed through the drawn scale and zero point,
its scale recipes and zero-point recipes; plus free draws over each type's range.
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
from qdq_conformance.types import TYPES, ElementType

from .describe import Description, kind_of

#: x recipes of generators/values.py the pools draw from (Q / DQL, and DQ)
Q_RECIPES = ("ties", "ties-near-bounds", "saturation-finite", "saturation-huge", "saturation-inf", "signed-zero",
             "nan", "in-range", "float-specials", "overflow-float")
DQ_RECIPES = ("codes-boundary", "all-codes", "int32-extremes", "boundary-dq-codes", "boundary-dq-scale-rounding")
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
    """``values`` made exact in type ``t`` (converted and read back), without the ones it cannot hold, in order,
    without repeats (by bit pattern of the float64)."""
    from qdq_conformance.generators.values import to_type
    from qdq_conformance.reference.arith import to_float64

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
    from qdq_conformance.generators.boundaries import SCALE_RECIPES, scale_values

    et = TYPES[t]
    base = [1.0, 0.5, 2.0, 0.25, 0.1, 3.0, 0.007] if not et.is_integer else [1.0, 2.0, 3.0, 7.0]
    for name in SCALE_RECIPES:
        got = scale_values(name, et, 5)
        if got is not None:
            base += [float(v) for v in np.asarray(got, dtype=np.float64).reshape(-1)]
    return tuple(v for v in _exact(base, et) if v != 0 and math.isfinite(v))


@cache
def _zp_pool(t: str) -> tuple[float, ...]:
    from qdq_conformance.generators.values import ZP_RECIPES, zero_point_value

    et = TYPES[t]
    got = [zero_point_value(r, et) for r in ("zero", *ZP_RECIPES)]
    return tuple(_exact([v for v in got if v is not None], et))


def _x_pool(d: dict[str, Any], spec: opspecs.OpSpec) -> list[float]:
    """Interesting x values for this case, simplest first: the corpus's recipes and boundary points."""
    from qdq_conformance.generators.boundaries import place
    from qdq_conformance.generators.values import X_RECIPES, Ctx

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
        from qdq_conformance.generators.values import to_type

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


def _values(draw: Any, t: ElementType, n: int, pool: Sequence[float],
            free: Sequence[st.SearchStrategy[float]]) -> tuple[float, ...]:
    """``n`` values of type ``t``: from ``pool`` (simplest first) half the time, else from the ``free``
    strategies."""
    branches = [st.sampled_from(list(pool))] * max(1, len(free)) if pool else []
    element = st.one_of(*branches, *free)
    raw = draw(st.lists(element, min_size=n, max_size=n))
    exact = [(_exact([v], t) or _exact([1.0], t) or [0.0])[0] for v in raw]
    return tuple(exact)


def combinations(spec: opspecs.OpSpec, patterns: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """The allowed type combinations of ``spec`` whose ``x/scale/y`` matches one of ``patterns`` (all if none)."""
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
        return ["per-tensor"]
    out = ["per-tensor", "per-tensor-1d"]
    if not (spec.domain == opspecs.AI_ONNX and spec.version < 13):
        out.append("per-axis")
    if spec.domain == opspecs.AI_ONNX and spec.version >= 21 and "block_size" in spec.attributes:
        out.append("blocked")
    return out


def _dims(draw: Any, rank: int, low: int = 1) -> list[int]:
    """``rank`` dimensions of 1 to 4 (``low`` 0: an empty dimension now and then)."""
    dim = st.integers(1, 4) if low else st.integers(0, 12).map(lambda v: v // 3 + 1 if v < 12 else 0)
    return draw(st.lists(dim, min_size=rank, max_size=rank))


@st.composite
def descriptions(draw: Any, keys: Sequence[tuple[str, str, int]], types: Sequence[str] = (),
                 granularities: Sequence[str] = ()) -> Description:
    """One case description over the operator versions ``keys`` ((domain, operator, version), see
    :func:`spec_keys`); ``types``: glob patterns on ``x/scale/y`` (``x/y`` for DynamicQuantizeLinear);
    ``granularities``: the granularities to draw (default: every one the version has)."""
    usable = [k for k in keys if combinations(opspecs.get(*k), types)
              and [g for g in _granularities(kind_of(k[1]), opspecs.get(*k)) if not granularities or g in granularities]]
    spec = opspecs.get(*draw(st.sampled_from(usable)))
    kind = kind_of(spec.name)
    types = draw(st.sampled_from(combinations(spec, types)))
    y = types[-1]
    zp_mode = draw(st.sampled_from(_modes(kind, spec, y)))
    gran = draw(st.sampled_from([g for g in _granularities(kind, spec) if not granularities or g in granularities]))
    axis: int | None = None
    block_size: int | None = None
    if gran in ("per-tensor", "per-tensor-1d"):
        x_shape = _dims(draw, draw(st.integers(1, 3) if kind != "DQL" else st.integers(1, 2)), low=0)
        scale_shape: list[int] = [] if gran == "per-tensor" else [1]
    else:
        rank = draw(st.integers(1, 4 if gran == "per-axis" else 3))
        x_shape = _dims(draw, rank)
        omit = rank >= 2 and spec.attributes.get("axis") is not None and draw(st.booleans())
        a = 1 if omit else draw(st.integers(-rank, rank - 1))
        axis = None if omit else a
        if gran == "per-axis":
            scale_shape = [x_shape[a % rank]]
        else:
            block_size = draw(st.integers(1, 5))
            blocks = draw(st.integers(1, 3))
            x_shape[a % rank] = draw(st.integers((blocks - 1) * block_size + 1, blocks * block_size))
            scale_shape = list(x_shape)
            scale_shape[a % rank] = blocks
    if math.prod(x_shape) > MAX_ELEMENTS:
        x_shape = [min(d, 2) for d in x_shape]
        if gran == "per-axis":
            scale_shape = [x_shape[(axis if axis is not None else 1) % len(x_shape)]]
        elif gran == "blocked":
            assert block_size is not None
            a = (axis if axis is not None else 1) % len(x_shape)
            scale_shape = list(x_shape)
            scale_shape[a] = math.ceil(x_shape[a] / block_size)
    attrs: list[tuple[str, int]] = []
    yt = TYPES[y]
    if "saturate" in spec.attributes and not yt.is_integer and kind == "Q":
        attrs.append(("saturate", draw(st.sampled_from([1, 0]))))
    if "precision" in spec.attributes and kind == "Q":
        precision = draw(st.sampled_from([0, TYPES["float"].proto, TYPES["float16"].proto, TYPES["bfloat16"].proto]))
        if precision:  # (0: the attribute omitted: the scale's type sets the precision)
            attrs.append(("precision", precision))
    d: dict[str, Any] = {"types": types, "attributes": attrs}
    n_scale = math.prod(scale_shape)
    if kind != "DQL":
        st_ = TYPES[types[1]]
        scale_free = (st.integers(1, 64).map(float) if st_.is_integer else
                       st.floats(2.0**-10, 2.0**10, allow_nan=False, allow_infinity=False, width=64))
        d["scale"] = _values(draw, st_, n_scale, _scale_pool(st_.name), [scale_free])
        if zp_mode == "given":
            zt = TYPES[y] if kind == "Q" else TYPES[types[0]]
            d["zero_point_values"] = _values(draw, zt, n_scale, _zp_pool(zt.name), [_free(zt)])
    x_t = TYPES[types[0]]
    if kind == "DQ":
        x_free = [_free(x_t)]
    else:
        reach = (2.0**(yt.bits + 1) if yt.is_integer else (yt.max_finite or 1.0) * 2) * abs(d.get("scale", (1.0,))[0]
                                                                                          or 1.0)
        x_free = [_near(x_t, min(reach, 3e38)), _free(x_t)]
    x = _values(draw, x_t, math.prod(x_shape), _x_pool(d, spec), x_free)
    return Description(spec.domain, spec.name, spec.version, tuple(types), zp_mode, gran, tuple(x_shape),
                       tuple(scale_shape), axis, block_size, tuple(attrs), x, tuple(d.get("scale", ())),
                       d.get("zero_point_values"))
