"""Mutants of the layout: granularity, axis, blocks, packed sub-byte tensors.

They replace the kernel's steps (:class:`qdq_conformance.reference.steps.Steps`) that read the attributes
(``attributes``), resolve the granularity (``resolve``), broadcast scale and zero point
(``broadcast_quantize``, ``broadcast_dequantize``) or compute a whole operator (``quantize``, ``dequantize``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace

import ml_dtypes
import numpy as np

from ..errors import SpecViolation
from ..opspecs import AI_ONNX, OpSpec
from ..reference import granularity as gran
from ..reference.granularity import Granularity
from ..reference.ops import SPEC
from ..reference.steps import Broadcast, Steps
from ..types import ElementType, by_dtype
from .mutant import F32, U8, W, a, mutant

AXIS = ("axis: (Optional) The axis of the dequantizing dimension of the input tensor. Used only for per-axis "
        "and blocked quantization. Negative value means counting dimensions from the back. Accepted range is "
        "`[-r, r-1]` where `r = rank(input)`. (schema default: 1)")
PER_AXIS = "Per-axis quantization: The scale must be a 1-D tensor, with the length of the quantization axis."
BLOCKED = ("Blocked quantization: The scale's shape is identical to the input's shape, except for one "
           "dimension, in which blocking is performed. Given `x` shape `(D0, ..., Di, ..., Dn)`, `axis=i`, "
           "and block size `B`: `y_scale` shape is `(D0, ..., ceil(Di/B), ..., Dn)`.")
PACKED = ("onnx.proto, TensorProto: Each pair of uint4, int4, and float4 values MUST be packed as two 4-bit "
          "elements into a single byte. [...] Each group of four uint2, int2 values MUST be packed as four "
          "2-bit elements into a single byte. float6e2m3 and float6e3m2 values must be packed 4-at-a-time "
          "into 3 bytes [...] If the element count is not a multiple of 4, the final group is zero-padded")

def _planners(edit: Callable[[OpSpec, dict[str, int]], dict[str, int]]) -> Steps:
    """The kernel's steps with both planners reading the node's attributes as ``edit`` rewrites them."""
    def attributes(spec: OpSpec, attrs: Mapping[str, int]) -> Mapping[str, int]:
        return edit(spec, dict(attrs))
    return replace(SPEC, attributes=attributes)


@mutant("axis-default-0", "takes the default axis as 0 instead of 1 when the node has no axis attribute",
        AXIS, witness=W("QuantizeLinear", 21,
                        "a square (3, 3) x, no axis attribute: the scales apply along the columns, not "
                        "the rows",
                        a(np.ones((3, 3)), F32), a([1, 0.5, 0.25], F32)))
def _axis_default_0() -> Steps:
    def edit(spec: OpSpec, attrs: dict[str, int]) -> dict[str, int]:
        if spec.domain == AI_ONNX and "axis" in spec.attributes and "axis" not in attrs:
            attrs["axis"] = 0
        return attrs
    return _planners(edit)


@mutant("dq-axis-default-last",
        "DequantizeLinear takes a missing axis as the last one (a [K, N] MatMul weight's "
        "output channels) instead of 1: right for rank 2 only", AXIS,
        witness=W("DequantizeLinear", 21,
                  "a (3, 3, 3) x, no axis attribute: the scales apply along axis 1, not the last (as long)",
                  a(np.ones((3, 3, 3)), U8), a([1, 2, 4], F32)))
def _dq_axis_default_last() -> Steps:
    def attributes(spec: OpSpec, attrs: Mapping[str, int]) -> Mapping[str, int]:
        if ("Dequantize" in spec.name and spec.domain == AI_ONNX and "axis" in spec.attributes
                and "axis" not in attrs):
            return {**attrs, "axis": -1}
        return attrs
    return replace(SPEC, attributes=attributes)


@mutant("negative-axis-ignored", "ignores a negative axis attribute (falls back to the default axis)", AXIS,
        witness=W("QuantizeLinear", 21, "axis=-1 on a (3, 3, 3) x is axis 2, not the default 1 (as long)",
                  a(np.ones((3, 3, 3)), F32), a([1, 0.5, 0.25], F32), axis=-1))
def _negative_axis() -> Steps:
    def edit(spec: OpSpec, attrs: dict[str, int]) -> dict[str, int]:
        if attrs.get("axis", 0) < 0:
            del attrs["axis"]
        return attrs
    return _planners(edit)


@mutant("negative-axis-off-by-one",
        "normalizes a negative axis as rank - 1 + axis (counting from the back one "
        "too far)", AXIS,
        witness=W("QuantizeLinear", 21, "axis=-1 on a (3, 3, 3) x is axis 2, not 1 (as long)",
                  a(np.ones((3, 3, 3)), F32), a([1, 0.5, 0.25], F32), axis=-1))
def _negative_axis_off() -> Steps:
    def resolve(spec: OpSpec, x_shape: tuple[int, ...], scale_shape: tuple[int, ...],
                zp_shape: tuple[int, ...] | None, attrs: Mapping[str, int | None],
                scale_name: str) -> Granularity:
        axis = attrs.get("axis")
        if axis is not None and axis < 0 and len(x_shape) > 1:
            attrs = {**attrs, "axis": max(len(x_shape) - 1 + axis, 0)}
        return SPEC.resolve(spec, x_shape, scale_shape, zp_shape, attrs, scale_name)
    return replace(SPEC, resolve=resolve)


@mutant("one-element-per-tensor", "treats a per-axis scale of one element as per-tensor", PER_AXIS,
        equivalent="A valid per-axis scale of one element goes with an axis of length 1 (or, catalogue "
        "one-element-scale, is already read as per-tensor): either way the one scale and zero point apply to "
        "every element, so per-axis and per-tensor compute the same values. Blocked scales are not touched.")
def _one_element() -> Steps:
    def resolve(spec: OpSpec, x_shape: tuple[int, ...], scale_shape: tuple[int, ...],
                zp_shape: tuple[int, ...] | None, attrs: Mapping[str, int | None],
                scale_name: str) -> Granularity:
        g = SPEC.resolve(spec, x_shape, scale_shape, zp_shape, attrs, scale_name)
        return gran.Granularity(gran.PER_TENSOR) if g.kind == gran.PER_AXIS and scale_shape == (1,) else g
    return replace(SPEC, resolve=resolve)


def _params(edit: Callable[[np.ndarray, Granularity], np.ndarray],
            which: tuple[str, ...] = ("scale", "zero_point")
            ) -> Steps:
    """The kernel's steps handing QuantizeLinear's and DequantizeLinear's computations scale and / or zero
    point as ``edit(param, granularity)``."""
    def params(scale: np.ndarray, zero_point: np.ndarray | None, g: Granularity
               ) -> tuple[np.ndarray, np.ndarray | None]:
        if "scale" in which:
            scale = edit(scale, g)
        if zero_point is not None and "zero_point" in which:
            zero_point = edit(zero_point, g)
        return scale, zero_point

    def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray:
        scale, zero_point = params(scale, zero_point, granularity)
        return SPEC.quantize(x, scale, zero_point, out=out, granularity=granularity, precision=precision,
                             saturate=saturate, steps=steps)

    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        scale, zero_point = params(scale, zero_point, granularity)
        return SPEC.dequantize(x, scale, zero_point, out=out, granularity=granularity, steps=steps)

    return replace(SPEC, quantize=quantize, dequantize=dequantize)


def _first_if_per_axis(p: np.ndarray, g: Granularity) -> np.ndarray:
    return np.full_like(p, p.reshape(-1)[0]) if g.kind == gran.PER_AXIS and p.size else p


@mutant("per-axis-as-per-tensor",
        "applies the first scale and zero point of a per-axis quantization to every "
        "channel", PER_AXIS,
        witness=W("QuantizeLinear", 21, "per-axis scales 1 and 0.25 along axis 1", a(np.ones((1, 2)), F32),
                  a([1, 0.25], F32), axis=1))
def _per_axis_first() -> Steps:
    return _params(_first_if_per_axis)


@mutant("per-axis-zero-point-first", "applies per-axis scales but only the first zero point to every channel",
        PER_AXIS + " In all cases, `y_zero_point` must have the same shape as `y_scale`.",
        witness=W("QuantizeLinear", 21, "per-axis zero points 0 and 5 along axis 1", a(np.zeros((1, 2)), F32),
                  a([1, 1], F32), a([0, 5], U8), axis=1))
def _per_axis_zp_first() -> Steps:
    return _params(_first_if_per_axis, which=("zero_point",))


#: the channels a per-axis parameter table of one vector register holds (16 float32 lanes)
LANES = 16


def _lanes(p: np.ndarray, g: Granularity) -> np.ndarray:
    if g.kind != gran.PER_AXIS or p.size <= LANES:
        return p
    return p.reshape(-1)[np.arange(p.size) % LANES].reshape(p.shape)


@mutant("per-axis-channels-capped-16",
        "keeps per-axis scales and zero points in a table of 16 lanes (one vector register of float32), so "
        "channel c reads lane c % 16: right for up to 16 channels, wrong from the 17th", PER_AXIS,
        witness=W("QuantizeLinear", 21, "17 channels along axis 1: channel 16 has scale 0.25, lane 0 has 1",
                  a(np.ones((1, 17)), F32), a([1.0] * 16 + [0.25], F32), axis=1))
def _per_axis_lanes() -> Steps:
    return _params(_lanes)


def _along_last_axis(param: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
    """A per-axis parameter spread over x by each element's coordinate along the last axis (modulo its
    length): what a kernel written for [K, N] weights with per-output-channel scales computes."""
    index = np.arange(x_shape[-1]) % param.shape[0]
    return np.broadcast_to(param[index].reshape((1,) * (len(x_shape) - 1) + (-1,)), x_shape).copy()


@mutant("dq-float8-per-axis-along-last-axis",
        "DequantizeLinear of float8 x, a kernel written for [K, N] weights: per-axis scales and zero points "
        "always run along the last axis (the channel index taken modulo the scale's length), whatever the "
        "axis attribute", PER_AXIS,
        witness=W("DequantizeLinear", 21,
                  "float8e4m3fn x (2, 3) per axis 0: rows scaled 1 and 2, not columns",
                  a(np.ones((2, 3)), ml_dtypes.float8_e4m3fn), a([1, 2], F32), axis=0))
def _dq_float8_last_axis() -> Steps:
    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        t = by_dtype(x.dtype)
        if t.is_float8 and granularity.kind == gran.PER_AXIS and granularity.axis != x.ndim - 1:
            scale = _along_last_axis(scale, x.shape)
            zero_point = None if zero_point is None else _along_last_axis(zero_point, x.shape)
            granularity = gran.Granularity(gran.BLOCKED, x.ndim - 1, 1)  # one element a block: as given
        return SPEC.dequantize(x, scale, zero_point, out=out, granularity=granularity, steps=steps)

    return replace(SPEC, dequantize=dequantize)


def _blocks(g: Granularity) -> tuple[int, int]:
    """A blocked granularity's axis and block size."""
    assert g.axis is not None and g.block_size is not None
    return g.axis, g.block_size


