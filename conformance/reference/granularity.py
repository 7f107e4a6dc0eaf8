"""Quantization granularity: which scale / zero point applies to which element of x.

Spec (QuantizeLinear 21+): "There are three supported quantization granularities, determined by the shape of
`y_scale`. In all cases, `y_zero_point` must have the same shape as `y_scale`.
- Per-tensor (per-layer) quantization: `y_scale` is a scalar.
- Per-axis quantization: The scale must be a 1-D tensor, with the length of the quantization axis.
- Blocked quantization: The scale's shape is identical to the input's shape, except for one dimension, in
  which blocking is performed. [...] the accepted range is `[ceil(Di/Si), ceil(Di/(Si-1))-1]`"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..opspecs import BLOCKED, PER_AXIS, PER_TENSOR, OpSpec

__all__ = ["BLOCKED", "PER_AXIS", "PER_TENSOR", "Granularity", "block_size_range", "broadcast", "resolve"]


@dataclass(frozen=True)
class Granularity:
    kind: str
    axis: int | None = None  # normalized, 0 <= axis < rank
    block_size: int | None = None


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def block_size_range(di: int, si: int) -> tuple[int, float]:
    """The accepted block_size range [ceil(Di/Si), ceil(Di/(Si-1))-1]; the upper end is inf when Si == 1.

    Ambiguity catalogue: ``block-size-si-1`` (ceil(Di/0) is undefined; the kernel reads it as no upper bound);
    ``block-size-empty-axis`` (Di = Si = 0: the kernel takes any block size, ceil(0/B) = 0 blocks).
    """
    if si <= 0:
        return (1, float("inf")) if di == 0 else (1, 0)  # an empty axis takes any block size
    low = _ceil_div(di, si)
    high: float = float("inf") if si == 1 else _ceil_div(di, si - 1) - 1
    return (low, high)


def _is_single(shape: tuple[int, ...]) -> bool:
    return len(shape) == 0 or tuple(shape) == (1,)


def _is_one_element(shape: tuple[int, ...]) -> bool:
    return len(shape) == 1 and shape[0] == 1


def resolve(spec: OpSpec, x_shape: tuple[int, ...], scale_shape: tuple[int, ...],
            zp_shape: tuple[int, ...] | None, attrs: Mapping[str, int | None],
            scale_name: str) -> Granularity:
    """Decide the granularity from the scale's shape and the attributes, enforcing the version's rules.

    The steps, in the order the rules are judged: the zero point's shape, the block_size attribute, then the
    scale's shape: a scalar (per tensor), a version with scalars only, per-axis (no block_size), blocked.
    """
    _check_zero_point_shape(spec, scale_shape, zp_shape, scale_name)
    block_size = _block_size(spec, attrs)
    axis_attr = attrs.get("axis")
    if len(scale_shape) == 0:
        return _scalar_scale(spec, axis_attr, scale_name)
    if PER_AXIS not in spec.granularities:
        return _scalars_only(spec, scale_shape, scale_name)
    if block_size > 0 and BLOCKED not in spec.granularities:
        raise spec.violation("QDQ009", "block_size is not defined at this version", "block_size")
    if block_size == 0:
        return _per_axis(spec, x_shape, scale_shape, axis_attr, scale_name)
    return _blocked(spec, x_shape, scale_shape, axis_attr, block_size, scale_name)


def _check_zero_point_shape(spec: OpSpec, scale_shape: tuple[int, ...], zp_shape: tuple[int, ...] | None,
                            scale_name: str) -> None:
    """"In all cases, `y_zero_point` must have the same shape as `y_scale`." (QDQ006)"""
    zp_name = "y_zero_point" if scale_name == "y_scale" else "x_zero_point"
    if zp_shape is not None and tuple(zp_shape) != tuple(scale_shape) and not (
        # Ambiguity catalogue: scalar-one-element-shapes. ONNX's own tests pair a scalar scale with a [1]
        # zero point; a scalar and a one-element 1-D tensor are read as the same per-tensor shape.
        _is_single(scale_shape) and _is_single(zp_shape)
    ):
        raise spec.violation("QDQ006", f"zero point shape {list(zp_shape)} differs from scale shape "
                             f"{list(scale_shape)}", zp_name)


def _block_size(spec: OpSpec, attrs: Mapping[str, int | None]) -> int:
    """The block_size attribute, 0 when absent; a negative one breaks QDQ010 (it "must be a positive
    integer")."""
    block_size = int(attrs.get("block_size") or 0)
    if block_size < 0:
        raise spec.violation("QDQ010", f"block_size {block_size} is negative; it must be a positive integer",
                             "block_size")
    return block_size


def _scalar_scale(spec: OpSpec, axis_attr: int | None, scale_name: str) -> Granularity:
    """"Per-tensor (per-layer) quantization: `y_scale` is a scalar." Where the axis attribute is optional
    (com.microsoft), a given axis asks for a 1-D scale (QDQ005)."""
    if spec.axis_optional_per_tensor and axis_attr is not None:
        raise spec.violation("QDQ005", "axis is specified, so the scale must be a 1-D tensor (per 'axis')",
                             scale_name)
    return Granularity(PER_TENSOR)


def _scalars_only(spec: OpSpec, scale_shape: tuple[int, ...], scale_name: str) -> Granularity:
    """Version 10: "'x_scale' and 'x_zero_point' are both scalars." A one-element 1-D scale is read as a
    scalar (ambiguity catalogue: v10-one-element-scale); anything larger is not allowed (QDQ005)."""
    if _is_one_element(scale_shape):
        return Granularity(PER_TENSOR)
    raise spec.violation("QDQ005", f"scale must be a scalar at version {spec.version}, got shape "
                         f"{list(scale_shape)}", scale_name)


def _per_axis(spec: OpSpec, x_shape: tuple[int, ...], scale_shape: tuple[int, ...], axis_attr: int | None,
              scale_name: str) -> Granularity:
    """"Per-axis quantization: The scale must be a 1-D tensor, with the length of the quantization axis."
    A one-element 1-D scale that does not fit is read as per-tensor (the catalogue entries below)."""
    rank = len(x_shape)
    one_element = _is_one_element(scale_shape)
    if len(scale_shape) != 1:
        detail = (f"a scale of rank {len(scale_shape)} needs blocked quantization (block_size > 0)"
                  if BLOCKED in spec.granularities
                  else f"scale must be a scalar or 1-D, got shape {list(scale_shape)}")
        raise spec.violation("QDQ005", detail, scale_name)
    if spec.axis_optional_per_tensor and axis_attr is None:
        if one_element:
            # "If it's not specified, it means per-tensor quantization and input 'x_scale' and 'x_zero_point'
            # must be scalars." A one-element 1-D scale is read as per-tensor, as ONNX Runtime (the
            # operator's owner) runs it (ambiguity catalogue: ms-one-element-no-axis).
            return Granularity(PER_TENSOR)
        raise spec.violation("QDQ005", "axis is not specified, so the scale must be a scalar (per tensor)",
                             scale_name)
    axis = int(axis_attr if axis_attr is not None else 1)
    if rank == 1 and spec.rank1_axis_ignored:
        # "When the rank of the input is 1, per-tensor quantization is applied, rendering the axis
        # unnecessary in this scenario." Ambiguity catalogue: rank1-axis. The kernel applies the 1-D scale
        # along the only axis whatever the axis attribute says.
        axis = 0
    if not -rank <= axis <= rank - 1:
        if one_element:
            # Ambiguity catalogue: one-element-scale. A [1] scale is read as per-tensor.
            return Granularity(PER_TENSOR)
        raise spec.violation("QDQ007", f"axis {axis} is outside [-{rank}, {rank - 1}]", "axis")
    axis %= rank
    if scale_shape[0] != x_shape[axis]:
        if one_element:
            return Granularity(PER_TENSOR)
        raise spec.violation("QDQ005", f"per-axis scale has length {scale_shape[0]} but x has "
                             f"{x_shape[axis]} along axis {axis}", scale_name)
    return Granularity(PER_AXIS, axis)


def _blocked(spec: OpSpec, x_shape: tuple[int, ...], scale_shape: tuple[int, ...], axis_attr: int | None,
             block_size: int, scale_name: str) -> Granularity:
    """"Blocked quantization: The scale's shape is identical to the input's shape, except for one dimension,
    in which blocking is performed. [...] the accepted range is `[ceil(Di/Si), ceil(Di/(Si-1))-1]`" """
    rank = len(x_shape)
    if len(scale_shape) != rank:
        raise spec.violation("QDQ005", f"blocked quantization needs a scale of the input's rank {rank}, got "
                             f"shape {list(scale_shape)}", scale_name)
    axis = int(axis_attr if axis_attr is not None else 1)
    if not -rank <= axis <= rank - 1:
        raise spec.violation("QDQ007", f"axis {axis} is outside [-{rank}, {rank - 1}]", "axis")
    axis %= rank
    for d, (xd, sd) in enumerate(zip(x_shape, scale_shape, strict=True)):
        if d != axis and xd != sd:
            raise spec.violation("QDQ005", f"blocked scale shape {list(scale_shape)} differs from x shape "
                                 f"{list(x_shape)} outside the blocking axis {axis}", scale_name)
    low, high = block_size_range(x_shape[axis], scale_shape[axis])
    if not low <= block_size <= high:
        raise spec.violation("QDQ008", f"block_size {block_size} is outside [{low}, {high}] for "
                             f"Di={x_shape[axis]}, Si={scale_shape[axis]}", "block_size")
    return Granularity(BLOCKED, axis, block_size)


def broadcast(param: np.ndarray, x_shape: tuple[int, ...], g: Granularity) -> np.ndarray:
    """``param`` (scale or zero point) shaped to broadcast against x."""
    if g.kind == PER_TENSOR:
        return param.reshape(())
    assert g.axis is not None
    if g.kind == PER_AXIS:
        dims = [1] * len(x_shape)
        dims[g.axis] = param.shape[0]
        return param.reshape(dims)
    assert g.block_size is not None
    expanded = np.repeat(param, g.block_size, axis=g.axis)
    return expanded.take(np.arange(x_shape[g.axis]), axis=g.axis)
