"""Golden and hand-computed vectors: every expected value here is written out by hand from the spec text."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from qdq_conformance.compare import compare
from qdq_conformance.reference import evaluate
from qdq_conformance.types import TYPES, by_name

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16


def q(version, x, scale, zp=None, domain="ai.onnx", **attrs):
    inputs = [x, scale] if zp is None else [x, scale, zp]
    op = "ExtendedQuantizeLinear" if domain == "com.amd.quark" else "QuantizeLinear"
    return evaluate(domain, op, version, inputs, attrs)[0]


def dq(version, x, scale, zp=None, domain="ai.onnx", **attrs):
    inputs = [x, scale] if zp is None else [x, scale, zp]
    op = "ExtendedDequantizeLinear" if domain == "com.amd.quark" else "DequantizeLinear"
    return evaluate(domain, op, version, inputs, attrs)[0]


def assert_same(expected, actual):
    mismatch = compare(expected, actual)
    assert mismatch is None, f"{mismatch}\nexpected {expected!r}\nactual   {actual!r}"


# --- com.microsoft QuantizeLinear examples (seed 002)
# ---------------------------------------------------------

def test_ms_quantizelinear_default_example():
    x = np.array([0, 2, 3, 1000, -254, -1000], dtype=F32)
    y = q(1, x, np.array(2, F32), np.array(128, np.uint8), domain="com.microsoft")
    assert_same(np.array([128, 129, 130, 255, 1, 0], np.uint8), y)


def test_ms_quantizelinear_axis_example():
    x = np.array([[[[-162, 10], [-100, 232], [-20, -50]], [[-76, 0], [0, 252], [32, -44]],
                   [[245, -485], [-960, -270], [-375, -470]]]], dtype=F32)
    scale, zp = np.array([2, 4, 5], F32), np.array([84, 24, 196], np.uint8)
    y = q(1, x, scale, zp, domain="com.microsoft", axis=1)
    expected = np.array([[[[3, 89], [34, 200], [74, 59]], [[5, 24], [24, 87], [32, 13]],
                          [[245, 99], [4, 142], [121, 102]]]], np.uint8)
    assert_same(expected, y)


# --- saturation at both ends of every integer type, from every input type -----------------------------------

INT_TARGETS = [("int8", 19), ("uint8", 19), ("int16", 21), ("uint16", 21), ("int4", 21), ("uint4", 21),
               ("int2", 25), ("uint2", 25)]


@pytest.mark.parametrize("target,first_version", INT_TARGETS)
@pytest.mark.parametrize("xtype", ["float", "float16", "bfloat16", "int32"])
def test_saturation_both_ends(target, first_version, xtype):
    t = by_name(target)
    xdt = by_name(xtype).dtype
    big = {"float": 3e38, "float16": 65504, "bfloat16": 3e38, "int32": 2**31 - 1}[xtype]
    values = [big, -big, float(t.int_max) + 1, float(t.int_min) - 1, float(t.int_max), float(t.int_min)]
    # float16 cannot exceed uint16's range by a finite value: 65504 stays 65504 (int_max + 1 becomes inf).
    expected = [min(big, t.int_max), max(-big, t.int_min), t.int_max, t.int_min, t.int_max, t.int_min]
    if xtype in ("float", "bfloat16"):
        values += [np.inf, -np.inf, 2.0**31 + 2**8, -(2.0**32)]
        expected += [t.int_max, t.int_min, t.int_max, t.int_min]
    elif xtype == "float16":
        values += [np.inf, -np.inf]
        expected += [t.int_max, t.int_min]
    else:
        values += [-(2**31)]
        expected += [t.int_min]
    with np.errstate(over="ignore"):
        x = (np.array(values, np.float64).astype(xdt) if xtype != "int32"
             else np.array(values, np.int64).astype(np.int32))
    version = max(first_version, 23)  # 23+: any x type with a float32 scale
    y = q(version, x, np.array(1, F32), np.array(0, t.dtype))
    assert_same(np.array(expected, np.int64).astype(t.dtype), y)


# --- round half to even, before the zero point is added
# ---------------------------------------------------------

def test_ties_to_even_across_the_range():
    x = np.arange(-10, 10, dtype=np.float64) + 0.5
    y = q(13, x.astype(F32), np.array(1, F32), np.array(0, np.int8))
    expected = [int(np.rint(v)) for v in x]  # -9.5 -> -10, -8.5 -> -8, ..., 0.5 -> 0, 1.5 -> 2
    assert expected[:4] == [-10, -8, -8, -6]
    assert_same(np.array(expected, np.int8), y)


def test_ties_round_before_the_odd_zero_point_is_added():
    # round(0.5) + 1 = 1, whereas rounding after adding would give round(1.5) = 2.
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5], F32)
    y = q(13, x, np.array(1, F32), np.array(1, np.uint8))
    assert_same(np.array([1, 3, 3, 1, 0], np.uint8), y)


def test_ties_next_to_the_saturation_bounds():
    x = np.array([254.5, 255.5, -0.5, 253.5], F32)
    assert_same(np.array([254, 255, 0, 254], np.uint8), q(10, x, np.array(1, F32), np.array(0, np.uint8)))
    x = np.array([126.5, 127.5, -127.5, -128.5, -129.5], F32)
    assert_same(np.array([126, 127, -128, -128, -128], np.int8),
                q(10, x, np.array(1, F32), np.array(0, np.int8)))


def test_signed_zero_and_default_zero_point():
    y = q(13, np.array([-0.0, 0.0], F32), np.array(1, F32))
    assert_same(np.array([0, 0], np.uint8), y)


def test_int32_x_rounds_to_float32_before_dividing():
    # 2**24 + 1 is not a float32: it rounds to 2**24, / 2**25 = 0.5 exactly, a tie that rounds to 0.
    # (The exact quotient 0.50000003 would give 1.)
    y = q(13, np.array([2**24 + 1], np.int32), np.array(2**25, F32), np.array(0, np.uint8))
    assert_same(np.array([0], np.uint8), y)


# --- division precision
# ---------------------------------------------------------------------------------------

def test_bfloat16_division_is_carried_out_in_bfloat16():
    # 1000 / 3 = 333.33; in bfloat16 (quantum 2 in [256, 512)) that is 334, in float32 it rounds to 333.
    x, s = np.array([1000], BF16), np.array(3, BF16)
    assert_same(np.array([334], np.int16), q(21, x, s, np.array(0, np.int16)))
    assert_same(np.array([334], np.int16), q(23, x, s, np.array(0, np.int16)))
    f = int(by_name("float").proto)
    assert_same(np.array([333], np.int16), q(23, x, s, np.array(0, np.int16), precision=f))


def test_scale_type_sets_precision_and_x_is_rounded_to_it_first():
    # float32 x = 70000 does not fit float16: with a float16 scale it becomes inf, which saturates.
    x, s = np.array([70000], F32), np.array(1000, F16)
    assert_same(np.array([127], np.int8), q(23, x, s, np.array(0, np.int8)))
    assert_same(np.array([70], np.int8),
                q(23, x, s, np.array(0, np.int8), precision=int(TYPES["float"].proto)))


def test_int32_scale_divides_exactly_and_rounds_half_to_even():
    x = np.array([5, 7, -5, 2**31 - 1], np.int32)
    y = q(23, x, np.array(2, np.int32), np.array(0, np.int16))
    assert_same(np.array([2, 4, -2, 32767], np.int16), y)


# --- float8 / float4 targets follow the Cast tables
# -----------------------------------------------------------

SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e6, -1e6], F32)
NAN = np.nan
CAST_TABLE = {  # x: 0, -0, NaN, Inf, -Inf, > FLT_MAX, < -FLT_MAX
    ("float8e4m3fn", 1): [0, -0.0, NAN, 448, -448, 448, -448],
    ("float8e4m3fnuz", 1): [0, 0, NAN, 240, -240, 240, -240],
    ("float8e5m2", 1): [0, -0.0, NAN, 57344, -57344, 57344, -57344],
    ("float8e5m2fnuz", 1): [0, 0, NAN, 57344, -57344, 57344, -57344],
    ("float8e4m3fn", 0): [0, -0.0, NAN, NAN, NAN, NAN, NAN],
    ("float8e4m3fnuz", 0): [0, 0, NAN, NAN, NAN, NAN, NAN],
    ("float8e5m2", 0): [0, -0.0, NAN, np.inf, -np.inf, np.inf, -np.inf],
    ("float8e5m2fnuz", 0): [0, 0, NAN, NAN, NAN, NAN, NAN],
}


@pytest.mark.parametrize("target,saturate", sorted(CAST_TABLE))
def test_float8_cast_tables(target, saturate):
    t = by_name(target)
    # No zero point: at version 21 output_dtype selects the type, so -0 is not turned into +0 by a zero point.
    y = q(21, SPECIALS, np.array(1, F32), saturate=saturate, output_dtype=t.proto)
    assert_same(np.array(CAST_TABLE[(target, saturate)], F32).astype(t.dtype), y)


def test_float8_rounding_just_below_and_above_the_max():
    # e4m3fn: 464 is the tie between 448 and (non-existent) 480 -> 448; 465 rounds to 480 > max -> NaN / 448.
    x = np.array([464, 465], F32)
    t = TYPES["float8e4m3fn"]
    assert_same(np.array([448, NAN], F32).astype(t.dtype),
                q(21, x, np.array(1, F32), saturate=0, output_dtype=t.proto))
    assert_same(np.array([448, 448], F32).astype(t.dtype),
                q(21, x, np.array(1, F32), saturate=1, output_dtype=t.proto))


def test_float8_zero_point_is_added_before_one_rounding():
    # 1/8 + 8 = 8.125, between 8 and 9 in e4m3fn: rounds to 8. Zero point 8 is kept in the formula.
    t = TYPES["float8e4m3fn"]
    y = q(19, np.array([1.0, 8.0], F32), np.array(8, F32), np.array(8, F32).astype(t.dtype))
    assert_same(np.array([8, 9], F32).astype(t.dtype), y)


def test_float4_targets_saturate_and_round_to_even():
    t = TYPES["float4e2m1"]
    x = np.array([NAN, np.inf, -np.inf, 7, -100, 5, 0.25, 0.75, -0.0], F32)
    y = q(23, x, np.array(1, F32), output_dtype=t.proto, saturate=0)
    assert_same(np.array([6, 6, -6, 6, -6, 4, 0, 1, -0.0], F32).astype(t.dtype), y)


# --- granularity
# ----------------------------------------------------------------------------------------------

def test_blocked_with_partial_last_block():
    x = np.arange(12, dtype=F32).reshape(2, 6)
    scale = np.array([[1, 2], [4, 8]], F32)
    y = q(21, x, scale, np.zeros((2, 2), np.uint8), axis=1, block_size=4)
    # row 0: [0,1,2,3]/1, [4,5]/2 -> 2, 2.5->2 ; row 1: [6,7,8,9]/4 -> 1.5->2, 1.75->2, 2, 2.25->2 ; [10,11]/8
    # -> 1.25->1, 1.375->1
    assert_same(np.array([[0, 1, 2, 3, 2, 2], [2, 2, 2, 2, 1, 1]], np.uint8), y)


def test_per_axis_negative_axis_rank_5():
    x = np.ones((1, 2, 1, 1, 3), F32) * np.array([2, 4, 6], F32)
    y = q(13, x, np.array([2, 1, 3], F32), np.array([0, 1, 2], np.uint8), axis=-1)
    assert_same((np.ones((1, 2, 1, 1, 3)) * np.array([1, 5, 4])).astype(np.uint8), y)


# --- DequantizeLinear
# -----------------------------------------------------------------------------------------

def test_int32_extremes_with_zero_point_do_not_overflow():
    x = np.array([-(2**31), 2**31 - 1], np.int32)
    y = dq(21, x, np.array(1, F32), np.array(2**31 - 1, np.int32))
    assert_same(np.array([-4294967295.0, 0.0], F32), y)  # float32(-4294967295) = -4294967296


def test_dequantize_uint8_and_int8():
    y = dq(10, np.array([255, 0, 1], np.uint8), np.array(2, F32), np.array(1, np.uint8))
    assert_same(np.array([508, -2, 0], F32), y)
    y = dq(13, np.array([-128, 127], np.int8), np.array(0.5, F32), np.array(-128, np.int8))
    assert_same(np.array([0, 127.5], F32), y)


def test_dequantize_literal_float16_precision():
    # int16 32767 is not a float16: it rounds to 32768 before the product (ambiguity dq-precision: literal).
    y = dq(21, np.array([32767, -32768], np.int16), np.array(1, F16))
    assert_same(np.array([32768, -32768], F16), y)


def test_dequantize_float8e8m0_scale_needs_output_dtype():
    x = np.array([1, 2], np.uint8)
    s = np.array(128, np.uint8).view(ml_dtypes.float8_e8m0fnu)  # 2**(128 - 127) = 2
    assert_same(np.array([2, 4], F32), dq(24, x, s, output_dtype=TYPES["float"].proto))


def test_rank0_inputs():
    # Found by the corpus: numpy's 0-d arithmetic returns scalars, which in-place operations reject.
    y = q(10, np.array(3.75, F32), np.array(0.5, F32), np.array(128, np.uint8))
    assert y.shape == () and int(y) == 136  # 7.5 rounds to 8
    y = dq(10, np.array(136, np.uint8), np.array(0.5, F32), np.array(128, np.uint8))
    assert y.shape == () and float(y) == 4.0
    t = TYPES["float8e4m3fn"]
    y = q(21, np.array(3.75, F32), np.array(0.5, F32), output_dtype=t.proto)
    assert y.shape == () and float(y.astype(F32)) == 7.5