def _broadcasts(make: Callable[[Broadcast], Broadcast]) -> Steps:
    """The kernel's steps with both operators' broadcasting of scale and zero point as ``make`` wraps it."""
    return replace(SPEC, broadcast_quantize=make(SPEC.broadcast_quantize),
                   broadcast_dequantize=make(SPEC.broadcast_dequantize))


@mutant("blocked-index-from-last-axis",
        "computes a blocked element's block index from its coordinate along the "
        "last axis, whatever the blocking axis (right only for axis = -1)", BLOCKED,
        witness=W("QuantizeLinear", 21,
                  "blocks along axis 0 of a (4, 2) x: rows 2-3 take the second row of scales",
                  a(np.ones((4, 2)), F32), a([[1.0, 1.0], [0.5, 0.5]], F32), axis=0, block_size=2))
def _blocked_last() -> Steps:
    def make(original: Broadcast) -> Broadcast:
        def broadcast(param: np.ndarray, x_shape: tuple[int, ...], g: Granularity) -> np.ndarray:
            rank = len(x_shape)
            if g.kind != gran.BLOCKED or g.axis == rank - 1:
                return original(param, x_shape, g)
            axis, size = _blocks(g)
            block = np.minimum(np.arange(x_shape[-1]) // size, param.shape[axis] - 1)
            index = list(np.indices(x_shape, sparse=True))
            index[axis] = block.reshape((1,) * (rank - 1) + (-1,))
            return param[tuple(index)]
        return broadcast
    return _broadcasts(make)


@mutant("blocked-partial-block",
        "counts blocks as floor(Di / block_size), so the elements of a partial last block "
        "take the previous block's scale and zero point", BLOCKED,
        witness=W("QuantizeLinear", 21,
                  "Di=5, block_size 3: elements 3-4 form a partial block with the second scale",
                  a(np.ones((1, 5)), F32), a([[1, 0.5]], F32), axis=1, block_size=3))
def _blocked_partial() -> Steps:
    def make(original: Broadcast) -> Broadcast:
        def broadcast(param: np.ndarray, x_shape: tuple[int, ...], g: Granularity) -> np.ndarray:
            if g.kind != gran.BLOCKED:
                return original(param, x_shape, g)
            axis, size = _blocks(g)
            di = x_shape[axis]
            full = max(di // size, 1)
            index = np.minimum(np.arange(di) // size, full - 1)
            return param.take(index, axis=axis)
        return broadcast
    return _broadcasts(make)


@mutant("block-size-capped-16",
        "caps block_size at 16, the widest block a vector kernel was written for, so a "
        "block of 32, 64 or 128 takes the next scale every 16 elements", BLOCKED,
        witness=W("DequantizeLinear", 21,
                  "two blocks of 32 along axis 1: elements 16-31 belong to the first block",
                  a(np.ones((1, 64)), U8), a([[1, 2]], F32), axis=1, block_size=32))
def _blocked_capped() -> Steps:
    def make(original: Broadcast) -> Broadcast:
        def broadcast(param: np.ndarray, x_shape: tuple[int, ...], g: Granularity) -> np.ndarray:
            if g.kind != gran.BLOCKED or _blocks(g)[1] <= 16:
                return original(param, x_shape, g)
            axis = _blocks(g)[0]
            index = np.minimum(np.arange(x_shape[axis]) // 16, param.shape[axis] - 1)
            return param.take(index, axis=axis)
        return broadcast
    return _broadcasts(make)


@mutant("dq-block-size-ignored", "blocked DequantizeLinear ignores block_size and uses ceil(Di / Si)",
        BLOCKED, witness=W("DequantizeLinear", 21,
                           "Di=9, Si=2, block_size 6 (ceil(9/2) = 5): element 5 is in the first block",
                           a(np.ones((1, 9)), U8), a([[1, 2]], F32), axis=1, block_size=6))
def _dq_block_size() -> Steps:
    def broadcast(param: np.ndarray, x_shape: tuple[int, ...], g: Granularity) -> np.ndarray:
        if g.kind == gran.BLOCKED and g.axis is not None and param.shape[g.axis]:
            g = gran.Granularity(gran.BLOCKED, g.axis, -(-x_shape[g.axis] // param.shape[g.axis]))
        return SPEC.broadcast_dequantize(param, x_shape, g)
    return replace(SPEC, broadcast_dequantize=broadcast)


@mutant("block-size-range-unchecked",
        "accepts a block_size outside [ceil(Di/Si), ceil(Di/(Si-1))-1] and blocks with it anyway (the block "
        "index clamped to the last scale)",
        "block_size: the accepted range is `[ceil(Di/Si), ceil(Di/(Si-1))-1]`",
        witness=W("DequantizeLinear", 21,
                  "Di=9, Si=2, block_size 9 (above the range [5, 8]): a model the spec refuses",
                  a(np.ones((1, 9)), U8), a([[1, 2]], F32), axis=1, block_size=9),
        accepts_invalid=True)
def _block_size_unchecked() -> Steps:
    def resolve(spec: OpSpec, x_shape: tuple[int, ...], scale_shape: tuple[int, ...],
                zp_shape: tuple[int, ...] | None, attrs: Mapping[str, int | None],
                scale_name: str) -> Granularity:
        try:
            return SPEC.resolve(spec, x_shape, scale_shape, zp_shape, attrs, scale_name)
        except SpecViolation as e:
            if e.rule != "QDQ008":
                raise
            axis = attrs.get("axis")
            axis = 1 if axis is None else int(axis)
            return gran.Granularity(gran.BLOCKED, axis % len(x_shape), int(attrs.get("block_size") or 0))

    def make(original: Broadcast) -> Broadcast:
        def broadcast(param: np.ndarray, x_shape: tuple[int, ...], g: Granularity) -> np.ndarray:
            if g.kind != gran.BLOCKED:
                return original(param, x_shape, g)
            axis, size = _blocks(g)
            return param.take(np.minimum(np.arange(x_shape[axis]) // size, param.shape[axis] - 1), axis=axis)
        return broadcast
    return replace(_broadcasts(make), resolve=resolve)


def _tail(x_or_y: np.ndarray) -> np.ndarray:
    """A boolean mask of the elements of a partly filled last packed group (byte, or 3 bytes for float6)."""
    t = by_dtype(x_or_y.dtype)
    mask = np.zeros(x_or_y.size, bool)
    if t.bits < 8:
        group = math.lcm(t.bits, 8) // t.bits  # elements per whole number of bytes: 2, 4 (2-bit), 4 (6-bit)
        rest = x_or_y.size % group
        if rest:
            mask[x_or_y.size - rest:] = True
    return mask.reshape(x_or_y.shape)


@mutant("packed-tail-dropped",
        "QuantizeLinear to a sub-byte type never writes the elements of a partly filled "
        "last byte (they read back as code 0)", PACKED,
        witness=W("QuantizeLinear", 21, "int4, 3 elements: the third fills half of the last byte",
                  a([1, 1, 1], F32), a(1, F32), a(0, ml_dtypes.int4)))
def _tail_dropped() -> Steps:
    def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                 granularity: Granularity, precision: ElementType, saturate: bool,
                 steps: Steps) -> np.ndarray:
        y = SPEC.quantize(x, scale, zero_point, out=out, granularity=granularity, precision=precision,
                          saturate=saturate, steps=steps)
        tail = _tail(y)
        if tail.any():
            y = y.copy()
            y[tail] = np.zeros((), y.dtype)
        return y
    return replace(SPEC, quantize=quantize)


@mutant("packed-tail-misread", "DequantizeLinear from a sub-byte type reads the elements of a partly filled "
        "last byte as code 0", PACKED,
        witness=W("DequantizeLinear", 21, "int4, 3 elements: the third fills half of the last byte",
                  a([1, 1, 1], ml_dtypes.int4), a(1, F32)))
def _tail_misread() -> Steps:
    def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, *, out: ElementType,
                   granularity: Granularity, steps: Steps) -> np.ndarray:
        tail = _tail(x)
        if tail.any():
            x = x.copy()
            x[tail] = np.zeros((), x.dtype)
        return SPEC.dequantize(x, scale, zero_point, out=out, granularity=granularity, steps=steps)
    return replace(SPEC, dequantize=dequantize)
