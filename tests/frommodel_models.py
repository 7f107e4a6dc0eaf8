"""Models for the ``cases --from-model`` self-tests: what ONNX Runtime's quantizer writes from a small float
model (static and dynamic, per tensor and per channel, int8 / uint8 / int16 / int4 / uint4, the contrib
operators, 4-bit blocked weights), and a hand-made model of what it does not write: float8 and blocked nodes,
a partial last block and a negative axis, a node the spec refuses, a scale computed at run time, a
quantization operator the checker does not know, and a DQ -> Relu -> Q pattern."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from .test_checker_real_models import _float_model, _Reader

F = TensorProto.FLOAT

#: name -> (activation type, weight type, per channel, extra options) of quantize_static in QDQ format
STATIC = {"u8": ("QUInt8", "QUInt8", False, {}), "s8-per-channel": ("QInt8", "QInt8", True, {}),
          "s16-act": ("QInt16", "QInt8", True, {}), "s4-per-channel": ("QUInt8", "QInt4", True, {}),
          "u4": ("QUInt16", "QUInt4", False, {}),
          "contrib-s16": ("QInt16", "QInt8", True, {"UseQDQContribOps": True})}


def ort_models(folder: Path) -> dict[str, Path]:
    """Every model ONNX Runtime's quantizer writes from the small float model, by name."""
    from onnxruntime import quantization as q
    from onnxruntime.quantization import matmul_nbits_quantizer as nbits

    logging.getLogger().setLevel(logging.ERROR)
    src = _float_model(folder / "float.onnx")
    out: dict[str, Path] = {}
    for name, (act, weight, per_channel, extra) in STATIC.items():
        out[name] = folder / f"{name}.onnx"
        q.quantize_static(str(src), str(out[name]), _Reader(), quant_format=q.QuantFormat.QDQ,
                          per_channel=per_channel, activation_type=getattr(q.QuantType, act),
                          weight_type=getattr(q.QuantType, weight), extra_options=extra)
    out["dynamic"] = folder / "dynamic.onnx"
    q.quantize_dynamic(str(src), str(out["dynamic"]), weight_type=q.QuantType.QInt8)
    for block, symmetric in ((32, True), (16, False)):
        name = f"blocked-int4-b{block}"
        quantizer = nbits.MatMulNBitsQuantizer(onnx.load(src), block_size=block, is_symmetric=symmetric,
                                               quant_format=q.QuantFormat.QDQ)
        quantizer.process()
        out[name] = folder / f"{name}.onnx"
        quantizer.model.save_model_to_file(str(out[name]))
    return out


def _t(name: str, elem: int, dims: list[int], values: object) -> TensorProto:
    return helper.make_tensor(name, elem, dims, list(np.asarray(values).reshape(-1)))


#: the hand-made model's nodes by name, and what each must become
HAND = {"q_f8": "case", "dq_f8": "case", "dq_w8_axis0": "case", "dq_w4_blocked": "case",
        "q_u4_blocked": "case",
        "dq_invalid": "case", "q_runtime_scale": "a parameter computed at run time",
        "bfp": "an operator the checker does not know", "qa": "case", "dqa": "case", "qr": "case",
        "dqr": "case"}


