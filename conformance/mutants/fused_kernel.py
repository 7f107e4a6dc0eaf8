"""A fused quantized kernel, emulated: DQ -> Conv / MatMul / Gemm -> Q computed as one integer accumulation,
as QLinearConv, QLinearMatMul, QGemm and MatMulNBits compute it, with the shortcuts the mutants of
:mod:`.fused` take.

Per output element, and per block of weights that share a scale (per-tensor and per-channel weights: one
block; blocked weights: ``block_size`` consecutive elements of K):

    acc_b = sum_k (x_k - x_zero_point) * (w_k - w_zero_point_k)            (exact, in int64)
    value = sum_b acc_b * x_scale * w_scale_b + bias                        (float64, then one rounding)

where the bias is the float32 its DequantizeLinear gives. Without a shortcut the value is the float32 nearest
the real result of the dequantized operands' exact product (a legitimate evaluation: the tests check that the
compute corpus passes it), so a case that fails a mutant of this kernel fails it for its shortcut. A shortcut
changes one step: the code a convolution pads with, the weight zero point, pairs of products saturated to
int16, a block's or the whole accumulator wrapped to fewer bits, the requantization multiplier kept in fewer
bits.

The rewrite that puts it in a model (:func:`fuse`) runs the model once on the kernel to read every tensor's
value, replaces each compute op it can fuse by a constant holding the fused kernel's output, and (for a
shortcut in the requantization) the QuantizeLinear's scale by 1. A pattern it cannot read (an activation
quantized per channel, a float8 or float16 parameter, Gemm with alpha or beta other than 1) is left to the
kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from .. import opspecs
from ..errors import SpecViolation
from ..reference import granularity as gran
from ..reference.graph_oracle import (
    GraphError,
    Step,
    node_attrs,
    run_graph_bounded,
    tensor_proto,
    tensor_value,
)
from ..reference.model import opset_version
from ..reference.node_args import Attrs, integer, ints, real
from ..reference.sliding import windows
from ..types import by_dtype

Feeds = dict[str, np.ndarray]
#: the compute ops a fused kernel replaces, with their input positions (x, w, bias)
FUSED_OPS = ("Conv", "MatMul", "Gemm")


@dataclass(frozen=True)
class Shortcut:
    """One step of the fused kernel done the shortcut's way (the defaults are the spec's)."""

    #: Conv pads x with the code 0 instead of x's zero point (whose value is the real 0 the spec pads with)
    pad_code_zero: bool = False
    #: False: the weights' zero point is taken as 0 (a kernel written for symmetric weights)
    weight_zero_point: bool = True
    #: uint8 x int8: raw products summed two by two and each pair saturated to int16 (x86's VPMADDUBSW)
    pair_saturation: bool = False
    #: each block's accumulator wrapped to this many bits (two's complement), for blocked weights
    block_bits: int | None = None
    #: the whole accumulator, bias codes included, wrapped to this many bits
    accumulator_bits: int | None = None
    #: the requantization multiplier x_scale * w_scale / y_scale kept with this many significant bits
    multiplier_bits: int | None = None


@dataclass(frozen=True)
class Operand:
    """A DequantizeLinear's input as a fused kernel reads it: codes, and the scale and zero point expanded to
    the codes' shape."""

    codes: np.ndarray
    scale: np.ndarray
    zero: np.ndarray
    #: each element's block: its index along the blocking axis // block_size (0 unless blocked)
    block: np.ndarray
    blocked: bool = False


def values_of(model: onnx.ModelProto, feeds: Feeds) -> dict[str, np.ndarray] | None:
    """Every tensor of the model as the kernel computes it (each interval's representative), or None when
    the kernel cannot run it (the mutant's backend then reports the kernel's refusal)."""
    steps: list[Step] = []
    try:
        run_graph_bounded(model, feeds, steps)
    except (SpecViolation, GraphError):
        return None
    out = {i.name: tensor_value(i) for i in model.graph.initializer}
    out.update({k: np.asarray(v) for k, v in feeds.items()})
    for s in steps:
        out.update({name: v for name, v in zip(s.node.output, s.outputs, strict=False) if name})
    return out


