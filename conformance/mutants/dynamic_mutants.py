"""Mutants of DynamicQuantizeLinear 11: the function body's steps, one of them done the shortcut way.

Each replaces the kernel's ``dynamic_quantize`` step with :func:`body`, the function body written out in
float32 like the kernel's :func:`qdq_conformance.reference.dynamic.dynamic_quantize`, with one step swapped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..reference import granularity as gran
from ..reference import quantize as qmod
from ..reference.ops import SPEC
from ..reference.steps import Steps
from ..types import TYPES
from .mutant import F32, W, a, mutant

BODY = ("y_scale = (maximum(0, max(x)) - minimum(0, min(x))) / (qmax - qmin); intermediate_zero_point = qmin "
        "- min(x)/y_scale; y_zero_point = cast(round(saturate(itermediate_zero_point))) ... rounding to "
        "nearest ties to even.")
RANGE = "Data range is adjusted to include 0."



def body(x: np.ndarray, *, steps: Steps, include_zero: bool = True,
         round_zp: Callable[[np.ndarray], np.ndarray] = np.rint) -> list[np.ndarray]:
    """(y, y_scale, y_zero_point) as the function body computes them, with the steps the arguments name."""
    q_min, q_max = F32(0), F32(255)
    with np.errstate(all="ignore"):
        lo = np.min(x) if x.size else F32(np.inf)
        hi = np.max(x) if x.size else F32(-np.inf)
        if include_zero:
            lo = F32(np.nan) if np.isnan(lo) else F32(np.fmin(lo, q_min))
            hi = F32(np.nan) if np.isnan(hi) else F32(np.fmax(hi, q_min))
        scale = F32(F32(hi - lo) / q_max)
        zp = F32(np.clip(F32(q_min - F32(lo / scale)), q_min, q_max))
        zp = F32(round_zp(zp))
        zero_point = np.uint8(0 if np.isnan(zp) else int(zp))
    y_scale = np.array(scale, F32)
    y_zero_point = np.array(zero_point, np.uint8)
    y = qmod.quantize(x, y_scale, y_zero_point, out=TYPES["uint8"],
                      granularity=gran.Granularity(gran.PER_TENSOR),
                      precision=TYPES["float"], steps=steps)
    return [y, y_scale, y_zero_point]


def _replace(include_zero: bool = True, round_zp: Callable[[Any], Any] = np.rint) -> Steps:
    def dynamic_quantize(x: np.ndarray, *, steps: Steps) -> list[np.ndarray]:
        return body(x, steps=steps, include_zero=include_zero, round_zp=round_zp)
    return replace(SPEC, dynamic_quantize=dynamic_quantize)


@mutant("dql-zero-point-truncated", "casts the zero point to uint8 by truncation, without the Round step",
        BODY, witness=W("DynamicQuantizeLinear", 11, "zero point 0.6 rounds to 1", a([-0.6, 254.4], F32)))
def _zp_truncated() -> Steps:
    return _replace(round_zp=np.trunc)


@mutant("dql-zero-point-half-away",
        "rounds the zero point half away from zero (std::round) instead of half to "
        "even", BODY,
        witness=W("DynamicQuantizeLinear", 11,
                  "a tie in the zero point: -min(x) / y_scale = 0.5 rounds to 0 (even), not 1",
                  a([-0.5, 254.5], F32)))
def _zp_half_away() -> Steps:
    return _replace(round_zp=lambda v: np.copysign(np.floor(np.abs(v) + 0.5), v))


@mutant("dql-range-without-zero",
        "takes the scale from min(x) and max(x) without adjusting the range to include 0", RANGE + " " + BODY,
        witness=W("DynamicQuantizeLinear", 11, "all-positive x: the range starts at 0", a([1, 2], F32)))
def _range_without_zero() -> Steps:
    return _replace(include_zero=False)
