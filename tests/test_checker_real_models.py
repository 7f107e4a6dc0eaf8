"""Models quantized by ONNX Runtime's own quantization tool check clean (no error, no warning).

A small float model (Conv, Relu, Reshape, MatMul) is quantized with ``onnxruntime.quantization``: static QDQ,
per-tensor and per-channel, int8 / uint8 / int16 / uint16 activations, int8 / uint8 / int4 / uint4 weights,
the com.microsoft contrib Q/DQ ops, and blocked weight-only int4 (MatMulNBitsQuantizer in QDQ format).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_conformance.checker import check_file

quantization = pytest.importorskip("onnxruntime.quantization")
QT = quantization.QuantType


def _float_model(path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "conv_w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "conv_b"),
             numpy_helper.from_array(rng.standard_normal((8 * 6 * 6, 64)).astype(np.float32), "fc_w"),
             numpy_helper.from_array(np.array([1, -1], np.int64), "shape")]
    nodes = [helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shape"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "fc_w"], ["y"], name="fc")]
    g = helper.make_graph(nodes, "small",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


class _Reader(quantization.CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        self._data = iter([{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(4)])

    def get_next(self):  # noqa: ANN201 - the base class's signature
        return next(self._data, None)


CONFIGS = {
    "uint8-per-tensor": (QT.QUInt8, QT.QUInt8, False, {}),
    "int8-per-channel": (QT.QInt8, QT.QInt8, True, {}),
    "int16-act-int8-per-channel": (QT.QInt16, QT.QInt8, True, {}),
    "uint16-act-uint8-weights": (QT.QUInt16, QT.QUInt8, False, {}),
    "int4-weights-per-channel": (QT.QUInt8, QT.QInt4, True, {}),
    "uint4-weights": (QT.QUInt16, QT.QUInt4, False, {}),
    "contrib-ops-int16": (QT.QInt16, QT.QInt8, True, {"UseQDQContribOps": True}),
}


def _assert_clean(path: Path, expect_ops: set[str]) -> None:
    m = onnx.load(path, load_external_data=False)
    ops = {(n.domain or "ai.onnx", n.op_type) for n in m.graph.node if n.op_type.endswith("uantizeLinear")}
    assert expect_ops <= {op for _, op in ops}, ops
    report = check_file(path)
    assert report.nodes_checked >= 4
    assert [f.line() for f in report.findings if f.severity != "note"] == []
    assert all(f.rule == "QDQ020" for f in report.findings)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_static_qdq_models_check_clean(tmp_path, name):
    act, weight, per_channel, extra = CONFIGS[name]
    src = _float_model(tmp_path / "float.onnx")
    out = tmp_path / f"{name}.onnx"
    logging.getLogger("onnxruntime").setLevel(logging.ERROR)
    quantization.quantize_static(str(src), str(out), _Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=per_channel, activation_type=act, weight_type=weight,
                                 extra_options=extra)
    _assert_clean(out, {"QuantizeLinear", "DequantizeLinear"})


def test_blocked_weight_only_int4_checks_clean(tmp_path):
    nbits = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    src = onnx.load(_float_model(tmp_path / "float.onnx"))
    q = nbits.MatMulNBitsQuantizer(src, bits=4, block_size=32, is_symmetric=False,
                                   quant_format=quantization.QuantFormat.QDQ)
    q.process()
    out = tmp_path / "blocked.onnx"
    q.model.save_model_to_file(str(out))
    m = onnx.load(out)
    dq = [n for n in m.graph.node if n.op_type == "DequantizeLinear"]
    assert any(a.name == "block_size" and a.i == 32 for n in dq for a in n.attribute)
    report = check_file(out)
    assert report.nodes_checked == 1 and [f.line() for f in report.findings] == []


def test_a_corrupted_quantized_model_is_caught(tmp_path):
    """The negative control: the same tool's output with one axis made out of range fails with QDQ007."""
    src = _float_model(tmp_path / "float.onnx")
    out = tmp_path / "q.onnx"
    quantization.quantize_static(str(src), str(out), _Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=QT.QUInt8, weight_type=QT.QInt8)
    m = onnx.load(out)
    dq = next(n for n in m.graph.node
              if n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute))
    next(a for a in dq.attribute if a.name == "axis").i = 7
    onnx.save(m, out)
    assert {f.rule for f in check_file(out).findings if f.severity == "error"} == {"QDQ007"}
