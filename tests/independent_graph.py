"""A graph case's outputs computed apart from the kernel and its graph runner (``reference/graph_oracle.py``):
the nodes in the model's order, each exact op (data movement, activations) by ``onnx.reference`` on that one
node except LeakyRelu (by its text's formula: onnx.reference's gives -0 at +0 with a negative alpha),
each QuantizeLinear / DequantizeLinear on an integer type (ai.onnx's, and com.microsoft's, whose formula is
the same) by the spec's formula written here:

- QuantizeLinear: ``y = saturate(round_half_even(x / y_scale) + y_zero_point)``, the scale broadcast per
  tensor, along ``axis`` (1-D) or by blocks of ``block_size`` along ``axis``; the output type the zero
  point's, else ``output_dtype``'s, else uint8. ``x / y_scale`` is the division in x's type (float32 or
  float16: the quotient rounded once, IEEE), then rounded half to even, the zero point added exactly;
- DequantizeLinear: ``y = (x - x_zero_point) * x_scale``, the product exact in float64 (an 8- or 16-bit
  integer, or an int32 difference under 2**29 (a compute graph's bias), times a float32 or float16 scale) and
  rounded once to the scale's type.

Where a catalogued reading of the division or of the product's precision would change a case's answer the
case is implementation-defined, not in the graph corpus (every graph case is normative). What this does not
compute (a float8, float4, float6 or int32 type, DynamicQuantizeLinear, AMD Quark's operators)
raises :class:`Beyond`, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

#: the integer types the formula above handles, and their ranges
INTEGERS: dict[int, np.dtype] = {
    onnx.TensorProto.INT8: np.dtype(np.int8), onnx.TensorProto.UINT8: np.dtype(np.uint8),
    onnx.TensorProto.INT16: np.dtype(np.int16), onnx.TensorProto.UINT16: np.dtype(np.uint16),
    onnx.TensorProto.INT4: np.dtype(ml_dtypes.int4), onnx.TensorProto.UINT4: np.dtype(ml_dtypes.uint4),
    onnx.TensorProto.INT2: np.dtype(ml_dtypes.int2), onnx.TensorProto.UINT2: np.dtype(ml_dtypes.uint2),
}
_BY_DTYPE = {dt: code for code, dt in INTEGERS.items()}
_SCALES = (np.dtype(np.float32), np.dtype(np.float16))


class Beyond(Exception):
    """A node this evaluator does not compute."""


def _range(dt: np.dtype) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dt) if dt.type in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                               ml_dtypes.uint2) else np.iinfo(dt)
    return int(info.min), int(info.max)


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _spread(param: np.ndarray, x: np.ndarray, axis: int, block: int) -> np.ndarray:
    """A scale or zero point as x's shape: one value, one per index of ``axis``, or one per block."""
    if param.size == 1 and block == 0:
        return np.broadcast_to(param.reshape(()), x.shape)
    axis = axis % x.ndim
    if block:
        return np.repeat(param, block, axis=axis).take(range(x.shape[axis]), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return np.broadcast_to(param.reshape(shape), x.shape)


def quantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, attrs: Mapping[str, object]
             ) -> np.ndarray:
    if x.dtype not in _SCALES or scale.dtype != x.dtype:
        raise Beyond(f"QuantizeLinear of {x.dtype} by a {scale.dtype} scale")
    if zp is not None:
        out = zp.dtype
    elif attrs.get("output_dtype"):
        code = int(attrs["output_dtype"])  # type: ignore[call-overload]
        if code not in INTEGERS:
            raise Beyond(f"QuantizeLinear to {onnx.TensorProto.DataType.Name(code)}")
        out = INTEGERS[code]
    else:
        out = np.dtype(np.uint8)
    if out not in _BY_DTYPE:
        raise Beyond(f"QuantizeLinear to {out}")
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))  # type: ignore[call-overload]
    # (float32 / float32: one IEEE rounding; float16 / float16: numpy divides in float32 and rounds to
    # float16, which gives the correctly rounded float16 quotient, float32 having 2 * 11 + 2 bits)
    quotient = x / _spread(scale, x, axis, block)
    z = 0.0 if zp is None else _spread(zp.astype(np.float64), x, axis, block)
    lo, hi = _range(out)
    y = np.clip(np.rint(quotient.astype(np.float64)) + z, lo, hi)
    return y.astype(out)


def dequantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, attrs: Mapping[str, object]
               ) -> np.ndarray:
    if (x.dtype not in _BY_DTYPE and x.dtype != np.int32) or scale.dtype not in _SCALES:
        raise Beyond(f"DequantizeLinear of {x.dtype} by a {scale.dtype} scale")
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))  # type: ignore[call-overload]
    s = _spread(scale.astype(np.float64), x, axis, block)
    z = 0.0 if zp is None else _spread(zp.astype(np.float64), x, axis, block)
    if x.dtype == np.int32 and np.any(np.abs(x.astype(np.float64) - z) >= 2.0**29):
        # (an int32 difference of 30 bits or more times a 24-bit float32 significand is not exact in float64)
        raise Beyond("DequantizeLinear of an int32 difference of 2**29 or more")
    with np.errstate(over="ignore"):  # (beyond float16's range: inf, as the spec's product in float16 is)
        return ((x.astype(np.float64) - z) * s).astype(scale.dtype)


def run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs (raises :class:`Beyond` on a node this evaluator does not compute)."""
    opset = next(i.version for i in model.opset_import if i.domain in ("", "ai.onnx"))
    env: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env.update(feeds)
    for node in model.graph.node:
        args = [env[name] if name else None for name in node.input]
        microsoft = node.domain == "com.microsoft" and node.op_type in ("QuantizeLinear", "DequantizeLinear")
        if node.domain not in ("", "ai.onnx") and not microsoft:
            raise Beyond(f"{node.domain} {node.op_type}")
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):  # (com.microsoft's: the same formula)
            f = quantize if node.op_type == "QuantizeLinear" else dequantize
            x, scale, zp = (*args, None, None)[:3]
            assert x is not None and scale is not None
            outs = [f(x, scale, zp, _attrs(node))]
        elif node.op_type == "LeakyRelu":
            # (the text's "f(x) = alpha * x for x < 0, f(x) = x for x >= 0", written here: onnx.reference's
            # takes alpha * x wherever x > 0 fails, -0 at +0 with a negative alpha)
            x, alpha = args[0], np.float32(_attrs(node).get("alpha", 0.01))
            assert x is not None
            outs = [np.where(x < 0, x * alpha.astype(x.dtype), x)]
        elif node.op_type == "GlobalAveragePool" and args[0] is not None and args[0].shape[:2].count(0):
            # (an empty batch or no channel: the output [N, C, 1, ..., 1] has no element, whatever an average
            # over the spatial axes would be; onnx.reference divides by the empty spatial size first)
            x = args[0]
            outs = [np.zeros(x.shape[:2] + (1,) * (x.ndim - 2), x.dtype)]
        elif node.op_type == "DynamicQuantizeLinear":
            raise Beyond(node.op_type)
        elif node.op_type == "MatMulInteger" and len(args) > 2 and args[2] is not None and args[2].size > 1:
            # (onnx.reference subtracts a per-row a_zero_point along K, not along the rows: "an M element
            # vector [zp_1, zp_2, ..., zp_M]")
            raise Beyond("MatMulInteger with a per-row a_zero_point")
        else:
            given = {name: env[name] for name in node.input if name}
            outs = list(ReferenceEvaluator(node, opsets={"": opset}).run(None, given))
        for name, value in zip(node.output, outs, strict=False):
            env[name] = np.asarray(value)
    return [env[o.name] for o in model.graph.output]

