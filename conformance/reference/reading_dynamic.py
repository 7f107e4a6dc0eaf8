"""The DynamicQuantizeLinear readings of the ambiguity catalogue (dql-nan, dql-zero, dql-empty), and
what such a reading constrains (:func:`dql_judged`); the other entries are in :mod:`.readings` and
:mod:`.reading_divisions`.
"""

from __future__ import annotations

import numpy as np

from ..ambiguities import reading_key
from . import granularity as gran
from .dynamic import dynamic_quantize
from .ops import SPEC
from .quantize import quantize
from .reading_divisions import F32, U8, Node, Outputs


def dql_nan(n: Node) -> dict[str, Outputs] | None:
    if n.spec.name != "DynamicQuantizeLinear" or not np.isnan(n.x).any():
        return None
    numbers = n.x[~np.isnan(n.x)]
    _, scale, zp = dynamic_quantize(numbers, steps=SPEC)
    found = {"propagate": n.outputs, "ignored": dql_y(n.x, scale, zp)}
    if not numbers.any():
        # NaN ignored, nothing but zeros (or nothing) is left: the range is 0, and dql-zero's question arises
        # for what remains (ONNX Runtime ignores NaN, then guards the zero range with a scale of 1)
        found[f"ignored+{reading_key('dql-zero', GUARD_ONE)}"] = dql_y(n.x, *DQL_GUARD)
    return found


def dql_y(x: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> Outputs:
    """(y, y_scale, y_zero_point) with y = QuantizeLinear(x, y_scale, y_zero_point), the function body's last
    step."""
    y = quantize(x, scale, zp, out=U8, granularity=gran.Granularity(gran.PER_TENSOR), precision=F32,
                 steps=SPEC)
    return (y, scale, zp)


#: dql-zero's guard-one: y_scale 1 and y_zero_point 0 for a zero range
GUARD_ONE = "guard-one"
DQL_GUARD = (np.array(1, np.float32), np.array(0, np.uint8))


def dql_zero(n: Node) -> dict[str, Outputs] | None:
    if n.spec.name != "DynamicQuantizeLinear" or n.x.any():  # (an empty x has the range of an all-zero one)
        return None
    return {"zero-scale": n.outputs, GUARD_ONE: dql_y(n.x, *DQL_GUARD)}


def dql_empty(n: Node) -> dict[str, Outputs | None] | None:
    if n.spec.name != "DynamicQuantizeLinear" or n.x.size:
        return None
    return {"identities": n.outputs, "fails": None}


def dql_judged(x: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray | None, None, np.ndarray | None]:
    """What a DynamicQuantizeLinear reading constrains. y = QuantizeLinear(x, y_scale, y_zero_point): an
    element whose quotient is NaN follows nan-to-integer, whose readings include any code. y_zero_point =
    Cast(Round(...)), whose argument, Q_Min - X_Min_Adjusted / y_scale, is NaN when y_scale is NaN, or 0 / 0,
    or -inf / inf (an input with -inf); Cast's text does not say what NaN becomes in uint8, so such a zero
    point is not judged either, nor is an element of y whose finite quotient it is added to (with y_scale inf,
    y of every number is the zero point itself; an infinite quotient saturates whatever the zero point).
    (X_Min_Adjusted of the reading: NaN elements left out, as a reading that ignores them does; under the
    kernel's reading NaN propagates.)"""
    s = np.float32(scale)
    with np.errstate(all="ignore"):
        x32 = x.astype(np.float32)
        q = x32 / s
        numbers = x32[~np.isnan(x32)]
        x_min = np.fmin(np.min(numbers) if numbers.size else np.float32(np.inf), np.float32(0))
        zp_free = bool(np.isnan(np.float32(0) - np.float32(x_min) / s))
    free = np.isnan(q) | (np.isfinite(q) if zp_free else False)
    return (~free if free.any() else None), None, (np.array(False) if zp_free else None)
