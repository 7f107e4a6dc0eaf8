"""``check`` reports every problem of a node (each rule once), blames the input that is wrong, and checks
nodes whose types onnx shape inference could not give with what the initializers and declarations do give."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.shape_inference
import pytest
from onnx import TensorProto, helper

from qdq_conformance.checker import check_model
from qdq_conformance.cli import main

F, U8, I8, I16 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT16


def _q(scale: list[int], zp: list[int] | None, x: list | None = (4, 8), op: str = "QuantizeLinear",  # type: ignore[assignment]
       x_type: int = F, zp_type: int = U8, opset: int = 21, extra: tuple = (),
       **attrs: object) -> onnx.ModelProto:
    """One Q (or DQ) node over x (a graph input, or the output of ``extra`` nodes), scale and zero point
    initializers of the given shapes."""
    import numpy as np

    inits = [helper.make_tensor("s", F, scale, [0.5] * int(np.prod(scale)))]
    names = ["x", "s"]
    if zp is not None:
        inits.append(helper.make_tensor("z", zp_type, zp, [0] * int(np.prod(zp))))
        names.append("z")
    node = helper.make_node(op, names, ["y"], name="node", **attrs)
    inputs = [helper.make_tensor_value_info("x" if not extra else "a", x_type,
                                            None if x is None else list(x))]
    g = helper.make_graph([*extra, node], "g", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.UNDEFINED,
                                                          None)], inits)
    m = helper.make_model(g,
                          opset_imports=[helper.make_opsetid("", opset),
                                         helper.make_opsetid("com.example", 1)])
    m.ir_version = 10
    return m


def _findings(m: onnx.ModelProto) -> dict[str, tuple[str | None, str]]:
    found = [f for f in check_model(m, Path("."), "m.onnx").findings if f.severity != "note"]
    by_rule = {f.rule: (f.input, f.message) for f in found}
    assert len(by_rule) == len(found), [f.line() for f in found]  # each rule once
    return by_rule


# --- every problem, each rule once
# --------------------------------------------------------------------------------


def test_a_bad_zero_point_type_and_an_out_of_range_axis_are_both_reported():
    """The issue's node: only the first (QDQ003) was reported."""
    m = _q([8], [8], op="DequantizeLinear", x_type=I8, axis=5)
    got = _findings(m)
    assert set(got) == {"QDQ003", "QDQ007"}
    assert got["QDQ003"][0] == "x_zero_point" and got["QDQ007"] == ("axis", "axis 5 is outside [-2, 1]")


def test_four_problems_of_one_node_are_four_findings():
    m = _q([8], [8], x_type=TensorProto.DOUBLE, axis=3, foo=1, output_dtype=I8)
    got = _findings(m)
    assert set(got) == {"QDQ002", "QDQ004", "QDQ007", "QDQ009"}
    assert got["QDQ002"][0] == "x" and got["QDQ009"][0] == "foo" and got["QDQ004"][0] == "output_dtype"


def test_a_rule_broken_twice_on_one_node_is_one_finding_naming_both_inputs():
    m = _q([8], [8], op="DequantizeLinear", x_type=I16, zp_type=I16, opset=13, axis=1)
    found = [f for f in check_model(m, Path(".")).findings if f.rule == "QDQ002"]
    assert len(found) == 1 and found[0].input is None
    assert found[0].message.startswith("x: type int16 is not allowed") and "; x_zero_point: type int16" in \
        found[0].message


def test_consequences_of_a_problem_are_not_reported_as_more_problems():
    """The output_dtype conflict (QDQ004) changes the output type: the declared type is not judged (QDQ019)
    against a type the checker had to pick; and a malformed axis does not lead to granularity findings."""
    m = _q([], [], output_dtype=I8)
    m.graph.output[0].type.tensor_type.elem_type = I8
    assert set(_findings(m)) == {"QDQ004"}
    m = _q([4], [4], x=(4, 8), axis=0)
    # a string: QDQ010, nothing more
    m.graph.node[0].attribute[0].CopyFrom(helper.make_attribute("axis", "0"))
    assert set(_findings(m)) == {"QDQ010"}


# --- the input at fault
# ----------------------------------------------------------------------------------------