def hand_model(path: Path) -> Path:
    rng = np.random.default_rng(3)
    inits = [
        _t("s_f8", F, [], [0.05]), _t("z_f8", TensorProto.FLOAT8E4M3FN, [], [0.0]),
        _t("w8", TensorProto.FLOAT8E4M3FN, [16, 8], rng.uniform(-4, 4, 128)),
        _t("s_w8", F, [16], rng.uniform(0.01, 0.1, 16)),
        _t("z_w8", TensorProto.FLOAT8E4M3FN, [16], np.zeros(16)),
        _t("w4", TensorProto.INT4, [8, 40], rng.integers(-8, 8, 320)),
        _t("s_w4", F, [8, 2], -rng.uniform(0.01, 0.1, 16)),
        _t("z_w4", TensorProto.INT4, [8, 2], rng.integers(-2, 2, 16)),
        _t("s_b", F, [2, 64], rng.uniform(0.01, 0.1, 128)),
        _t("z_b", TensorProto.UINT4, [2, 64], rng.integers(0, 16, 128)),
        _t("w_bad", TensorProto.INT8, [4, 6], rng.integers(-100, 100, 24)), _t("s_bad", F, [5], [0.1] * 5),
        _t("z_bad", TensorProto.INT8, [5], [0] * 5), _t("z_rt", TensorProto.UINT8, [], [128]),
        _t("sa", F, [], [0.0213]), _t("za", TensorProto.UINT8, [], [131]), _t("sb", F, [], [0.0117]),
        _t("zb", TensorProto.UINT8, [], [3]),
    ]
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["x", "s_f8", "z_f8"], ["q8"], name="q_f8", saturate=0),
        node("DequantizeLinear", ["q8", "s_f8", "z_f8"], ["d8"], name="dq_f8"),
        node("DequantizeLinear", ["w8", "s_w8", "z_w8"], ["dw8"], name="dq_w8_axis0", axis=0),
        node("DequantizeLinear", ["w4", "s_w4", "z_w4"], ["dw4"], name="dq_w4_blocked", axis=-1,
             block_size=32),
        node("QuantizeLinear", ["xb", "s_b", "z_b"], ["qb"], name="q_u4_blocked", axis=0, block_size=2),
        node("DequantizeLinear", ["w_bad", "s_bad", "z_bad"], ["dbad"], name="dq_invalid", axis=1),
        node("QuantizeLinear", ["x", "s_rt", "z_rt"], ["qrt"], name="q_runtime_scale"),
        node("QuantizeBFP", ["x"], ["bfp", "bfp_shape", "bfp_strides"], name="bfp", domain="com.microsoft"),
        node("QuantizeLinear", ["x", "sa", "za"], ["qa"], name="qa"),
        node("DequantizeLinear", ["qa", "sa", "za"], ["da"], name="dqa"),
        node("Relu", ["da"], ["r"], name="relu"),
        node("QuantizeLinear", ["r", "sb", "zb"], ["qr"], name="qr"),
        node("DequantizeLinear", ["qr", "sb", "zb"], ["y"], name="dqr"),
    ]
    inputs = [helper.make_tensor_value_info("x", F, ["N", 8]),
              helper.make_tensor_value_info("xb", F, [4, 64]),
              helper.make_tensor_value_info("s_rt", F, [])]
    outputs = [helper.make_empty_tensor_value_info(n)
               for n in ("d8", "dw8", "dw4", "qb", "dbad", "qrt", "bfp", "y")]
    m = helper.make_model(helper.make_graph(nodes, "hand", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", 21),
                                         helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


#: the compute model's nodes between quantization nodes by name, and the family (or the reason) each must get
COMPUTE = {"conv_dw": "graph-compute-conv", "gemm": "graph-compute-matmul",
           "add": "graph-compute-elementwise", "mul": "graph-compute-elementwise",
           "leaky": "graph-compute-elementwise",
           "pool": "graph-compute-pool", "gap": "graph-compute-pool", "sigmoid": "graph-compute-exp",
           "softmax": "graph-compute-exp", "resize": "graph-compute-resize", "concat": "graph-data-movement",
           "matmul_w4": "graph-compute-float-output",
           "pool_ceil": "AveragePool: AveragePool ceil_mode 1: the oracle computes floor mode only",
           "tanh": "Tanh: an op the oracle does not compute (not a graph op of the case schema)"}


def compute_model(path: Path) -> Path:
    """A QDQ model with each compute op of the graph cases between quantization nodes, as toolchains write
    them: a depthwise Conv (8 groups, int8 per-channel weights, int32 bias), Gemm with transB and a bias,
    Add and Mul (a per-tensor int8 constant), LeakyRelu, AveragePool, GlobalAveragePool, Sigmoid, Softmax,
    Resize, Concat, weight-only int4 MatMul in blocks of 16 (a partial last block); an AveragePool the oracle
    does not compute (ceil_mode 1) and a Tanh, which no graph case holds."""
    rng = np.random.default_rng(7)
    u8 = TensorProto.UINT8
    inits = [_t("w_dw", TensorProto.INT8, [8, 1, 3, 3], rng.integers(-127, 128, 72)),
             _t("ws_dw", F, [8], rng.uniform(0.002, 0.02, 8)), _t("wz_dw", TensorProto.INT8, [8], [0] * 8),
             _t("b_dw", TensorProto.INT32, [8], rng.integers(-2000, 2000, 8)),
             _t("bs_dw", F, [8], rng.uniform(1e-5, 1e-4, 8)),
             _t("w_g", TensorProto.INT8, [16, 20], rng.integers(-127, 128, 320)),
             _t("ws_g", F, [16], rng.uniform(0.002, 0.02, 16)), _t("wz_g", TensorProto.INT8, [16], [0] * 16),
             _t("b_g", TensorProto.INT32, [16], rng.integers(-2000, 2000, 16)),
             _t("bs_g", F, [16], rng.uniform(1e-5, 1e-4, 16)),
             _t("w_m", TensorProto.INT8, [8, 1, 1], rng.integers(-127, 128, 8)), _t("ws_m", F, [], [0.01]),
             _t("w4", TensorProto.INT4, [40, 12], rng.integers(-8, 8, 480)),
             _t("ws4", F, [3, 12], rng.uniform(0.01, 0.1, 36)),
             _t("roi", F, [0], []), _t("scales", F, [4], [1, 1, 2, 2])]
    nodes: list[onnx.NodeProto] = []
    k = 0

    def quant(x: str, what: str) -> str:
        """x -> Q -> DQ with this tensor's own scale and zero point; the DQ's output."""
        nonlocal k
        k += 1
        inits.extend([_t(f"s{k}", F, [], [0.01 + 0.0037 * k]), _t(f"z{k}", u8, [], [100 + 3 * k])])
        nodes.append(helper.make_node("QuantizeLinear", [x, f"s{k}", f"z{k}"], [f"q{k}"], name=f"q_{what}"))
        nodes.append(helper.make_node("DequantizeLinear", [f"q{k}", f"s{k}", f"z{k}"], [f"d{k}"],
                                      name=f"dq_{what}"))
        return f"d{k}"

    def dq(w: str, s: str, z: str | None = None, **attrs: int) -> str:
        nodes.append(helper.make_node("DequantizeLinear", [w, s, *([z] if z else [])], [f"{w}_d"],
                                      name=f"dq_{w}", **attrs))
        return f"{w}_d"

    def op(name: str, op_type: str, inputs: list[str], **attrs: object) -> str:
        nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return quant(name, name)

    a = quant("x", "x")
    c = op("conv_dw", "Conv", [a, dq("w_dw", "ws_dw", "wz_dw", axis=0), dq("b_dw", "bs_dw", axis=0)],
           group=8, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    op("add", "Add", [a, c])
    op("mul", "Mul", [c, dq("w_m", "ws_m")])
    op("leaky", "LeakyRelu", [c], alpha=0.1)
    op("pool", "AveragePool", [c], kernel_shape=[2, 2], strides=[2, 2])
    op("pool_ceil", "AveragePool", [c], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    op("gap", "GlobalAveragePool", [c])
    op("sigmoid", "Sigmoid", [c])
    op("softmax", "Softmax", [c], axis=-1)
    op("resize", "Resize", [c, "roi", "scales"], mode="nearest")
    op("concat", "Concat", [a, c], axis=1)
    op("tanh", "Tanh", [c])
    op("gemm", "Gemm", [quant("x2", "x2"), dq("w_g", "ws_g", "wz_g", axis=0), dq("b_g", "bs_g", axis=0)],
       transB=1)
    nodes.append(helper.make_node("MatMul", ["x3", dq("w4", "ws4", axis=0, block_size=16)], ["y4"],
                                  name="matmul_w4"))
    inputs = [helper.make_tensor_value_info("x", F, [1, 8, 6, 6]),
              helper.make_tensor_value_info("x2", F, [3, 20]),
              helper.make_tensor_value_info("x3", F, ["N", 40])]
    ends = [n.output[0] for n in nodes if n.op_type == "DequantizeLinear" and n.name.startswith("dq_")
            and n.name[3:] in COMPUTE] + ["y4"]
    m = helper.make_model(helper.make_graph(nodes, "compute", inputs,
                                            [helper.make_tensor_value_info(n, F, None) for n in ends], inits),
                          opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


def save_external(src: Path, dst: Path) -> Path:
    """The model at ``src`` saved at ``dst`` with every initializer as raw data in one external file (only raw
    data is stored externally), ``ext.bin`` beside it."""
    from onnx import numpy_helper

    m = onnx.load(src)
    for t in m.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))
    onnx.save(m, dst, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.bin",
              size_threshold=0)
    return dst
