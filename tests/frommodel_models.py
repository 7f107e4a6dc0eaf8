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