def test_only_the_scale_length_wrong_blames_the_scale_not_the_zero_point():
    got = _findings(_q([7], [8], axis=1))
    assert set(got) == {"QDQ005"}
    subject, message = got["QDQ005"]
    assert subject == "y_scale" and "per-axis scale has length 7 but x has 8 along axis 1" in message
    assert "zero point shape [8] differs" not in message and "the zero point's shape [8] fits" in message


def test_only_the_blocked_scale_wrong_blames_the_scale():
    got = _findings(_q([4, 3], [4, 4], axis=1, block_size=2))
    assert set(got) == {"QDQ005"} and got["QDQ005"][0] == "y_scale"
    assert "the scale's shape [4, 3] is the one that is wrong" in got["QDQ005"][1]


def test_only_the_zero_point_wrong_blames_the_zero_point():
    got = _findings(_q([8], [7], axis=1))
    assert got == {"QDQ006": ("y_zero_point", "zero point shape [7] differs from scale shape [8]")}


def test_both_wrong_blames_both():
    got = _findings(_q([7], [6], axis=1))
    assert set(got) == {"QDQ005", "QDQ006"}
    assert got["QDQ005"][0] == "y_scale" and got["QDQ006"][0] == "y_zero_point"


def test_the_blame_on_the_command_line_is_one_line(tmp_path, capsys):
    onnx.save(_q([7], [8], axis=1), tmp_path / "m.onnx")
    assert main(["check", str(tmp_path / "m.onnx")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{tmp_path / 'm.onnx'}: node 0 'node' "
                                                   "ai.onnx::QuantizeLinear-21: error QDQ005: y_scale: "
                                                   "per-axis")


# --- nodes whose types inference could not give
# --------------------------------------------------------------


def _behind_unknown(**kw: object) -> onnx.ModelProto:
    """The node's x comes from an operator onnx knows nothing of: its type and shape are unknown."""
    return _q(extra=(helper.make_node("Mystery", ["a"], ["x"], domain="com.example"),), **kw)  # type: ignore[arg-type]


def test_an_unknown_x_type_still_checks_the_scale_zero_point_and_attributes():
    m = _behind_unknown(scale=[8], zp=[7], zp_type=TensorProto.DOUBLE, axis=1, foo=2)
    report = check_model(m, Path("."))
    rules = {f.rule for f in report.findings}
    assert rules == {"QDQ002", "QDQ006", "QDQ009", "QDQ020"}, [f.line() for f in report.findings]
    note = next(f for f in report.findings if f.rule == "QDQ020")
    assert note.input == "x" and "type and shape of x ('x') could not be determined" in note.message


def test_an_unknown_x_shape_still_checks_the_scale_against_the_attributes():
    """A rank-2 scale without block_size fits no granularity, whatever x is."""
    got = _findings(_behind_unknown(scale=[2, 4], zp=[2, 4], axis=1))
    assert set(got) == {"QDQ005"} and got["QDQ005"][0] == "y_scale"


def test_an_unknown_x_is_no_finding_by_itself():
    report = check_model(_behind_unknown(scale=[8], zp=[8], axis=1), Path("."))
    assert [f.rule for f in report.findings] == ["QDQ020"]


@pytest.fixture
def inference_fails(monkeypatch):
    """onnx shape inference raising, whatever the reason (real models: a contrib op, a malformed
    subgraph...)."""
    def fail(*_: object, **__: object) -> None:
        raise onnx.shape_inference.InferenceError("[ShapeInferenceError] something in the model")
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", fail)


def test_when_inference_fails_the_type_rules_are_still_checked(inference_fails):
    relu = helper.make_node("Relu", ["a"], ["x"], name="relu")
    m = _q([8], [8], zp_type=I16, opset=13, axis=1, extra=(relu,))
    m.graph.input[0].type.tensor_type.shape.dim.add().dim_value = 4
    m.graph.input[0].type.tensor_type.shape.dim.add().dim_value = 8
    report = check_model(m, Path("."), "m.onnx")
    lines = [f.line() for f in report.findings]
    assert any("onnx shape inference failed" in ln and "QDQ020" in ln for ln in lines)
    assert {f.rule for f in report.findings if f.severity == "error"} == {"QDQ002"}, lines
    assert next(f for f in report.findings if f.rule == "QDQ002").input == "y_zero_point"
