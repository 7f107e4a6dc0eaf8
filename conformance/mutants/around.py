"""Mutants of the parameters around a compute op: what a fused kernel assumes of the DequantizeLinear and
QuantizeLinear nodes it absorbs (a bias scale, the scales' signs, where the zero point is added, float8
saturation, the code a Pad fills with).

Each is a graph rewrite (the zoo's ``rewrite_mutant``) on the nodes around a compute op (``COMPUTE_OPS``) or a
Pad: only graph cases can kill them, and the witness of each is a small graph on which the shortcut changes
the output.
"""

from __future__ import annotations

from collections.abc import Iterator

import ml_dtypes
import numpy as np
import onnx
from onnx import helper

from ..reference.compute import COMPUTE_OPS
from ..reference.graph_oracle import tensor_proto
from ..types import by_dtype
from .fused import DQ, GRAPH, Q, dq_op_q, graph_witness
from .fused_kernel import Feeds, values_of
from .mutant import F32, I8, U8, GraphWitness, a, rewrite_mutant

F8 = ml_dtypes.float8_e4m3fn


def _producers(g: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in g.node for o in n.output if o}


def _quantizers(g: onnx.GraphProto) -> Iterator[tuple[onnx.NodeProto, onnx.NodeProto]]:
    """(QuantizeLinear, the compute op feeding it directly) pairs."""
    made = _producers(g)
    for q in list(g.node):
        src = made.get(q.input[0]) if q.op_type == "QuantizeLinear" and q.input else None
        if src is not None and src.op_type in COMPUTE_OPS and src.domain in ("", "ai.onnx"):
            yield q, src


def _constant(g: onnx.GraphProto, value: np.ndarray, name: str) -> str:
    g.initializer.append(tensor_proto(value, name))
    return name


