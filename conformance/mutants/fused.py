"""Mutants of fused quantized kernels: DQ -> Conv / MatMul / Gemm -> Q run as one integer kernel
(:mod:`.fused_kernel`: QLinearConv, QLinearMatMul, QGemm, MatMulNBits) with one shortcut in it.

Each is a graph rewrite in the zoo's style: the model is rewritten (the compute op replaced by the fused
kernel's output) and the kernel runs the rest, so only graph cases around a compute op can kill them. The
witness of each is a small graph on which the shortcut changes the codes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ml_dtypes
import numpy as np
import onnx
from onnx import helper

from ..reference.graph_oracle import tensor_proto
from ..types import by_dtype
from .fused_kernel import Feeds, Shortcut, fuse, values_of
from .mutant import F32, I8, I32, U8, GraphWitness, a, rewrite_mutant

DQ = "DequantizeLinear: The dequantization formula is y = (x - x_zero_point) * x_scale."
Q = ("QuantizeLinear: y = saturate ((x / y_scale) + y_zero_point). For (x / y_scale), it rounds to the "
     "nearest even.")
GRAPH = ("ONNX IR: a model's outputs are its nodes', each node executed in topological order on its inputs' "
         "values.")
CONV = ("Conv: The convolution operator consumes an input tensor and a filter, and computes the output. "
        "pads: ... the number of pixels added to the beginning and end part of the corresponding axis (the "
        "value 0).")
MATMUL = "MatMul: Matrix product that behaves like numpy.matmul."


def graph_witness(nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray], feeds: dict[str, np.ndarray],
                  note: str, opset: int = 21) -> GraphWitness:
    """A witness graph: ``feeds`` its inputs, ``inits`` its initializers, the last node's output its
    output."""
    def build() -> onnx.ModelProto:
        ins = [helper.make_tensor_value_info(k, by_dtype(v.dtype).proto, list(v.shape))
               for k, v in feeds.items()]
        out = [helper.make_tensor_value_info(nodes[-1].output[0], onnx.TensorProto.UNDEFINED, None)]
        g = helper.make_graph(nodes, "witness", ins, out, [tensor_proto(v, k) for k, v in inits.items()])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return GraphWitness(build, feeds, note)


def dq_op_q(op: str, x: np.ndarray, w: np.ndarray, xs: float, xz: int, ws: np.ndarray | float, ys: float,
            yz: int, *, wz: np.ndarray | None = None,
            bias: tuple[np.ndarray, np.ndarray | float] | None = None, w_attrs: dict[str, int] | None = None,
            attrs: dict[str, object] | None = None, note: str = "", opset: int = 21) -> GraphWitness:
    """DQ(x) and DQ(w) (and DQ(int32 bias)) -> ``op`` -> Q: a fused kernel's pattern, as a witness."""
    inits = {"xs": a(xs, F32), "xz": np.asarray(xz, x.dtype), "w": w, "ws": np.asarray(ws, np.float32),
             "ys": a(ys, F32), "yz": np.asarray(yz, x.dtype)}
    w_inputs = ["w", "ws"] + (["wz"] if wz is not None else [])
    if wz is not None:
        inits["wz"] = wz
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"]),
             _with(helper.make_node("DequantizeLinear", w_inputs, ["wd"]), w_attrs)]
    op_inputs = ["xd", "wd"]
    if bias is not None:
        inits["b"], inits["bs"] = bias[0], np.asarray(bias[1], np.float32)
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0))
        op_inputs.append("bd")
    nodes += [_with(helper.make_node(op, op_inputs, ["c"]), attrs),
              helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
    return graph_witness(nodes, inits, {"x": x}, note, opset)


def _with(node: onnx.NodeProto, attrs: Mapping[str, object] | None) -> onnx.NodeProto:
    """``node`` with the attributes ``attrs`` (as ``helper.make_node``'s keywords would give them)."""
    node.attribute.extend(helper.make_attribute(k, v) for k, v in sorted((attrs or {}).items()))
    return node


def _fused(id: str, shortcut: str, violates: str, sc: Shortcut, witness: Callable[[], GraphWitness]) -> None:
    kernel = fuse(sc)

    def rewrite(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
        return kernel(model, feeds)
    rewrite_mutant(id, shortcut, violates, witness=witness)(rewrite)


_fused("fused-pad-code-zero",
       "a fused convolution pads x with the code 0 instead of x's zero point (whose value is the real 0 the "
       "spec pads with)", f"{GRAPH} {DQ} {CONV}", Shortcut(pad_code_zero=True),
       lambda: dq_op_q("Conv", a([[[10, 12, 14]]], U8), a([[[1, 1, 1]]], I8), 0.5, 10, 1.0, 0.5, 0,
                       attrs={"pads": [1, 1]}, note="x zero point 10: the pads are the value 0, code 10"))

_fused("fused-weight-zero-point-ignored",
       "a fused kernel takes the weights' zero point as 0 (written for symmetric weights)",
       f"{GRAPH} {DQ} {MATMUL}", Shortcut(weight_zero_point=False),
       lambda: dq_op_q("MatMul", a([[2, 3]], U8), a([[130], [126]], U8), 0.5, 0, 0.25, 0.5, 0, wz=a(128, U8),
                       note="uint8 weights with zero point 128: the weights are 2 and -2, not 130 and 126"))

_fused("fused-pair-sum-int16",
       "a fused uint8 x int8 kernel sums the raw products two by two, each pair saturated to int16 (x86's "
       "VPMADDUBSW), before accumulating in int32", f"{GRAPH} {DQ} {MATMUL}", Shortcut(pair_saturation=True),
       lambda: dq_op_q("MatMul", a([[255, 255]], U8), a([[127], [127]], I8), 1.0, 0, 1.0, 256.0, 0,
                       note="255 * 127 + 255 * 127 = 64770 saturates to 32767 in int16"))

_fused("fused-block-accumulator-int16",
       "a fused kernel for blocked weights accumulates each block's integer dot product in int16 (enough for "
       "blocks of 16 uint8 x int4 products), so longer blocks wrap",
       f"{GRAPH} {DQ} Blocked dequantization: ... each of its elements used for block_size consecutive "
       f"elements. {MATMUL}", Shortcut(block_bits=16),
       lambda: dq_op_q("MatMul", np.full((1, 32), 255, np.uint8), a(np.full((32, 1), -8), ml_dtypes.int4),
                       1.0, 0, np.ones((1, 1), np.float32), 256.0, 0, w_attrs={"axis": 0, "block_size": 32},
                       note="a block of 32 products 255 * -8 = -65280 wraps in int16 to 256"))

_fused("fused-accumulator-wraps-int32",
       "a fused kernel accumulates the products and the bias codes in int32 that wraps on overflow (the "
       "float computation the spec defines has no such limit)", f"{GRAPH} {DQ} {CONV}",
       Shortcut(accumulator_bits=32),
       lambda: dq_op_q("Conv", a([[[255]]], U8), a([[[127]]], I8), 1.0, 0, 2.0**-16, 2.0**15, 0,
                       bias=(a([2**31 - 1000], I32), 2.0**-16),
                       note="bias code 2**31 - 1000 plus 255 * 127 passes 2**31 - 1: int32 wraps negative"))

_fused("fused-multiplier-16-bit",
       "a fused kernel keeps the requantization multiplier x_scale * w_scale / y_scale with 16 significant "
       "bits (a Q0.15 fixed-point multiplier)", f"{GRAPH} {DQ} {Q}", Shortcut(multiplier_bits=16),
       lambda: dq_op_q("MatMul", a([[211, 16]], U8), a([[7], [1]], I8), 2.0**-4, 0, 2.0**-4, 0.0877, 0,
                       note="1493 / 256 / 0.0877 = 66.4998 (code 66): "
                            "a 16-bit multiplier gives 66.5005 (67)"))


def _activations_int8(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    """MatMul(float A, DQ(w)): A quantized to int8 per block of K (the weights' blocks, or all of K), scale
    max|A| / 127, round half to even, then the integer dot product scaled back."""
    values = values_of(model, feeds)
    if values is None:
        return model, feeds
    g = model.graph
    for k, n in enumerate(list(g.node)):
        if n.op_type != "MatMul" or n.domain not in ("", "ai.onnx"):
            continue
        producers = {o: p for p in g.node for o in p.output}
        if n.input[0] in producers and producers[n.input[0]].op_type == "DequantizeLinear":
            continue  # the activations are quantized already: no MatMulNBits path
        dq = producers.get(n.input[1])
        wd, act = values.get(n.input[1]), values.get(n.input[0])
        if dq is None or dq.op_type != "DequantizeLinear" or wd is None or act is None or wd.ndim != 2 or \
                act.dtype != np.float32:
            continue
        block = next((int(at.i) for at in dq.attribute if at.name == "block_size"), 0) or wd.shape[0]
        a64 = act.astype(np.float64)
        blocks = [slice(s, min(s + block, wd.shape[0])) for s in range(0, wd.shape[0], block)]
        out = np.zeros((*a64.shape[:-1], wd.shape[1]))
        for b in blocks:
            amax = np.abs(a64[..., b]).max(axis=-1, keepdims=True)
            scale = np.where(amax > 0, (amax / 127).astype(np.float32).astype(np.float64), 1.0)
            codes = np.clip(np.rint(a64[..., b] / scale), -127, 127)
            out += (codes @ wd[b].astype(np.float64)) * scale
        name = f"{n.output[0]}_int8_activations"
        g.initializer.append(tensor_proto(out.astype(np.float32), name))
        g.node[k].CopyFrom(helper.make_node("Identity", [name], [n.output[0]], name=f"{n.name}_fused"))
    return model, feeds


def _activations_witness() -> GraphWitness:
    x = a([[27.25, 1.0]], F32)
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"]),
             helper.make_node("MatMul", ["x", "wd"], ["y"])]
    return graph_witness(nodes, {"w": a([[1], [1]], I8), "ws": a(1.0, F32)}, {"x": x},
                         "27.25 in int8 steps of 27.25 / 127 comes back as 27.25, 1.0 as 1.0729", opset=21)


rewrite_mutant("activations-quantized-int8",
               "a MatMul with dequantized weights (MatMulNBits) quantizes its float activations to int8 per "
               "block of K (scale max|A| / 127) and computes an integer dot product",
               f"{GRAPH} {MATMUL} {DQ}", witness=_activations_witness)(_activations_int8)
