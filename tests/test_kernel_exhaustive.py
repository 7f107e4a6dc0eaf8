"""Exhaustive sweeps: every code of every 2-, 4- and 8-bit type, and every int16 / uint16 code.

Expected values are computed independently of the kernel: Python floats (IEEE double) hold every product here
exactly, so one rounding to the output type gives the correctly rounded result.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from qdq_conformance.compare import compare
from qdq_conformance.opspecs import PER_AXIS, PER_TENSOR
from qdq_conformance.reference import evaluate
from qdq_conformance.types import TYPES, bit_patterns

SMALL_INT = ["int2", "uint2", "int4", "uint4", "int8", "uint8"]
SMALL_FLOAT = ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1"]
SCALES = [1.0, 0.0625, 3.0, 0.1, 1e-30]


def _newest_version_allowing(name):
    return 25 if name in ("int2", "uint2") else 23


@pytest.mark.parametrize("name", SMALL_INT)
def test_dequantize_every_code_with_every_zero_point(name):
    t = TYPES[name]
    codes = bit_patterns(t)
    n = len(codes)
    # Per-axis along axis 0: row k uses zero point codes[k], so every (code, zero point) pair is covered.
    x = np.tile(codes, (n, 1))
    for s in SCALES:
        scale = np.full(n, s, np.float32)
        y = evaluate("ai.onnx", "DequantizeLinear", _newest_version_allowing(name), [x, scale, codes],
                     {"axis": 0})[0]
        xv = x.astype(np.int64)
        zv = codes.astype(np.int64)[:, None]
        expected = ((xv - zv).astype(np.float64) * float(np.float32(s))).astype(np.float32)
        assert compare(expected, y) is None, name


@pytest.mark.parametrize("name", ["int16", "uint16"])
def test_dequantize_every_16_bit_code(name):
    t = TYPES[name]
    codes = bit_patterns(t)
    for zp in (t.int_min, 0 if t.int_min < 0 else 1, t.int_max):
        for s in SCALES:
            y = evaluate("ai.onnx", "DequantizeLinear", 21, [codes, np.float32(s), np.array(zp, t.dtype)])[0]
            expected = ((codes.astype(np.int64) - zp).astype(np.float64)
                        * float(np.float32(s))).astype(np.float32)
            assert compare(expected, y) is None


@pytest.mark.parametrize("name", SMALL_INT + ["int16", "uint16"])
@pytest.mark.parametrize("granularity", [PER_TENSOR, PER_AXIS])
def test_dequantize_every_code_with_zero_point_zero(name, granularity):
    # A zero point of 0 takes the kernel's path without a subtraction pass; every code, tiled past one chunk
    # (so through the chunked loop), with a negative scale so that a dropped sign would show too.
    t = TYPES[name]
    codes = bit_patterns(t)
    reps = max(2, (1 << 17) // len(codes))
    x = np.tile(codes, (3, reps))
    for s in (-0.1, 1e-30, 3.0):
        if granularity == PER_TENSOR:
            scale, zp, attrs = np.array(s, np.float32), np.array(0, t.dtype), {}
        else:
            scale, zp, attrs = np.full(3, s, np.float32), np.zeros(3, t.dtype), {"axis": 0}
        y = evaluate("ai.onnx", "DequantizeLinear", _newest_version_allowing(name), [x, scale, zp], attrs)[0]
        expected = (x.astype(np.int64).astype(np.float64) * float(np.float32(s))).astype(np.float32)
        assert compare(expected, y) is None, (name, s)


@pytest.mark.parametrize("name", SMALL_FLOAT + ["float6e2m3", "float6e3m2"])
@pytest.mark.parametrize("out", ["float", "float16", "bfloat16"])
def test_dequantize_every_float_code(name, out):
    t, o = TYPES[name], TYPES[out]
    codes = bit_patterns(t)
    version = 28 if name.startswith("float6") else 23
    for s in (1.0, 0.5, 3.0, 448.0):
        scale = np.array(s, np.float32).astype(o.dtype)
        y = evaluate("ai.onnx", "DequantizeLinear", version, [codes, scale])[0]
        values = codes.astype(np.float32).astype(np.float64)
        # value (<= 4 significant bits) * scale (<= 24) is exact in float32, so one float32 -> out rounding.
        with np.errstate(over="ignore"):
            expected = (values * float(scale.astype(np.float32))).astype(np.float32).astype(o.dtype)
        assert compare(expected, y) is None, (name, out, s)


@pytest.mark.parametrize("name", SMALL_INT + ["int16", "uint16"])
def test_quantize_every_code_round_trips(name):
    t = TYPES[name]
    codes = bit_patterns(t)
    x = codes.astype(np.float32)
    version = _newest_version_allowing(name)
    y = evaluate("ai.onnx", "QuantizeLinear", version, [x, np.float32(1), np.array(0, t.dtype)])[0]
    assert compare(codes, y) is None
    # With a scale of 2 every code + 0.5 is a tie that must go to the even neighbour.
    halves = (codes.astype(np.float64) + 0.5) * 2
    y = evaluate("ai.onnx", "QuantizeLinear", version, [halves.astype(np.float32), np.float32(2),
                                                         np.array(0, t.dtype)])[0]
    even = np.rint(codes.astype(np.float64) + 0.5)
    expected = np.clip(even, t.int_min, t.int_max).astype(np.int64).astype(t.dtype)
    assert compare(expected, y) is None


@pytest.mark.parametrize("name", SMALL_FLOAT + ["float6e2m3", "float6e3m2"])
def test_quantize_every_float_code_round_trips(name):
    t = TYPES[name]
    codes = bit_patterns(t)
    x = codes.astype(np.float32)
    version = 28 if name.startswith("float6") else 23
    # output_dtype with no zero point and saturate=0: every value, -0 and inf included, comes back unchanged.
    y = evaluate("ai.onnx", "QuantizeLinear", version, [x, np.float32(1)],
                 {"output_dtype": t.proto, "saturate": 0})[0]
    assert compare(codes, y) is None
    # saturate=1 (the default) maps +-inf to +-max finite, as the Cast table says.
    y = evaluate("ai.onnx", "QuantizeLinear", version, [x, np.float32(1)], {"output_dtype": t.proto})[0]
    expected = np.where(np.isinf(x), np.sign(x) * t.max_finite, x).astype(t.dtype)
    assert compare(expected, y) is None


def test_float8_quantize_matches_ml_dtypes_on_every_float16():
    # Every finite float16 quantized to e4m3fn / e5m2 with saturate=0 equals ml_dtypes' float32 conversion
    # (ml_dtypes is exact from float32 sources; the kernel rounds on its own from float64).
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = x[np.isfinite(x)].astype(np.float32)
    for name, dt in (("float8e4m3fn", ml_dtypes.float8_e4m3fn), ("float8e5m2", ml_dtypes.float8_e5m2)):
        y = evaluate("ai.onnx", "QuantizeLinear", 23, [x, np.float32(1)],
                     {"output_dtype": TYPES[name].proto, "saturate": 0})[0]
        with np.errstate(over="ignore"):
            expected = x.astype(dt)
        assert compare(expected, y) is None, name