def _bias_scale(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    values = values_of(model, feeds)
    if values is None:
        return model, feeds
    g = model.graph
    made = _producers(g)
    for n in list(g.node):
        if n.op_type not in ("Conv", "Gemm") or len(n.input) < 3 or not n.input[2]:
            continue
        dqs = [made.get(i) for i in n.input[:3]]
        if any(d is None or d.op_type != "DequantizeLinear" or len(d.input) < 2 for d in dqs):
            continue
        xs, ws, bs = (values.get(d.input[1]) for d in dqs if d is not None)
        if xs is None or ws is None or bs is None or xs.size != 1 or bs.dtype != np.float32:
            continue
        product = (xs.reshape(()).astype(np.float32) * ws.astype(np.float32)).astype(np.float32)
        bias_dq = dqs[2]
        assert bias_dq is not None
        if product.size == 1:
            product = np.broadcast_to(product.reshape(()), bs.shape).copy()
        elif product.size == bs.size:
            product = product.reshape(bs.shape)
        elif bs.size == 1 and product.ndim == 1:  # per-channel weights: the bias per channel too
            kept = [at for at in bias_dq.attribute if at.name != "axis"]
            del bias_dq.attribute[:]
            bias_dq.attribute.extend([*kept, helper.make_attribute("axis", 0)])
        else:
            continue
        bias_dq.input[1] = _constant(g, product, f"{n.output[0]}_bias_scale_as_product")
    return model, feeds


rewrite_mutant("bias-scale-as-product",
               "a fused kernel adds the int32 bias codes to its accumulator as they are, taking the bias's "
               "scale to be x_scale * w_scale whatever its DequantizeLinear says",
               f"{GRAPH} {DQ} Conv / Gemm: the bias B (C) is added to the product.",
               witness=lambda: dq_op_q("Gemm", a([[4]], U8), a([[1]], I8), 0.5, 0, 1.0, 0.5, 0,
                                       bias=(a([3], np.int32), 0.25),
                                       note="bias 3 * 0.25 = 0.75, not 3 * (0.5 * 1.0) = 1.5"))(_bias_scale)


def _scale_abs(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    values = values_of(model, feeds)
    if values is None:
        return model, feeds
    g = model.graph
    made = _producers(g)
    for q, op in list(_quantizers(g)):
        nodes = [q] + [d for d in (made.get(i) for i in op.input if i) if d is not None and
                       d.op_type == "DequantizeLinear"]
        for k, node in enumerate(nodes):
            s = values.get(node.input[1]) if len(node.input) > 1 else None
            if s is not None and s.dtype.kind == "f" and (s.astype(np.float32) < 0).any():
                node.input[1] = _constant(g, np.abs(s), f"{op.output[0]}_abs_scale_{k}")
    return model, feeds


rewrite_mutant("fused-scale-abs",
               "a fused kernel computes its requantization from the magnitudes of the scales around the "
               "compute op (a multiplier taken positive), so a negative scale loses its sign",
               f"{GRAPH} {DQ} {Q} (No condition on the sign of a scale.)",
               witness=lambda: dq_op_q("Add", a([10], U8), a([2], I8), -0.5, 0, 0.5, 0.5, 128,
                                       note="scale -0.5: x 10 is -5, -5 + 1 = -4 (code 120), not 6 "
                                            "(code 140)")
               )(_scale_abs)


def _zp_before_round(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    values = values_of(model, feeds)
    if values is None:
        return model, feeds
    g = model.graph
    for q, _ in list(_quantizers(g)):
        v, ys = values.get(q.input[0]), values.get(q.input[1]) if len(q.input) > 1 else None
        yz = values.get(q.input[2]) if len(q.input) > 2 and q.input[2] else None
        if v is None or ys is None or yz is None or ys.size != 1 or yz.size != 1 or \
                yz.dtype.kind not in "iu" or v.dtype != np.float32 or ys.dtype != np.float32:
            continue
        with np.errstate(all="ignore"):
            shifted = (v / ys.reshape(())).astype(np.float32) + np.float32(yz.reshape(()))
        q.input[0] = _constant(g, shifted.astype(np.float32), f"{q.output[0]}_zp_first")
        q.input[1] = _constant(g, np.asarray(1.0, np.float32), f"{q.output[0]}_zp_first_unit")
        q.input[2] = _constant(g, np.zeros((), yz.dtype), f"{q.output[0]}_zp_first_zero")
    return model, feeds


rewrite_mutant("fused-zp-before-round",
               "a fused kernel adds the output zero point before rounding: round(v / y_scale + y_zero_point) "
               "(an odd zero point moves a tie to the odd code)", f"{GRAPH} {Q}",
               witness=lambda: dq_op_q("Add", a([3], U8), a([2], I8), 0.5, 0, 0.5, 1.0, 1,
                                       note="1.5 + 1 = 2.5: round to 2 (even), then + 1 = 3, not "
                                            "round(3.5) = 4")
               )(_zp_before_round)


def _float8_no_saturation(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    values = values_of(model, feeds)
    if values is None:
        return model, feeds
    for q, _ in list(_quantizers(model.graph)):
        out = values.get(q.output[0])
        if out is None or not by_dtype(out.dtype).is_float8:
            continue
        kept = [at for at in q.attribute if at.name != "saturate"]
        del q.attribute[:]
        q.attribute.extend([*kept, helper.make_attribute("saturate", 0)])
    return model, feeds


def _float8_witness() -> GraphWitness:
    return dq_op_q("Add", a([448.0], F8), a([448.0], F8), 1.0, 0, 1.0, 1.0, 0,
                   note="448 + 448 = 896 saturates to 448 (saturate = 1, the default), not NaN", opset=21)


rewrite_mutant("fused-float8-no-saturation",
               "a fused kernel with a float8 output converts its float result without saturation (an "
               "overflow becomes NaN or infinity) whatever the QuantizeLinear's saturate says",
               f"{GRAPH} QuantizeLinear: saturate ... It is true by default. All cases are fully described "
               "in two tables inserted in the operator descriptions.",
               witness=_float8_witness)(_float8_no_saturation)


def _pad_on_codes(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    values = values_of(model, feeds)
    if values is None:
        return model, feeds
    g = model.graph
    made = _producers(g)
    for k, q in enumerate(list(g.node)):
        pad = made.get(q.input[0]) if q.op_type == "QuantizeLinear" else None
        dq = made.get(pad.input[0]) if pad is not None and pad.op_type == "Pad" else None
        if pad is None or dq is None or dq.op_type != "DequantizeLinear" or \
                any(at.name == "mode" and at.s not in (b"", b"constant") for at in pad.attribute):
            continue
        same = all(_same(values, dq.input[i] if len(dq.input) > i else "", q.input[i] if len(q.input) > i
                         else "") for i in (1, 2))
        codes = values.get(dq.input[0])
        if not same or codes is None:
            continue
        zero = _constant(g, np.zeros((), codes.dtype), f"{q.output[0]}_code_zero")
        inputs = [dq.input[0], pad.input[1], zero, *pad.input[3:4]]
        g.node[k].CopyFrom(helper.make_node("Pad", inputs, [q.output[0]], name=f"{q.name}_on_codes"))
    return model, feeds


def _same(values: dict[str, np.ndarray], left: str, right: str) -> bool:
    if left == right:
        return True
    lv, rv = values.get(left), values.get(right)
    return lv is not None and rv is not None and lv.dtype == rv.dtype and lv.shape == rv.shape and \
        lv.tobytes() == rv.tobytes()


def _pad_witness() -> GraphWitness:
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]),
             helper.make_node("Pad", ["d", "pads"], ["p"]),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["y"])]
    return graph_witness(nodes, {"s": a(0.5, F32), "z": a(10, U8), "pads": np.array([1, 1], np.int64)},
                         {"x": a([10, 12], U8)}, "zero point 10: the pad value 0 is code 10, not code 0")


rewrite_mutant("pad-on-codes-code-zero",
               "runs DQ -> Pad -> Q (same parameters on both sides) as Pad on the codes, filling with the "
               "code 0 instead of the code of the constant value (the zero point's, for 0)",
               f"{GRAPH} {DQ} Pad: constant_value: A scalar value to be used if the mode chosen is "
               f"`constant` (by default it is 0 ...). {Q}", witness=_pad_witness)(_pad_on_codes)
