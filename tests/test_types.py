from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest

from qdq_conformance import types as T

EXPECTED_NAMES = ["float", "float16", "bfloat16", "int32", "uint32", "int16", "uint16", "int8", "uint8",
                  "int4", "uint4", "int2", "uint2", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                  "float8e5m2fnuz", "float8e8m0", "float4e2m1", "float6e2m3", "float6e3m2"]


def test_registry_holds_every_type_the_operators_use():
    assert sorted(T.TYPES) == sorted(EXPECTED_NAMES)


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_lookup_by_name_proto_dtype_agree(name):
    t = T.by_name(name)
    assert T.by_proto(t.proto) is t
    assert T.by_dtype(t.dtype) is t
    assert T.by_name(f"tensor({name})") is t
    assert onnx.helper.tensor_dtype_to_np_dtype(t.proto) == t.dtype


@pytest.mark.parametrize("name,lo,hi", [("int2", -2, 1), ("uint2", 0, 3), ("int4", -8, 7), ("uint4", 0, 15),
                                        ("int8", -128, 127), ("uint8", 0, 255), ("int16", -32768, 32767),
                                        ("uint16", 0, 65535), ("int32", -2**31, 2**31 - 1),
                                        ("uint32", 0, 2**32 - 1)])
def test_integer_ranges(name, lo, hi):
    t = T.by_name(name)
    assert (t.int_min, t.int_max) == (lo, hi)


@pytest.mark.parametrize("name,maxv,inf,nan,negzero", [
    ("float8e4m3fn", 448, False, True, True), ("float8e4m3fnuz", 240, False, True, False),
    ("float8e5m2", 57344, True, True, True), ("float8e5m2fnuz", 57344, False, True, False),
    ("float4e2m1", 6, False, False, True), ("float6e2m3", 7.5, False, False, True),
    ("float6e3m2", 28, False, False, True), ("float16", 65504, True, True, True)])
def test_float_properties(name, maxv, inf, nan, negzero):
    t = T.by_name(name)
    assert (t.max_finite, t.has_inf, t.has_nan, t.has_negative_zero) == (maxv, inf, nan, negzero)


@pytest.mark.parametrize("name", [n for n in EXPECTED_NAMES if T.TYPES[n].bits <= 16])
@pytest.mark.parametrize("length", [1, 2, 3, 5, 7])
def test_tensor_proto_round_trip_keeps_every_code(name, length):
    t = T.by_name(name)
    codes = T.bit_patterns(t)
    for start in range(0, len(codes), max(1, len(codes) // 4)):
        a = np.resize(codes[start:], length)
        back = T.from_tensor_proto(T.to_tensor_proto(a, "x"))
        assert back.dtype == t.dtype
        np.testing.assert_array_equal(T.code_of(back), T.code_of(a))


def test_sub_byte_types_are_packed_as_onnx_packs_them():
    # int4: first element in the low nibble (ONNX IR: "the first element is stored in the 4 LSB").
    p = T.to_tensor_proto(np.array([1, -1, 7], dtype=ml_dtypes.int4))
    assert p.raw_data == bytes([0xF1, 0x07])
    p = T.to_tensor_proto(np.array([1, 2, 3, 0, 1], dtype=ml_dtypes.uint2))
    assert p.raw_data == bytes([0b00111001, 0b01])


def test_unknown_types_name_the_problem():
    with pytest.raises(KeyError, match="unknown element type"):
        T.by_name("float64x")
    with pytest.raises(KeyError, match="not used by the quantization operators"):
        T.by_proto(onnx.TensorProto.STRING)
    with pytest.raises(KeyError, match="not an ONNX quantization element type"):
        T.by_dtype(np.complex64)


def test_every_element_type_pickles_exactly():
    """The isolation worker sends arrays pickled: every registry dtype must come back bit for bit, 0-d too."""
    import pickle

    for t in T.TYPES.values():
        a = (np.arange(16).astype(np.uint8).view(t.dtype) if t.dtype.itemsize == 1
             else np.arange(16).astype(t.dtype))
        for x in (a, a[:1].reshape(())):
            y = pickle.loads(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))
            assert y.dtype == x.dtype and y.shape == x.shape and y.tobytes() == x.tobytes(), t.name
