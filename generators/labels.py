"""Which boundary an element sits on, recomputed from a case's final inputs (after rounding to x's type).

A failure shows, for each mismatching element, a label such as ``tie 110.5, quotient inexact`` or ``tie
448|480 +1ulp, beyond max 448, above saturate=0 threshold 464 of float8e4m3fn``, so a vendor knows what broke.
Labels are computed on demand for the few indices a failure reports (nothing is stored or generated for
passing cases); the quotient is divided exactly as the oracle divides it (the division precision of the
version, the element's own scale and zero point).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qdq_conformance import opspecs
from qdq_conformance.reference.arith import BF16, F16, F32, round_to, to_float64
from qdq_conformance.reference.granularity import broadcast
from qdq_conformance.reference.ops import plan_dequantize_linear, plan_quantize_linear
from qdq_conformance.reference.quantize import divide
from qdq_conformance.types import ElementType, by_dtype

from .boundaries import F64_INT32, overflow_threshold, positive_codes, step


def _g(v: float) -> str:
    return f"{v:.9g}"


def _ulps_from(q: float, target: float, p: ElementType) -> int | None:
    """How many steps of precision ``p`` from ``target`` to ``q`` (None beyond 3)."""
    if q == target:
        return 0
    d = 1 if q > target else -1
    v = np.array([target])
    for k in range(1, 4):
        v = step(v, p, np.array([d]))
        if v[0] == q:
            return d * k
    return None


def _near(q: float, r: float, point: float, p: ElementType) -> str | None:
    """``point`` (target space) if the quotient sits on it or within 3 ULPs, with the offset."""
    n = _ulps_from(q, q - r + point, p) if np.isfinite(point) else None
    if n is None:
        return None
    return _g(point) if n == 0 else f"{_g(point)} {n:+d}ulp"


def _integer(q: float, r: float, out: ElementType, p: ElementType) -> list[str]:
    assert out.int_min is not None and out.int_max is not None
    lo, hi = out.int_min, out.int_max
    parts = []
    if abs(q) >= 2.0**31:
        parts.append("|x/scale| >= 2**31 (an int32 cast wraps)")
    tie = _near(q, r, np.floor(r) + 0.5, p) or _near(q, r, np.floor(r) - 0.5, p) or \
        _near(q, r, np.ceil(r) + 0.5, p)
    if tie is not None:
        parts.append(f"tie {tie}")
    elif r == np.rint(r):
        parts.append(f"integer {_g(r)}")
    else:
        parts.append(f"r={_g(r)}")
    k = np.rint(r)
    if k > hi:
        parts.append(f"above max {hi}")
    elif k < lo:
        parts.append(f"below min {lo}")
    elif k >= hi - 1:
        parts.append(f"next to max {hi}")
    elif k <= lo + 1:
        parts.append(f"next to min {lo}")
    return parts


def _float(q: float, r: float, out: ElementType, p: ElementType) -> list[str]:
    c = positive_codes(out)
    m, thr, normal = float(c[-1]), overflow_threshold(out), 2.0 ** (out.min_exp or 0)
    a, sign = abs(r), -1.0 if r < 0 else 1.0
    parts = []
    grid = np.concatenate([[0.0], c, [2 * thr - m]])
    i = int(np.searchsorted(grid, a, side="right")) - 1
    lo_c, hi_c = grid[min(i, len(grid) - 2)], grid[min(i + 1, len(grid) - 1)]
    if a == lo_c:
        parts.append(f"code {_g(sign * a)}")
    else:
        near = _near(q, r, sign * (lo_c + hi_c) / 2, p)
        pair = f"{_g(sign * lo_c)}|{_g(sign * hi_c)}"
        parts.append(f"tie {pair}{near[near.find(' '):] if ' ' in near else ''}" if near is not None
                     else f"between {pair}")
    if a > m:
        parts.append(f"beyond max {_g(m)}")
    at = _near(q, r, sign * thr, p)
    if at is not None or a > thr:
        where = "on" if at is not None and "ulp" not in at else "above" if a > thr else "below"
        off = f" ({at.split(' ')[1]})" if at is not None and "ulp" in at else ""
        parts.append(f"{where} the saturate=0 threshold {_g(thr)} of {out.name}{off}")
    if 0 < a < normal:
        parts.append("subnormal")
    if p is F32:
        for via in (F16, BF16):
            if round_to(np.array([r]), out)[0] != round_to(round_to(np.array([r]), via), out)[0]:
                parts.append(f"rounds otherwise through {via.name}")
    return parts


def _special(v: float) -> str | None:
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "+inf" if v > 0 else "-inf"
    if v == 0:
        return "-0" if np.signbit(v) else "+0"
    return None


def _quantize(spec: opspecs.OpSpec, inputs: Sequence[np.ndarray | None], attrs: dict[str, int],
              flat: list[int]) -> list[str]:
    plan = plan_quantize_linear(spec, inputs, attrs)
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    assert x is not None and scale is not None and plan.granularity and plan.precision
    out, p = plan.outputs[0], plan.precision
    s = np.broadcast_to(broadcast(scale, x.shape, plan.granularity), x.shape).reshape(-1)[flat]
    z = (np.zeros(len(flat)) if zp is None else
         to_float64(np.broadcast_to(broadcast(zp, x.shape, plan.granularity), x.shape).reshape(-1)[flat]))
    xs = x.reshape(-1)[flat]
    q = to_float64(np.asarray(divide(xs, s, p)).reshape(-1))
    x64, s64 = to_float64(xs), to_float64(s)
    labels = []
    for k in range(len(flat)):
        special = _special(float(x64[k]))
        if special is not None:
            labels.append(special)
            continue
        qk, rk = float(q[k]), float(q[k] + z[k])
        if not np.isfinite(qk):
            labels.append(f"x/scale overflows {p.name if p is not F64_INT32 else 'float64'} to {_g(qk)}")
            continue
        parts = (_integer if out.is_integer else _float)(qk, rk, out, p)
        if qk * s64[k] != x64[k]:
            parts.append("quotient inexact")
        if z[k]:
            parts.append(f"zp {_g(z[k])}")
        labels.append(", ".join(parts))
    return labels


def _dequantize(spec: opspecs.OpSpec, inputs: Sequence[np.ndarray | None], attrs: dict[str, int],
                flat: list[int]) -> list[str]:
    plan = plan_dequantize_linear(spec, inputs, attrs)
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    assert x is not None and scale is not None and plan.granularity
    out, xt = plan.outputs[0], by_dtype(x.dtype)
    s = to_float64(np.broadcast_to(broadcast(scale, x.shape, plan.granularity), x.shape).reshape(-1)[flat])
    z = (np.zeros(len(flat)) if zp is None else
         to_float64(np.broadcast_to(broadcast(zp, x.shape, plan.granularity), x.shape).reshape(-1)[flat]))
    xs = to_float64(x.reshape(-1)[flat])
    labels = []
    for k in range(len(flat)):
        special = _special(float(xs[k])) if xt.is_float else None
        if special is not None and special not in ("+0", "-0"):
            labels.append(special)
            continue
        d = xs[k] - z[k]
        p = d * s[k]
        parts = [f"x-zp={_g(d)}"]
        if xt.is_integer and not (xt.int_min <= d <= xt.int_max):
            parts.append(f"outside {xt.name}")
        if out.is_float:
            r = round_to(np.array([p]), out)[0]
            up = round_to(np.array([p + abs(p) * 2.0**-60 + 2.0**-1074]), out)[0]
            if np.isinf(r) and np.isfinite(p):
                parts.append(f"product overflows {out.name}")
            elif r != up and abs(r - p) == abs(up - p):
                parts.append(f"product ties in {out.name}")
            elif r != p:
                parts.append("product inexact")
            if out is not F32 and round_to(round_to(np.array([p]), F32), out)[0] != r:
                parts.append("rounds otherwise through float")
        labels.append(", ".join(parts))
    return labels


def labels(domain: str, op: str, version: int, inputs: Sequence[np.ndarray | None], attrs: dict[str, int],
           indices: Sequence[Sequence[int]]) -> list[str] | None:
    """A label for each multi-index of x in ``indices``, or None where the operator has none to give."""
    x = inputs[0]
    if x is None or op == "DynamicQuantizeLinear" or not indices:
        return None
    spec = opspecs.get(domain, op, version)
    flat = [int(np.ravel_multi_index(tuple(i), x.shape)) if x.ndim else 0 for i in indices]
    quantize = "Dequantize" not in op
    try:
        return (_quantize if quantize else _dequantize)(spec, inputs, attrs, flat)
    except Exception:  # an invalid case (the plan refuses it): no labels
        return None
