"""DynamicQuantizeLinear 11: exactly the function body's operations, in its order, in float32.

Function body (onnx.defs): X_Min = ReduceMin(x); X_Min_Adjusted = Min(X_Min, Q_Min); X_Max = ReduceMax(x);
X_Max_Adjusted = Max(X_Max, Q_Min); X_Range = Sub(X_Max_Adjusted, X_Min_Adjusted); Scale = Div(X_Range,
Q_Max); Min_Scaled = Div(X_Min_Adjusted, Scale); Initial_ZeroPoint_FP = Sub(Q_Min, Min_Scaled);
Clipped_ZeroPoint_FP = Clip(Initial_ZeroPoint_FP, Q_Min, Q_Max); Rounded_ZeroPoint_FP = Round(...);
Zeropoint = Cast(...) to uint8; y = QuantizeLinear(x, Scale, Zeropoint), with Q_Min = 0 and Q_Max = 255.
"""

from __future__ import annotations

import numpy as np

from ..types import TYPES
from .granularity import PER_TENSOR, Granularity
from .quantize import quantize
from .steps import Steps

U8 = TYPES["uint8"]
F32 = TYPES["float"]


def dynamic_quantize(x: np.ndarray, *, steps: Steps) -> list[np.ndarray]:
    """(y, y_scale, y_zero_point) for a float32 ``x``; the final QuantizeLinear through ``steps``.

    Ambiguity catalogue: dql-nan (NaN propagates through ReduceMin / ReduceMax / Min / Max / Clip / Round, and
    Cast of NaN to uint8 gives 0), dql-zero (all-zero input: Scale = 0, the zero point 0/0 is NaN and casts to
    0, and y = 0/0 quantizes as NaN does), dql-empty (ReduceMin / ReduceMax of no element are +inf / -inf,
    their identities, so an empty input gives Scale 0 and zero point 0).
    """
    q_min, q_max = np.float32(0), np.float32(255)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x_min = np.min(x, initial=np.float32(np.inf)) if x.size == 0 else np.min(x)
        x_max = np.max(x, initial=np.float32(-np.inf)) if x.size == 0 else np.max(x)
        x_min_adj = np.float32(np.fmin(x_min, q_min)) if not np.isnan(x_min) else np.float32(np.nan)
        x_max_adj = np.float32(np.fmax(x_max, q_min)) if not np.isnan(x_max) else np.float32(np.nan)
        scale = np.float32(np.float32(x_max_adj - x_min_adj) / q_max)
        min_scaled = np.float32(x_min_adj / scale)
        zp_fp = np.float32(q_min - min_scaled)
        zp_fp = np.float32(np.clip(zp_fp, q_min, q_max))
        zp_fp = np.float32(np.rint(zp_fp))
        zero_point = np.uint8(0 if np.isnan(zp_fp) else int(zp_fp))
    y_scale = np.array(scale, dtype=np.float32)
    y_zero_point = np.array(zero_point, dtype=np.uint8)
    y = quantize(x, y_scale, y_zero_point, out=U8, granularity=Granularity(PER_TENSOR), precision=F32,
                 steps=steps)
    return [y, y_scale, y_zero_point]