def _operand(model: onnx.ModelProto, dq: onnx.NodeProto, values: dict[str, np.ndarray]) -> Operand | None:
    codes = values.get(dq.input[0])
    scale = values.get(dq.input[1]) if len(dq.input) > 1 else None
    zp = values.get(dq.input[2]) if len(dq.input) > 2 and dq.input[2] else None
    if codes is None or scale is None or not by_dtype(codes.dtype).is_integer or scale.dtype != np.float32:
        return None  # (float8 codes, float16 scales: left to the kernel)
    opset = opset_version(model, dq.domain)
    if opset is None:
        return None
    spec = opspecs.resolve(opspecs.normalize_domain(dq.domain), dq.op_type, opset)
    attrs = {k: v for k, v in node_attrs(dq).items() if isinstance(v, int)}
    g = gran.resolve(spec, codes.shape, scale.shape, None if zp is None else zp.shape, attrs, "x_scale")
    full = np.broadcast_to(gran.broadcast(scale, codes.shape, g).astype(np.float64), codes.shape)
    zero = np.zeros(codes.shape, np.int64) if zp is None else \
        np.broadcast_to(gran.broadcast(zp.astype(np.int64), codes.shape, g), codes.shape)
    block = np.zeros(codes.shape, np.int64)
    if g.kind == gran.BLOCKED and g.axis is not None and g.block_size:
        dims = [1] * codes.ndim
        dims[g.axis] = codes.shape[g.axis]
        block = np.broadcast_to((np.arange(codes.shape[g.axis]) // g.block_size).reshape(dims), codes.shape)
    return Operand(codes.astype(np.int64), full, zero, block, g.kind == gran.BLOCKED)


def _per_tensor(x: Operand) -> bool:
    return bool((x.scale == x.scale.reshape(-1)[0]).all() and (x.zero == x.zero.reshape(-1)[0]).all())


#: the dot-product form: (x codes, then the weight arrays), each of shape (*output, L), and the output shape
Form = tuple[np.ndarray, list[np.ndarray]]


def _conv_form(x: Operand, w: Operand, attrs: Attrs, fill: int) -> Form | None:
    n = x.codes.ndim - 2
    kernel = ints(attrs, "kernel_shape", list(w.codes.shape[2:]))
    group = integer(attrs, "group", 1)
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID") or n < 1 or w.codes.ndim != x.codes.ndim:
        return None
    pads = ints(attrs, "pads", [0] * 2 * n) if attrs.get("auto_pad", "NOTSET") == "NOTSET" else [0] * 2 * n
    win = windows(x.codes, kernel, ints(attrs, "strides", [1] * n), pads, ints(attrs, "dilations", [1] * n),
                  fill=fill)
    cg, mg = x.codes.shape[1] // group, w.codes.shape[0] // group
    out = win.shape[2:2 + n]
    xs, ws = [], []
    for g in range(group):
        xg = np.moveaxis(win[:, g * cg:(g + 1) * cg], 1, 1 + n).reshape(x.codes.shape[0], *out, -1)
        xs.append(np.broadcast_to(xg[:, None], (xg.shape[0], mg, *xg.shape[1:])))
        shape = (xg.shape[0], mg, *xg.shape[1:])
        ws.append([np.broadcast_to(a[g * mg:(g + 1) * mg].reshape(mg, *([1] * n), -1)[None], shape)
                   for a in (w.codes, w.zero, w.scale, w.block)])
    return np.concatenate(xs, axis=1), [np.concatenate([p[k] for p in ws], axis=1) for k in range(4)]


def _matmul_form(a: np.ndarray, b: list[np.ndarray]) -> Form | None:
    if a.ndim < 2 or b[0].ndim < 2 or a.shape[-1] != b[0].shape[-2]:
        return None
    xe = a[..., :, None, :]
    we = [np.swapaxes(v, -1, -2)[..., None, :, :] for v in b]
    shape = np.broadcast_shapes(xe.shape, we[0].shape)
    return np.broadcast_to(xe, shape), [np.broadcast_to(v, shape) for v in we]


def _form(op: onnx.NodeProto, x: Operand, w: Operand, sc: Shortcut) -> Form | None:
    attrs = node_attrs(op)
    weights = [w.codes, w.zero, w.scale, w.block]
    if op.op_type == "Conv":
        return _conv_form(x, w, attrs, 0 if sc.pad_code_zero else int(x.zero.reshape(-1)[0]))
    if op.op_type == "MatMul":
        return _matmul_form(x.codes, weights)
    if float(real(attrs, "alpha", 1.0)) != 1 or float(real(attrs, "beta", 1.0)) != 1 or x.codes.ndim != 2:
        return None
    a = x.codes.T if integer(attrs, "transA", 0) else x.codes
    b = [v.T for v in weights] if integer(attrs, "transB", 0) else weights
    return _matmul_form(a, b)


def _wrap(v: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return (v + half) % (1 << bits) - half


def _pairs(raw: np.ndarray) -> np.ndarray:
    """Raw products summed two by two along the last axis, each pair saturated to int16."""
    if raw.shape[-1] % 2:
        raw = np.concatenate([raw, np.zeros((*raw.shape[:-1], 1), raw.dtype)], axis=-1)
    return np.clip(raw[..., 0::2] + raw[..., 1::2], -(2**15), 2**15 - 1).sum(axis=-1)


def _accumulate(xe: np.ndarray, we: list[np.ndarray], xz: int, sc: Shortcut, u8s8: bool, blocked: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """(acc, scale) per output element and block: the integer sums and each block's weight scale."""
    codes, zero, scale, block = we
    zero = zero if sc.weight_zero_point else np.zeros_like(zero)
    ids = block[(0,) * (block.ndim - 1)]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], ids.size]
    accs, scales = [], []
    for s, e in zip(starts, ends, strict=True):
        xb, wb, zb = xe[..., s:e], codes[..., s:e], zero[..., s:e]
        if sc.pair_saturation and u8s8:
            acc = _pairs(xb * wb) - (xb * zb).sum(-1) - xz * wb.sum(-1) + xz * zb.sum(-1)
        else:
            acc = ((xb - xz) * (wb - zb)).sum(-1)
        accs.append(_wrap(acc, sc.block_bits) if sc.block_bits and blocked else acc)
        scales.append(scale[..., s])
    return np.stack(accs, -1), np.stack(scales, -1)


@dataclass(frozen=True)
class Fused:
    """What the fused kernel gives for one compute op: the float32 output, or (``codes``) the value in the
    QuantizeLinear's units when the shortcut is in the requantization."""

    value: np.ndarray
    codes: bool = False


def _bias(op: onnx.NodeProto, bias: Operand | None, bias_value: np.ndarray | None, shape: tuple[int, ...]
          ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(the bias's float32 value, its codes less its zero point, its scale), each broadcast to the output
    shape (0, None, None without a bias)."""
    if bias is None or bias_value is None:
        return np.zeros(shape), None, None
    dims = [1] * len(shape)
    if op.op_type == "Conv":
        dims[1] = -1
    else:
        dims = list(bias.codes.shape)

    def out(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a.reshape(dims), shape)
    return out(bias_value.astype(np.float64)), out(bias.codes - bias.zero), out(bias.scale)


def compute(op: onnx.NodeProto, x: Operand, w: Operand, bias: Operand | None, bias_value: np.ndarray | None,
            y_scale: float | None, sc: Shortcut, u8s8: bool) -> Fused | None:
    """The fused kernel's output for compute op ``op`` (None where it cannot fuse it)."""
    if not _per_tensor(x):
        return None
    form = _form(op, x, w, sc)
    if form is None:
        return None
    xz, xs = int(x.zero.reshape(-1)[0]), float(x.scale.reshape(-1)[0])
    acc, wscale = _accumulate(form[0], form[1], xz, sc, u8s8, w.blocked)
    b_value, b_codes, b_scale = _bias(op, bias, bias_value, acc.shape[:-1])
    unit = xs * wscale  # the accumulator's scale per block (a product of two float32: exact in float64)
    if sc.accumulator_bits or sc.multiplier_bits:
        if acc.shape[-1] != 1:
            return None
        total, unit1 = acc[..., 0], unit[..., 0]
        if b_codes is not None and b_scale is not None:
            # the bias codes join the accumulator where its scale is x_scale * w_scale (as toolchains emit
            # it);
            # another scale would need the bias requantized, a step of its own: such a pattern is not fused
            if not (b_scale == unit1.astype(np.float32)).all():
                return None
            total = total + b_codes
        if sc.accumulator_bits:
            total = _wrap(total, sc.accumulator_bits)
        if sc.multiplier_bits and y_scale is not None:
            return Fused(total * _significant(unit1 / y_scale, sc.multiplier_bits), codes=True)
        return Fused((total * unit1).astype(np.float32))
    return Fused(((acc * unit).sum(-1) + b_value).astype(np.float32))


def _significant(m: np.ndarray, bits: int) -> np.ndarray:
    """``m`` rounded to ``bits`` significant bits (a fixed-point multiplier: mantissa and shift)."""
    mant, exp = np.frexp(m)
    return np.ldexp(np.round(mant * 2.0**bits) / 2.0**bits, exp)


def _producer(g: onnx.GraphProto, name: str, op: str) -> onnx.NodeProto | None:
    return next((n for n in g.node if name in n.output and n.op_type == op), None)


def _quantizer(g: onnx.GraphProto, name: str) -> onnx.NodeProto | None:
    """The QuantizeLinear reading ``name``, directly or through a Relu (fused into the kernel as well)."""
    for n in g.node:
        if name in n.input[:1] and n.op_type == "Relu":
            return _quantizer(g, n.output[0])
        if name in n.input[:1] and n.op_type == "QuantizeLinear" and n.domain in ("", "ai.onnx"):
            return n
    return None


def fuse(sc: Shortcut) -> Callable[[onnx.ModelProto, Feeds], tuple[onnx.ModelProto, Feeds]]:
    """The rewrite putting the fused kernel with shortcut ``sc`` in place of each compute op it can fuse."""
    def rewrite(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
        values = values_of(model, feeds)
        if values is None:
            return model, feeds
        g = model.graph
        for k, op in enumerate(list(g.node)):
            if op.op_type not in FUSED_OPS or op.domain not in ("", "ai.onnx") or len(op.input) < 2:
                continue
            dqs = [_producer(g, name, "DequantizeLinear") if name else None for name in op.input]
            if dqs[0] is None or dqs[1] is None or (len(op.input) > 2 and op.input[2] and dqs[2] is None):
                continue
            x, w = _operand(model, dqs[0], values), _operand(model, dqs[1], values)
            bias = _operand(model, dqs[2], values) if len(dqs) > 2 and dqs[2] is not None else None
            q = _quantizer(g, op.output[0])
            ys = values.get(q.input[1]) if q is not None else None
            y_scale = float(ys.reshape(-1)[0]) if ys is not None and ys.size == 1 else None
            if x is None or w is None or (len(dqs) > 2 and dqs[2] is not None and bias is None):
                continue
            u8s8 = values[dqs[0].input[0]].dtype == np.uint8 and values[dqs[1].input[0]].dtype == np.int8
            fused = compute(op, x, w, bias, values.get(op.input[2]) if bias is not None else None, y_scale,
                            sc, u8s8)
            if fused is None or (fused.codes and q is None):
                continue
            name = f"{op.output[0]}_fused"
            if fused.codes:
                assert q is not None
                g.initializer.append(tensor_proto(np.asarray(fused.value, np.float32), name))
                g.initializer.append(tensor_proto(np.asarray(1.0, np.float32), f"{name}_unit"))
                q.input[1] = f"{name}_unit"
            else:
                g.initializer.append(tensor_proto(np.asarray(fused.value, np.float32), name))
            g.node[k].CopyFrom(helper.make_node("Identity", [name], [op.output[0]], name=f"{op.name}_fused"))
        return model, feeds
    return rewrite
