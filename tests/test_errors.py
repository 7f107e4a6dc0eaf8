"""Everything the kernel must not compute raises SpecViolation naming op, version, input and rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qdq_conformance.errors import SpecViolation
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.reference import evaluate, run
from qdq_conformance.rules import RULES

F32 = np.float32


def raises(rule, fn, *args, match=None):
    with pytest.raises(SpecViolation) as info:
        fn(*args)
    assert info.value.rule == rule, str(info.value)
    assert info.value.rule in RULES
    if match:
        assert match in str(info.value)
    return info.value


def Q(version, inputs, attrs=None, domain="ai.onnx", op="QuantizeLinear"):
    return evaluate(domain, op, version, inputs, attrs or {})


def DQ(version, inputs, attrs=None):
    return evaluate("ai.onnx", "DequantizeLinear", version, inputs, attrs or {})


def test_type_not_allowed_at_version_names_input_and_version():
    e = raises("QDQ002", Q, 13, [np.zeros(2, F32), F32(1), np.zeros((), np.int16)])
    assert (e.op, e.version, e.input) == ("QuantizeLinear", 13, "y_zero_point")
    assert "ai.onnx::QuantizeLinear-13" in str(e) and "int16" in str(e)
    raises("QDQ002", Q, 21, [np.zeros(2, F32), F32(1), np.zeros((), ml_dtypes.int2)])
    raises("QDQ002", DQ, 19, [np.zeros(2, np.int16), F32(1)])
    raises("QDQ002", Q, 19, [np.zeros(2, np.float16), F32(1)])  # x and scale share T1 before 23


def test_zero_point_type_must_match_x_for_dequantize():
    raises("QDQ003", DQ, 21, [np.zeros(2, np.uint8), F32(1), np.zeros((), np.int8)])


def test_output_dtype_conflicting_with_zero_point():
    raises("QDQ004", Q, 21, [np.zeros(2, F32), F32(1), np.zeros((), np.uint8)],
           {"output_dtype": TensorProto.INT8})
    raises("QDQ004", Q, 21, [np.zeros(2, F32), F32(1)], {"output_dtype": TensorProto.FLOAT})


def test_shapes():
    raises("QDQ006", Q, 13, [np.zeros((2, 3), F32), np.ones(3, F32), np.zeros(2, np.uint8)])
    raises("QDQ005", Q, 13, [np.zeros((2, 3), F32), np.ones(4, F32)])
    raises("QDQ005", Q, 10, [np.zeros((2, 3), F32), np.ones(3, F32)])
    raises("QDQ005", Q, 19, [np.zeros((2, 3), F32), np.ones((2, 3), F32)])
    raises("QDQ005", Q, 21, [np.zeros((2, 4), F32), np.ones((2, 2), F32)])  # rank-2 scale needs block_size


def test_axis_out_of_range():
    raises("QDQ007", Q, 13, [np.zeros((2, 3), F32), np.ones(3, F32)], {"axis": 2})
    raises("QDQ007", Q, 13, [np.zeros((2, 3), F32), np.ones(2, F32)], {"axis": -3})


@pytest.mark.parametrize("block_size,ok", [(2, False), (3, True), (5, True), (6, False)])
def test_block_size_range(block_size, ok):
    # Di = 6, Si = 2: [ceil(6/2), ceil(6/1) - 1] = [3, 5]
    args = [np.zeros((2, 6), F32), np.ones((2, 2), F32)]
    if ok:
        assert Q(21, args, {"axis": 1, "block_size": block_size})[0].shape == (2, 6)
    else:
        raises("QDQ008", Q, 21, args, {"axis": 1, "block_size": block_size})


def test_block_size_negative_and_before_21():
    raises("QDQ010", Q, 21, [np.zeros((2, 6), F32), np.ones((2, 2), F32)], {"block_size": -1})
    raises("QDQ009", Q, 19, [np.zeros((2, 6), F32), np.ones((2, 2), F32)], {"block_size": 3})


def test_attribute_not_defined_at_version():
    raises("QDQ009", Q, 10, [np.zeros(2, F32), F32(1)], {"axis": 0})
    raises("QDQ009", Q, 21, [np.zeros(2, F32), F32(1)], {"precision": TensorProto.FLOAT})
    raises("QDQ009", DQ, 21, [np.zeros(2, np.uint8), F32(1)], {"output_dtype": TensorProto.FLOAT})


def test_precision_values():
    raises("QDQ010", Q, 23, [np.zeros(2, F32), F32(1)], {"precision": TensorProto.STRING})


def test_missing_inputs_and_too_many():
    raises("QDQ011", Q, 13, [np.zeros(2, F32), None])
    raises("QDQ011", Q, 13, [np.zeros(2, F32), F32(1), np.zeros((), np.uint8), F32(1)])


def test_e8m0_scale_without_output_dtype():
    s = np.array(127, np.uint8).view(ml_dtypes.float8_e8m0fnu)
    raises("QDQ013", DQ, 24, [np.zeros(2, np.uint8), s])


def test_unknown_operator_version_and_structure():
    raises("QDQ001", evaluate, "ai.onnx", "QuantizeLinear", 11, [np.zeros(2, F32), F32(1)])
    raises("QDQ001", evaluate, "com.example", "QuantizeLinear", 1, [np.zeros(2, F32), F32(1)])
    m = single_node_model("ai.onnx", "QuantizeLinear", 9, [("x", np.zeros(2, F32)), ("s", F32(1))],
                          [("y", TensorProto.UINT8, None)])
    raises("QDQ001", run, m, {"x": np.zeros(2, F32), "s": F32(1)}, match="predates")
    two = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["a"], ["b"]), helper.make_node("Relu", ["b"], ["c"])], "g", [], []))
    raises("QDQ012", run, two, {})
    m = single_node_model("ai.onnx", "QuantizeLinear", 13, [("x", np.zeros(2, F32)), ("s", F32(1))],
                          [("y", TensorProto.UINT8, None)])
    raises("QDQ011", run, m, {"x": np.zeros(2, F32)}, match="'s'")


def test_opset_resolution_picks_highest_since_version():
    m = single_node_model("ai.onnx", "QuantizeLinear", 22, [("x", np.zeros(2, F32)), ("s", F32(1))],
                          [("y", TensorProto.UINT8, None)], {"block_size": 0})
    assert run(m, {"x": np.array([1, 2], F32), "s": F32(1)})[0].tolist() == [1, 2]  # resolves to 21
    m.opset_import[0].version = 20
    raises("QDQ009", run, m, {"x": np.array([1, 2], F32), "s": F32(1)})  # 19 has no block_size
    assert isinstance(m, onnx.ModelProto)
