"""Differential tests against onnx.reference and ONNX Runtime.

On random inputs where the spec leaves nothing open, all three must agree bit for bit. Where a backend
deviates from the spec, a test below pins the kernel to the spec's answer and names the deviation.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

from qdq_conformance.backends.kits.ort import run as run_session
from qdq_conformance.backends.kits.ort import session
from qdq_conformance.compare import compare
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.reference import run
from qdq_conformance.types import TYPES

F32 = np.float32


def _model(op, version, inputs, out_type, attrs=None):
    return single_node_model("ai.onnx", op, version, inputs, [("y", out_type, None)], attrs)


def _onnx_reference(model, feeds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)[0]


def _ort(model, feeds):
    return run_session(session(model), feeds)[0]


def _random_x(rng, shape, lo, hi):
    x = rng.uniform(lo, hi, size=shape).astype(F32)
    x.flat[: min(8, x.size)] = (np.arange(min(8, x.size)) - 4 + 0.5).astype(F32)  # exact ties
    return x


Q_COMBOS = [(v, t) for v in (10, 13, 19, 21, 23, 25) for t in ("uint8", "int8")] + \
           [(v, t) for v in (21, 23, 25) for t in ("uint16", "int16")]


@pytest.mark.parametrize("version,target", Q_COMBOS)
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_agrees_with_both_backends_on_random_inputs(version, target, per_axis):
    if per_axis and version < 13:
        pytest.skip("per-axis quantization starts at version 13")
    t = TYPES[target]
    rng = np.random.default_rng(version * 7 + per_axis)
    x = _random_x(rng, (3, 5, 4), -3.0 * abs(t.int_min or 1) - 10, 3.0 * t.int_max + 10)
    shape = (5,) if per_axis else ()
    scale = rng.uniform(0.5, 3.0, size=shape).astype(F32)
    zp = rng.integers(t.int_min, t.int_max + 1, size=shape).astype(t.dtype)
    attrs = {"axis": 1} if per_axis else None
    model = _model("QuantizeLinear", version, [("x", x), ("s", scale), ("z", zp)], t.proto, attrs)
    feeds = {"x": x, "s": scale, "z": zp}
    expected = run(model, feeds)[0]
    assert compare(expected, _onnx_reference(model, feeds)) is None
    assert compare(expected, _ort(model, feeds)) is None


DQ_COMBOS = [(v, t) for v in (10, 13, 19, 21, 23, 25) for t in ("uint8", "int8", "int32")] + \
            [(v, t) for v in (21, 23, 25) for t in ("uint16", "int16")]


@pytest.mark.parametrize("version,source", DQ_COMBOS)
def test_dequantize_agrees_with_both_backends_on_random_inputs(version, source):
    t = TYPES[source]
    rng = np.random.default_rng(version * 11)
    lo, hi = (t.int_min, t.int_max) if t.bits <= 16 else (-(2**20), 2**20)
    x = rng.integers(lo, hi + 1, size=(4, 6)).astype(t.dtype)
    scale = np.array(rng.uniform(1e-3, 10.0), F32)
    inputs = [("x", x), ("s", scale)]
    feeds = {"x": x, "s": scale}
    if t.bits <= 16:
        zp = np.array(rng.integers(lo, hi + 1), t.dtype)
        inputs.append(("z", zp))
        feeds["z"] = zp
    model = _model("DequantizeLinear", version, inputs, TensorProto.FLOAT)
    expected = run(model, feeds)[0]
    if version >= 19:  # onnx.reference implements DequantizeLinear from version 19 only (see below)
        assert compare(expected, _onnx_reference(model, feeds)) is None
    assert compare(expected, _ort(model, feeds)) is None


@pytest.mark.parametrize("target", ["float8e4m3fn", "float8e5m2"])
@pytest.mark.parametrize("saturate", [0, 1])
def test_float8_quantize_agrees_with_both_backends(target, saturate):
    t = TYPES[target]
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(200) * t.max_finite / 4).astype(F32)
    scale, zp = np.array(0.75, F32), np.array(0, F32).astype(t.dtype)
    model = _model("QuantizeLinear", 21, [("x", x), ("s", scale), ("z", zp)], t.proto, {"saturate": saturate})
    feeds = {"x": x, "s": scale, "z": zp}
    expected = run(model, feeds)[0]
    assert compare(expected, _onnx_reference(model, feeds)) is None
    assert compare(expected, _ort(model, feeds)) is None


# --- named deviations: the kernel gives the spec's answer
# ---------------------------------------------------------

def test_deviation_onnx_reference_casts_to_int32_before_clipping():
    """onnx.reference QuantizeLinear: ``np.rint(x).astype(np.int32)`` before ``np.clip`` wraps values beyond
    2**31 (and +-inf) to the wrong end. Spec: "saturate((x / y_scale) + y_zero_point)"."""
    x = np.array([3e9, -3e9, np.inf, -np.inf], F32)
    feeds = {"x": x, "s": np.array(1, F32), "z": np.array(0, np.int8)}
    model = _model("QuantizeLinear", 21, [("x", x), ("s", feeds["s"]), ("z", feeds["z"])], TensorProto.INT8)
    spec_answer = np.array([127, -128, 127, -128], np.int8)
    assert compare(spec_answer, run(model, feeds)[0]) is None
    assert compare(spec_answer, _onnx_reference(model, feeds)) is not None  # the deviation is still there


def test_deviation_ort_int32_dequantize_zero_point_overflows():
    """ONNX Runtime DequantizeLinear int32: ``x - x_zero_point`` is computed in int32 and wraps.
    Spec: "y = (x - x_zero_point) * x_scale" (a real subtraction; no overflow in the formula)."""
    x = np.array([-(2**31), 2**31 - 1], np.int32)
    feeds = {"x": x, "s": np.array(1, F32), "z": np.array(2**31 - 1, np.int32)}
    model = _model("DequantizeLinear", 21, [("x", x), ("s", feeds["s"]), ("z", feeds["z"])],
                   TensorProto.FLOAT)
    spec_answer = np.array([-4294967296.0, 0.0], F32)
    assert compare(spec_answer, run(model, feeds)[0]) is None
    assert compare(spec_answer, _ort(model, feeds)) is not None


def test_deviation_onnx_reference_ignores_float8_zero_point():
    """onnx.reference QuantizeLinear to float8 never adds the zero point. Spec: "the quantization formula
    remains the same for consistency" (y = saturate(x / y_scale + y_zero_point))."""
    t = TYPES["float8e4m3fn"]
    x = np.array([1.0, 8.0], F32)
    feeds = {"x": x, "s": np.array(8, F32), "z": np.array(8, F32).astype(t.dtype)}
    model = _model("QuantizeLinear", 19, [("x", x), ("s", feeds["s"]), ("z", feeds["z"])], t.proto)
    spec_answer = np.array([8, 9], F32).astype(ml_dtypes.float8_e4m3fn)
    assert compare(spec_answer, run(model, feeds)[0]) is None
    assert compare(spec_answer, _onnx_reference(model, feeds)) is not None


def test_deviation_onnx_reference_has_no_dequantizelinear_before_19():
    """onnx.reference registers DequantizeLinear 19, 21, 23, 25 only: a model at opset 10..18 cannot run."""
    x = np.array([1, 2], np.uint8)
    model = _model("DequantizeLinear", 13, [("x", x), ("s", np.array(2, F32))], TensorProto.FLOAT)
    feeds = {"x": x, "s": np.array(2, F32)}
    assert compare(np.array([2, 4], F32), run(model, feeds)[0]) is None
    with pytest.raises(RuntimeError, match="No implementation for operator 'DequantizeLinear'"):
        _onnx_reference(model, feeds)
