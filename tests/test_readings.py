"""The ambiguity catalogue's readings, each checked against values worked out by hand (never the kernel
re-run), the case-status policy built on them, and the runner's judgement of implementation-defined cases."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from qdq_conformance.ambiguities import Reading, catalogue
from qdq_conformance.generators.status import catalogue_readings, decide
from qdq_conformance.reference import evaluate
from qdq_conformance.reference.readings import COMPUTED, NOT_COMPUTED, readings
from qdq_conformance.runner.outcome import classify
from qdq_conformance.runner.outputs import RawResult

F16, F32, I32 = np.float16, np.float32, np.int32
E4M3 = ml_dtypes.float8_e4m3fn
SEEN: set[tuple[str, str]] = set()


def _readings(domain: str, op: str, version: int, inputs: list, attrs: dict | None = None,
              declared: str | None = None) -> dict[str, dict[str, list | None]]:
    """{entry: {reading: first output as a list, or None for a rejection}}."""
    attrs = attrs or {}
    outputs = evaluate(domain, op, version, inputs, attrs)
    got: dict[str, dict[str, list | None]] = {}
    for r in catalogue_readings(domain, op, version, inputs, attrs, outputs, declared):
        SEEN.add((r.ambiguity, r.name))
        got.setdefault(r.ambiguity, {})[r.name] = None if r.outputs is None else r.outputs[0].tolist()
    return got


def _same(a: list | None, b: list | None) -> bool:
    if a is None or b is None:
        return a is b
    return all((math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
               for x, y in zip(a, b, strict=True))


def test_division_precision_scale_type_against_float32():
    # x = 1025 and y_scale = 8.1015625 are float16 values; 1025 / 8.1015625 = 126.5188.. . In float16 (ulp
    # 1/16 on [64, 128)) that rounds to the tie 126.5, which rounds half to even to 126; in float32 it stays
    # 126.5188.. and rounds to 127.
    for domain, version in (("", 21), ("com.microsoft", 1)):
        got = _readings(domain, "QuantizeLinear", version,
                        [np.array([1025], F16), np.array(8.1015625, F16), np.array(0, np.int8)])
        assert got["division-precision"] == {"scale-type": [126], "float32": [127]}


def test_mixed_precision_rounds_the_exact_quotient_to_the_precision_not_the_exact_quotient_itself():
    # x = 121.5 + 2**-5 + 2**-14 (float32), y_scale = 3 (float16, the precision). Operands rounded: x to
    # float16 (ulp 1/16) is 121.5625, / 3 = 40.52.. -> 41. Exact quotient 40.51044.. rounded to float16 (ulp
    # 1/32 on [32, 64)) is 40.5, a tie, -> 40.
    x = 121.5 + 2**-5 + 2**-14
    got = _readings("", "QuantizeLinear", 23, [np.array([x], F32), np.array(3.0, F16), np.array(0, np.int8)])
    assert got["mixed-precision-operands"] == {"operands-rounded": [41], "exact-quotient": [40]}
    # The reading rounds the quotient to the precision: 40.5 is a tie only because of that rounding; the exact
    # quotient itself (the old, wrong alternative) would give 41 as well and hide the question.


def test_int32_precision_truncation_exact_and_float32():
    # 7 / 2 = 3.5 -> 4 (half to even), truncated 3; -7 / 2 -> -4, truncated -3.
    got = _readings("", "QuantizeLinear", 19,
                    [np.array([7, -7], I32), np.array(2, I32), np.array(0, np.int8)])
    assert got["int32-precision"] == {"exact": [4, -4], "float32": [4, -4], "truncation": [3, -3]}
    # 16908289 = 2**24 + 2**17 + 1: float32 rounds it to 16908288 (tie, even), / 2**18 = 64.5 -> 64; exactly
    # 64.5000038 -> 65; truncated 64.
    got = _readings("", "QuantizeLinear", 19, [np.array([16908289], I32), np.array(2**18, I32),
                                               np.array(0, np.int8)])
    assert got["int32-precision"] == {"exact": [65], "float32": [64], "truncation": [64]}
    # From version 23 "The type of `y_scale` determines the precision of the division operation" (int32): a
    # float32 division is no reading there (issue 37's audit).
    got = _readings("", "QuantizeLinear", 23, [np.array([16908289], I32), np.array(2**18, I32),
                                               np.array(0, np.int8)])
    assert got["int32-precision"] == {"exact": [65], "truncation": [64]}


def test_int32_input_division_at_versions_10_and_13():
    # 16859135 is odd and above 2**24: float32 rounds it to 16859136 (tie to even); / 98304 = 171.5 exactly ->
    # 172. Exact quotient 171.49998983 -> 171, whether rounded to float32 first or not.
    for version in (10, 13):
        got = _readings("", "QuantizeLinear", version, [np.array([16859135], I32), np.array(98304.0, F32),
                                                         np.array(0, np.uint8)])
        assert got["int32-input-division"] == {"float32-operands": [172], "exact-quotient": [171],
                                               "exact": [171]}
    # 16908289 / 2**18: float32 operands 64.5 -> 64; exact quotient 64.5000038 rounded to float32 is the tie
    # 64.5 (ulp 2**-17) -> 64; unrounded -> 65.
    got = _readings("", "QuantizeLinear", 13, [np.array([16908289], I32), np.array(2.0**18, F32),
                                               np.array(0, np.uint8)])
    assert got["int32-input-division"] == {"float32-operands": [64], "exact-quotient": [64], "exact": [65]}
    assert "int32-input-division" not in _readings("", "QuantizeLinear", 13, [np.array([1.5], F32),
                                                                              np.array(1.0, F32)])


def test_e8m0_precision_of_x():
    got = _readings("", "QuantizeLinear", 24, [np.array([16908289], I32),
                                               np.array(2.0**18, ml_dtypes.float8_e8m0fnu),
                                               np.array(0, np.int8)])
    assert got["e8m0-precision"] == {"float32": [64], "x-type": [65]}


def test_dq_precision_literal_widened_and_float32():
    # int32 x = 16785409 = 16392 * 1024 + 1, scale 2**-10 (float16), output float16.
    # literal: x to float16 overflows (> 65504) -> inf. widened: 16392.0009765625 -> 16400 (ulp 16). float32:
    # x to float32 is 16785408 (tie to even), * 2**-10 = 16392, a float16 tie -> 16384 (even).
    got = _readings("", "DequantizeLinear", 19, [np.array([16785409], I32), np.array(2**-10, F16)])
    assert got["dq-precision"] == {"literal": [math.inf], "widened": [16400.0], "float32": [16384.0]}
    # int16 x = 2049: float16 holds 2048 (tie to even); literal 2048 * 0.75 = 1536; widened 1536.75 -> 1537.
    got = _readings("com.microsoft", "DequantizeLinear", 1, [np.array([2049], np.int16), np.array(0.75, F16)])
    assert got["dq-precision"] == {"literal": [1536.0], "widened": [1537.0], "float32": [1537.0]}
    # From version 21 "The output type also determines the precision of the multiplication operation": a
    # float32 product is no reading there (issue 37's audit), literal and widened remain.
    got = _readings("", "DequantizeLinear", 21, [np.array([16785409], I32), np.array(2**-10, F16)])
    assert got["dq-precision"] == {"literal": [math.inf], "widened": [16400.0]}


def test_nan_to_integer_readings_and_the_free_element():
    inputs = [np.array([math.nan, 1.0], F32), np.array(1.0, F32), np.array(3, np.uint8)]
    got = _readings("", "QuantizeLinear", 19, inputs)
    assert got["nan-to-integer"] == {"zero-point": [3, 4], "zero": [0, 4], "lower-bound": [0, 4],
                                     "upper-bound": [255, 4], "any": [3, 4]}
    outputs = evaluate("", "QuantizeLinear", 19, inputs)
    free = [r for r in readings("", "QuantizeLinear", 19, inputs, {}, outputs) if r.name == "any"][0]
    assert free.judged is not None and free.judged[0].tolist() == [False, True]


def test_float_zero_point_readings():
    zero, one = np.array(0.0, E4M3), np.array(1.0, E4M3)
    # -0 + 0 = +0 (IEEE); a zero zero point not used keeps -0. (Ignoring a zero point is no reading: "the
    # quantization formula remains the same for consistency".)
    got = _readings("", "QuantizeLinear", 19, [np.array([-0.0], F32), np.array(1.0, F32), zero])
    assert all(_same(got["float-zero-point"][k], v) for k, v in
               {"exact": [0.0], "zero-unused": [-0.0], "two-roundings": [0.0]}.items())
    assert set(got["float-zero-point"]) == {"exact", "zero-unused", "two-roundings"}
    # x = 0.32 (float32 0.3199999..), zero point 1: exactly 1.32 -> 1.375 (e4m3 ulp 1/8 on [1, 2)); rounded
    # first, 0.32 -> 0.3125 (ulp 1/32), + 1 = 1.3125, a tie -> 1.25.
    got = _readings("", "QuantizeLinear", 19, [np.array([0.32], F32), np.array(1.0, F32), one])
    assert got["float-zero-point"] == {"exact": [1.375], "zero-unused": [1.375], "two-roundings": [1.25]}
    # DequantizeLinear: (2 - 1) * 1 = 1, under every reading the text allows (a non-zero zero point is used).
    got = _readings("", "DequantizeLinear", 19, [np.array([2.0], E4M3), np.array(1.0, F32), one])
    assert got["float-zero-point"] == {"exact": [1.0], "zero-unused": [1.0]}


def test_int32_zero_point_readings():
    got = _readings("", "DequantizeLinear", 10, [np.array([10], I32), np.array(2.0, F32), np.array(3, I32)])
    assert got["int32-zero-point"] == {"subtracted": [14.0], "ignored": [20.0], "invalid": None}


def test_nan_to_nanless_float_readings():
    got = _readings("", "QuantizeLinear", 23, [np.array([math.nan, 1.0], F32), np.array(1.0, F32),
                                               np.array(0.0, ml_dtypes.float4_e2m1fn)])
    r = got["nan-to-nanless-float"]
    assert r["max-finite"] == [6.0, 1.0] and _same(r["negative-zero"], [-0.0, 1.0]) and r["any"] == [6.0, 1.0]


def test_quark_float_saturation_readings():
    got = _readings("com.amd.quark", "ExtendedQuantizeLinear", 1, [np.array([1e6], F32), np.array(1.0, F32),
                                                                   np.array(0, F16)])
    assert got["quark-float-saturation"] == {"saturate": [65504.0], "inf": [math.inf]}


def test_dynamic_quantize_linear_readings():
    got = _readings("", "DynamicQuantizeLinear", 11, [np.zeros(3, F32)], declared="dql-zero")
    assert got["dql-zero"] == {"zero-scale": [0, 0, 0], "guard-one": [0, 0, 0]}
    x = np.array([math.nan, 1.0, -2.0], F32)
    outputs = evaluate("", "DynamicQuantizeLinear", 11, [x])
    rs = {r.name: r for r in readings("", "DynamicQuantizeLinear", 11, [x], {}, outputs, ("dql-nan",))}
    SEEN.update(("dql-nan", name) for name in rs)
    # NaN ignored: range [-2, 1], scale 3/255, zero point round(2 / (3/255)) = 170; 1 -> 170 + 85 = 255, -2 ->
    # 0.
    ignored = rs["ignored"]
    assert ignored.outputs is not None and ignored.outputs[0].tolist()[1:] == [255, 0]
    assert int(ignored.outputs[2]) == 170 and ignored.judged is not None
    assert ignored.judged[0].tolist() == [False, True, True]  # NaN's code follows nan-to-integer: any
    got = _readings("", "DynamicQuantizeLinear", 11, [np.zeros(0, F32)], declared="dql-empty")
    assert got["dql-empty"] == {"identities": [], "fails": None}


@pytest.mark.parametrize(("x", "combined"),
                         [([math.nan], True), ([math.nan, 0.0], True), ([math.nan, 1.0], False)])
def test_nan_ignored_then_a_zero_range_guarded_is_a_reading_of_both_entries(x, combined):
    """With NaN ignored, an input of NaN and zeros leaves a zero range, and dql-zero's question arises for it:
    dql-nan:ignored+dql-zero:guard-one is y_scale 1, y_zero_point 0 (ONNX Runtime's answer to an all-NaN
    input); an input with a number left has a range, and no such reading."""
    xs = np.array(x, F32)
    outputs = evaluate("", "DynamicQuantizeLinear", 11, [xs])
    rs = {r.name: r for r in readings("", "DynamicQuantizeLinear", 11, [xs], {}, outputs, ("dql-nan",))}
    assert ("ignored+dql-zero:guard-one" in rs) is combined
    if combined:
        r = rs["ignored+dql-zero:guard-one"]
        assert r.outputs is not None and r.judged is not None
        assert (float(r.outputs[1]), int(r.outputs[2])) == (1.0, 0)
        assert r.outputs[0].tolist() == [0] * len(x) and r.judged[0].tolist() == [v == 0 for v in x]
        ort = [np.zeros(len(x), np.uint8), np.array(1, F32), np.array(0, np.uint8)]
        o = _judge(ort, list(rs.values()))
        assert (o.status, o.reading) == ("implementation-defined", "dql-nan:ignored+dql-zero:guard-one")
        wrong = [np.zeros(len(x), np.uint8), np.array(2, F32), np.array(0, np.uint8)]
        assert _judge(wrong, list(rs.values())).status == "failed"


def test_validity_readings_are_rejections():
    got = _readings("com.microsoft", "QuantizeLinear", 1, [np.array([1.0, 2.0], F32), np.array([2.0], F32),
                                                           np.array([1], np.uint8)],
                    declared="ms-one-element-no-axis")
    assert got["ms-one-element-no-axis"] == {"per-tensor": [1, 2], "invalid": None}  # 0.5 -> 0, 1 -> 1; + 1


def test_every_catalogue_reading_is_computed_somewhere_or_explained():
    assert set(COMPUTED) == set(catalogue())
    for check in (
            test_division_precision_scale_type_against_float32,
            test_int32_precision_truncation_exact_and_float32,
            test_mixed_precision_rounds_the_exact_quotient_to_the_precision_not_the_exact_quotient_itself,
            test_int32_input_division_at_versions_10_and_13,
            test_e8m0_precision_of_x,
            test_dq_precision_literal_widened_and_float32,
            test_nan_to_integer_readings_and_the_free_element,
            test_float_zero_point_readings,
            test_int32_zero_point_readings,
            test_nan_to_nanless_float_readings,
            test_quark_float_saturation_readings,
            test_dynamic_quantize_linear_readings,
            test_validity_readings_are_rejections,
    ):
        check()  # (each records the readings it saw, whatever the order or the worker the tests run in)
    for a in catalogue().values():
        for name in a.readings:
            assert (a.id, name) in SEEN or (a.id, name) in NOT_COMPUTED or a.id in (
                "v10-one-element-scale", "one-element-scale", "rank1-axis", "ms-default-output",
                "scalar-one-element-shapes", "quark-dq-zero-point-type", "block-size-si-1",
                "block-size-empty-axis"), (a.id, name)


def test_status_policy_demotes_only_when_a_reading_changes_the_answer():
    y = np.array([3], np.uint8)
    same = Reading("division-precision", "float32", (np.array([3], np.uint8),))
    other = Reading("division-precision", "float32", (np.array([4], np.uint8),))
    kernel = Reading("division-precision", "scale-type", (y,))
    assert decide("normative", None, [kernel, same], [y]) == ("normative", None, [])
    status, amb, kept = decide("normative", None, [kernel, other], [y])
    assert (status, amb, [r.name for r in kept]) == ("implementation-defined", "division-precision",
                                                     ["scale-type", "float32"])
    status, amb, kept = decide("implementation-defined", "nan-to-integer", [kernel, other], [y])
    assert amb == "nan-to-integer" and [r.name for r in kept] == ["scale-type", "float32"]


def _judge(actual: list[np.ndarray] | None, rs: list[Reading], kind: str = "ok"):
    raw = RawResult(kind, actual or [], message="boom" if kind != "ok" else "")
    return classify(raw, case_status="implementation-defined", expected=None, readings=rs)


def test_an_implementation_defined_case_is_judged_against_its_readings():
    k = Reading("nan-to-integer", "zero-point", (np.array([3, 4], np.uint8),))
    lo = Reading("nan-to-integer", "lower-bound", (np.array([0, 4], np.uint8),))
    free = Reading("nan-to-integer", "any", (np.array([3, 4], np.uint8),), (np.array([False, True]), ))
    o = _judge([np.array([3, 4], np.uint8)], [k, lo, free])
    assert (o.status, o.reading) == ("implementation-defined", "nan-to-integer:zero-point")
    o = _judge([np.array([0, 4], np.uint8)], [k, lo, free])
    assert (o.status, o.reading) == ("implementation-defined", "nan-to-integer:lower-bound")
    o = _judge([np.array([77, 4], np.uint8)], [k, lo, free])  # the NaN element is free under "any"
    assert ((o.status, o.reading) == ("implementation-defined", "nan-to-integer:any")
            and "not judged" in o.message)
    o = _judge([np.array([3, 5], np.uint8)], [k, lo, free])  # a constrained element is wrong: no reading fits
    assert o.status == "failed" and "matches none of the catalogued readings" in o.message and o.mismatches


def test_a_rejection_passes_only_when_a_reading_rejects():
    k = Reading("int32-zero-point", "subtracted", (np.array([14.0], F32),))
    inv = Reading("int32-zero-point", "invalid", None)
    o = _judge(None, [k, inv], "rejected")
    assert (o.status, o.reading) == ("implementation-defined", "int32-zero-point:invalid")
    o = _judge(None, [k], "error")
    assert o.status == "error" and "no catalogued reading rejects" in o.message
    assert _judge(None, [k], "unsupported").status == "unsupported"


@pytest.mark.parametrize("imports,node_domain,version", [
    ([("", 10), ("ai.onnx", 21)], "", 10),   # the node's own spelling first, as onnx's checker resolves it
    ([("ai.onnx", 21), ("", 10)], "", 10),
    ([("ai.onnx", 21)], "", 21),             # "" falls back to "ai.onnx"
    ([("", 10), ("", 21)], "", 21),          # the same spelling twice: the last one (onnx's map)
])
def test_a_double_ai_onnx_import_resolves_as_onnx_does(imports, node_domain, version):
    import onnx
    from onnx import TensorProto, helper

    from qdq_conformance.checker import check_model
    from qdq_conformance.reference.model import bind

    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], domain=node_domain)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2])],
                              [helper.make_tensor("s", TensorProto.FLOAT16, [], [2.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in imports],
                              ir_version=9)
    # float16 x does not exist at version 10: onnx's checker refuses, and so do kernel and checker
    if version == 10:
        with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError)):
            onnx.checker.check_model(model, full_check=True)
        with pytest.raises(Exception, match="QDQ002"):
            evaluate_model = bind(model, {"x": np.array([1, 2], F16)})
            evaluate(evaluate_model.spec.domain, "QuantizeLinear", evaluate_model.spec.version,
                     evaluate_model.inputs, evaluate_model.attrs)
    else:
        onnx.checker.check_model(model, full_check=True)
        assert bind(model, {"x": np.array([1, 2], F16)}).spec.version == version
    report = check_model(model, Path("."))
    rules = {f.rule for f in report.findings}
    assert ("QDQ002" in rules) == (version == 10)


def test_report_and_scoreboard_show_which_reading_each_backend_follows(tmp_path):
    from qdq_conformance.reports.render import readings_table, render, scoreboard

    def rec(cid, status, reading=None, amb="nan-to-integer"):
        return {"id": cid, "form": "runtime", "status": status, "case_status": "implementation-defined",
                "ambiguity": amb, "reading": reading}

    a = [rec("c1", "implementation-defined", "nan-to-integer:zero-point"), rec("c2", "failed"),
         rec("c3", "implementation-defined", "nan-to-integer:any")]
    b = [rec("c1", "implementation-defined", "nan-to-integer:upper-bound"),
         rec("c2", "implementation-defined",
            "nan-to-integer:zero-point")]
    assert readings_table(a) == {"nan-to-integer": [("zero-point", 1), ("none of the catalogued readings", 1),
                                                    ("any", 1)]}
    board = scoreboard([({"backend": "x"}, a, None), ({"backend": "y"}, b, None)])
    assert (board["readings"]["nan-to-integer"]
            == [{"zero-point": 1, "none of the catalogued readings": 1, "any": 1},
                {"upper-bound": 1, "zero-point": 1}])
    html = render([({"backend": "x"}, a, None), ({"backend": "y"}, b, None)], tmp_path / "b.html").read_text()
    assert "1 x upper-bound" in html and "none of the catalogued readings" in html
    html = render([({"backend": "x"}, a, None)], tmp_path / "r.html").read_text()
    assert "1 x zero-point" in html and 'id="readings"' in html


def test_a_division_reading_combines_with_the_readings_that_follow_it():
    # float16 x = [NaN, 1025], y_scale 8.1015625: 126 in float16, 127 in float32 (see above); NaN to the lower
    # bound -128 under nan-to-integer:lower-bound. A backend dividing in float32 and sending NaN to the lower
    # bound follows both readings at once.
    got = _readings("", "QuantizeLinear", 21, [np.array([math.nan, 1025], F16), np.array(8.1015625, F16),
                                               np.array(0, np.int8)])
    assert got["division-precision"]["scale-type"] == [0, 126]
    assert got["division-precision"]["float32"] == [0, 127]
    assert got["division-precision"]["float32+nan-to-integer:lower-bound"] == [-128, 127]
    assert got["division-precision"]["float32+nan-to-integer:upper-bound"] == [127, 127]
    assert got["nan-to-integer"]["lower-bound"] == [-128, 126]


def test_expectations_apply_to_implementation_defined_cases(tmp_path):
    """An implementation-defined case that follows no catalogued reading fails like any other: an expectation
    entry can name it."""
    from qdq_conformance.runner.expectations import load

    path = tmp_path / "x.yaml"
    path.write_text("backend: x\nentries:\n  - cases: 'dequantizelinear-*-int32-extremes-*'\n    status: "
                    "failed\n    reason: wraps in int32\n")
    entry = load(path).expected("dequantizelinear-10-int32-extremes-zero-point-int32-float", "runtime")
    assert entry is not None and entry.status == "failed"


def test_dequantize_combinations_and_free_dynamic_zero_points():
    # int32 x = 16785409, zero point 5, scale 2**-10 (float16 output). Subtracted: 16785404 * 2**-10 =
    # 16391.996.. -> 16384 widened (ulp 16); the zero point ignored: 16392.00098 -> 16400 widened, 16384
    # through float32 (16785409 rounds to 16785408 in float32: 16392, a tie, to even), inf literal (x
    # overflows float16).
    got = _readings("", "DequantizeLinear", 21, [np.array([16785409], I32), np.array(2**-10, F16),
                                                 np.array(5, I32)])
    assert got["int32-zero-point"] == {"subtracted": [math.inf], "ignored": [math.inf], "invalid": None}
    dq = got["dq-precision"]
    assert dq["widened"] == [16384.0] and dq["widened+int32-zero-point:ignored"] == [16400.0]
    # DynamicQuantizeLinear: NaN propagates to y_scale, so the zero point is Cast(NaN), which Cast's text
    # leaves open: not judged.
    x = np.array([math.nan, 1.0, -2.0], F32)
    outputs = evaluate("", "DynamicQuantizeLinear", 11, [x])
    rs = {r.name: r for r in readings("", "DynamicQuantizeLinear", 11, [x], {}, outputs, "dql-nan")}
    judged = rs["propagate"].judged
    assert judged is not None and judged[2] is not None and not judged[2].any()
    assert rs["ignored"].judged is not None and rs["ignored"].judged[2] is None  # zero point 170: judged


def test_dynamic_quantize_linear_zero_point_nan_before_the_cast_is_not_judged():
    """dql-nan's note: a zero point that is NaN before the Cast (here -inf / inf, with y_scale inf) is not
    judged, nor is y of a number, which is that zero point; +inf alone leaves the zero point 0 / inf = 0,
    judged. (A case naming dql-nan carries the kernel's reading, whose judged mask says this.)"""
    def kernel_reading(x):
        outputs = evaluate("", "DynamicQuantizeLinear", 11, [x])
        found = catalogue_readings("", "DynamicQuantizeLinear", 11, [x], {}, outputs, "dql-nan")
        return next(r for r in found if r.ambiguity == "dql-nan" and r.name == "propagate")

    r = kernel_reading(np.array([0.0, -math.inf], F32))
    assert r.judged is not None and r.judged[0].tolist() == [False, False]
    assert r.judged[2] is not None and not r.judged[2].any()
    r = kernel_reading(np.array([0.0, math.inf], F32))
    assert r.judged is None or (r.judged[2] is None and bool(r.judged[0][0]))
