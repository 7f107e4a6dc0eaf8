"""No false findings on what ``onnxruntime.quantization`` writes, and the spec's silence kept as silence.

* Symmetric blocked int4 weight-only (MatMulNBitsQuantizer in QDQ format) stores negative block scales. The
  DequantizeLinear text gives the formula ``y = (x - x_zero_point) * x_scale`` and sets no range for the
  scale, so a negative scale is no finding at all, and a zero or non-finite one is a warning (QDQ014), not an
  error.
* A com.microsoft DequantizeLinear for a bias, with a one-element ``[1]`` scale and no ``axis``, is per-tensor
  (ambiguity catalogue: ms-one-element-no-axis, the reading the kernel and ONNX Runtime share).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_conformance.checker import check_file, check_model
from qdq_conformance.cli import main

from .test_checker_real_models import _float_model, _Reader

quantization = pytest.importorskip("onnxruntime.quantization")
QT = quantization.QuantType
F = TensorProto.FLOAT


def _not_clean(path: Path) -> list[str]:
    return [f.line() for f in check_file(path).findings if f.severity != "note"]


def test_symmetric_blocked_int4_with_negative_scales_checks_clean(tmp_path, capsys):
    nbits = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    src = onnx.load(_float_model(tmp_path / "float.onnx"))
    q = nbits.MatMulNBitsQuantizer(src, block_size=32, is_symmetric=True,
                                   quant_format=quantization.QuantFormat.QDQ)
    q.process()
    out = tmp_path / "blocked-symmetric.onnx"
    q.model.save_model_to_file(str(out))
    m = onnx.load(out)
    dq = [n for n in m.graph.node if n.op_type == "DequantizeLinear"]
    assert dq and all(any(a.name == "block_size" and a.i == 32 for a in n.attribute) for n in dq)
    scales = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert any((scales[n.input[1]] < 0).any() for n in dq)  # the case in question: negative block scales
    assert _not_clean(out) == []
    assert main(["check", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith(": 0 errors, 0 warnings, 0 notes")


@pytest.mark.parametrize("per_channel", [False, True])
def test_contrib_bias_with_a_one_element_scale_checks_clean(tmp_path, per_channel):
    logging.getLogger("onnxruntime").setLevel(logging.ERROR)
    out = tmp_path / "contrib.onnx"
    quantization.quantize_static(str(_float_model(tmp_path / "float.onnx")), str(out), _Reader(),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=per_channel,
                                 activation_type=QT.QUInt8, weight_type=QT.QInt8,
                                 extra_options={"UseQDQContribOps": True, "WeightSymmetric": True})
    m = onnx.load(out)
    inits = {t.name: t for t in m.graph.initializer}
    bias = next(n for n in m.graph.node
                if n.op_type == "DequantizeLinear" and n.input[0].startswith("conv_b"))
    assert bias.domain == "com.microsoft"
    if not per_channel:
        assert list(inits[bias.input[1]].dims) == [1] and not any(a.name == "axis" for a in bias.attribute)
    assert _not_clean(out) == []


def _ms_dq(x_shape: list | None, scale_shape: list[int], zp_shape: list[int] | None, axis: int | None = None,
           scale: float = 0.5) -> onnx.ModelProto:
    inits = [helper.make_tensor("s", F, scale_shape, [scale] * int(np.prod(scale_shape)))]
    names = ["x", "s"]
    if zp_shape is not None:
        inits.append(helper.make_tensor("z", TensorProto.INT32, zp_shape, [0] * int(np.prod(zp_shape))))
        names.append("z")
    node = helper.make_node("DequantizeLinear", names, ["y"], name="bias_dq", domain="com.microsoft",
                            **({} if axis is None else {"axis": axis}))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT32, x_shape)],
                          [helper.make_tensor_value_info("y", F, None)], inits)
    m = helper.make_model(g,
                          opset_imports=[helper.make_opsetid("", 21),
                                         helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 10
    return m


@pytest.mark.parametrize("x_shape", [[16], [1], [4, 16], ["N"], None])
@pytest.mark.parametrize("zp_shape", [None, [], [1]])
def test_ms_one_element_scale_without_axis_is_per_tensor(x_shape, zp_shape):
    report = check_model(_ms_dq(x_shape, [1], zp_shape), Path("."))
    assert report.nodes_checked == 1
    assert [f.line() for f in report.findings if f.severity != "note"] == []


def test_ms_longer_scale_without_axis_is_still_an_error():
    """The negative control: "If it's not specified ... 'x_scale' and 'x_zero_point' must be scalars"."""
    report = check_model(_ms_dq([16], [2], [2]), Path("."))
    assert {f.rule for f in report.findings if f.severity == "error"} == {"QDQ005"}


@pytest.mark.parametrize(("scale", "expected"), [(-0.5, []), (0.0, ["QDQ014"]), (float("inf"), ["QDQ014"]),
                                                 (float("nan"), ["QDQ014"])])
def test_scale_values_the_spec_does_not_decide_are_at_most_warnings(scale, expected):
    report = check_model(_ms_dq([16], [1], None, scale=scale), Path("."))
    assert [f.rule for f in report.findings] == expected
    assert all(f.severity == "warning" for f in report.findings)


def test_ir_8_kept_with_int4_weights_is_caught(tmp_path, capsys):
    """What the issue saw on real output: ONNX Runtime's quantizer keeps the float model's IR version 8 and
    writes int4 weights and zero points, a type IR 8 does not have (QDQ023); the nodes themselves check
    clean."""
    src = _float_model(tmp_path / "float.onnx")
    m = onnx.load(src)
    m.ir_version, m.opset_import[0].version = 8, 17
    onnx.save(m, src)
    logging.getLogger("onnxruntime").setLevel(logging.ERROR)
    out = tmp_path / "q.onnx"
    quantization.quantize_static(str(src), str(out), _Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=QT.QUInt8, weight_type=QT.QInt4)
    assert onnx.load(out).ir_version == 8
    assert main(["check", str(out)]) == 1
    errors = [ln for ln in capsys.readouterr().out.splitlines() if " error " in ln]
    assert (len(errors) == 1
            and errors[0].startswith(f"{out}: model: error QDQ023: IR version 8 has no int4 (IR 10); "
                                     "used by initializer "))
