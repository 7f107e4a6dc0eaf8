"""The ONNX element types used by the quantization operators.

One registry, :data:`TYPES`, maps each type's ONNX name (the spelling of ``tensor(NAME)`` in the operator
schemas) to an :class:`ElementType` carrying its TensorProto enum, its numpy / ml_dtypes dtype, its bit width
and its numeric properties. Arrays use one element per item (as ``onnx.numpy_helper.to_array`` returns them);
sub-byte types are packed only inside TensorProtos, by onnx's own helpers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

Kind = Literal["int", "float"]


@dataclass(frozen=True)
class ElementType:
    """One ONNX element type and the facts the kernel needs about it."""

    name: str
    proto: int
    dtype: np.dtype
    bits: int
    kind: Kind
    #: integer types: the closed range [min, max]
    int_min: int | None = None
    int_max: int | None = None
    #: float types
    max_finite: float | None = None
    has_inf: bool = False
    has_nan: bool = False
    has_negative_zero: bool = False
    #: float types: explicit mantissa bits and exponent of the smallest normal (2**min_exp)
    mantissa_bits: int | None = None
    min_exp: int | None = None

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind == "int"

    @property
    def is_float8(self) -> bool:
        return self.is_float and self.bits == 8

    @property
    def is_sub_byte(self) -> bool:
        return self.bits < 8

    def __str__(self) -> str:
        return self.name


def _int(name: str, proto: int, dtype: type, bits: int, signed: bool) -> ElementType:
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return ElementType(name, proto, np.dtype(dtype), bits, "int", lo, hi)


def _float(name: str, proto: int, dtype: type, bits: int, *, inf: bool, nan: bool,
           neg_zero: bool) -> ElementType:
    info = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]  # ml_dtypes has no annotations
    return ElementType(
        name, proto, np.dtype(dtype), bits, "float",
        max_finite=float(info.max), has_inf=inf, has_nan=nan, has_negative_zero=neg_zero,
        mantissa_bits=int(info.nmant), min_exp=int(info.minexp),
    )


_ALL: list[ElementType] = [
    _float("float", TensorProto.FLOAT, np.float32, 32, inf=True, nan=True, neg_zero=True),
    _float("float16", TensorProto.FLOAT16, np.float16, 16, inf=True, nan=True, neg_zero=True),
    _float("bfloat16", TensorProto.BFLOAT16, ml_dtypes.bfloat16, 16, inf=True, nan=True, neg_zero=True),
    _int("int32", TensorProto.INT32, np.int32, 32, True),
    _int("uint32", TensorProto.UINT32, np.uint32, 32, False),
    _int("int16", TensorProto.INT16, np.int16, 16, True),
    _int("uint16", TensorProto.UINT16, np.uint16, 16, False),
    _int("int8", TensorProto.INT8, np.int8, 8, True),
    _int("uint8", TensorProto.UINT8, np.uint8, 8, False),
    _int("int4", TensorProto.INT4, ml_dtypes.int4, 4, True),
    _int("uint4", TensorProto.UINT4, ml_dtypes.uint4, 4, False),
    _int("int2", TensorProto.INT2, ml_dtypes.int2, 2, True),
    _int("uint2", TensorProto.UINT2, ml_dtypes.uint2, 2, False),
    _float("float8e4m3fn", TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 8, inf=False, nan=True,
           neg_zero=True),
    _float("float8e4m3fnuz", TensorProto.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, 8, inf=False, nan=True,
           neg_zero=False),
    _float("float8e5m2", TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2, 8, inf=True, nan=True, neg_zero=True),
    _float("float8e5m2fnuz", TensorProto.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, 8, inf=False, nan=True,
           neg_zero=False),
    # float8e8m0 is an exponent-only scale type: no zero, no sign, 0xFF is NaN.
    _float("float8e8m0", TensorProto.FLOAT8E8M0, ml_dtypes.float8_e8m0fnu, 8, inf=False, nan=True,
           neg_zero=False),
    _float("float4e2m1", TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn, 4, inf=False, nan=False,
           neg_zero=True),
    _float("float6e2m3", TensorProto.FLOAT6E2M3, ml_dtypes.float6_e2m3fn, 6, inf=False, nan=False,
           neg_zero=True),
    _float("float6e3m2", TensorProto.FLOAT6E3M2, ml_dtypes.float6_e3m2fn, 6, inf=False, nan=False,
           neg_zero=True),
]

#: Every element type, by ONNX name.
TYPES: dict[str, ElementType] = {t.name: t for t in _ALL}
#: dtypes numpy itself provides (the others come from ml_dtypes, which some consumers cannot take).
NUMPY_NATIVE: frozenset[np.dtype] = frozenset(t.dtype for t in _ALL if t.dtype.type.__module__ == "numpy")
_BY_PROTO: dict[int, ElementType] = {t.proto: t for t in _ALL}
_BY_DTYPE: dict[np.dtype, ElementType] = {t.dtype: t for t in _ALL}


def by_name(name: str) -> ElementType:
    """The type named ``name`` (``"uint8"``, ``"tensor(uint8)"`` or TensorProto's ``"UINT8"``)."""
    key = name.strip()
    if key.startswith("tensor(") and key.endswith(")"):
        key = key[len("tensor("):-1]
    key = key.lower()
    if key not in TYPES:
        raise KeyError(f"unknown element type {name!r}; known: {', '.join(TYPES)}")
    return TYPES[key]


def by_proto(proto: int) -> ElementType:
    """The type with TensorProto enum value ``proto``."""
    if proto not in _BY_PROTO:
        name = TensorProto.DataType.Name(proto) if proto in TensorProto.DataType.values() else str(proto)
        raise KeyError(f"element type {name} is not used by the quantization operators")
    return _BY_PROTO[proto]


def by_dtype(dtype: np.dtype | type) -> ElementType:
    """The type whose numpy / ml_dtypes dtype is ``dtype``."""
    key = np.dtype(dtype)
    if key not in _BY_DTYPE:
        raise KeyError(f"numpy dtype {key} is not an ONNX quantization element type")
    return _BY_DTYPE[key]


def to_tensor_proto(array: np.ndarray, name: str = "") -> onnx.TensorProto:
    """A TensorProto holding ``array`` (sub-byte types packed as ONNX packs them)."""
    by_dtype(array.dtype)  # refuse dtypes outside the registry with a clear message
    return numpy_helper.from_array(np.asarray(array), name)


def from_tensor_proto(tensor: onnx.TensorProto, base_dir: str = "") -> np.ndarray:
    """The array held by ``tensor``, one element per item, in the registry's dtype."""
    array = numpy_helper.to_array(tensor, base_dir)
    by_dtype(array.dtype)
    return array


def bit_patterns(t: ElementType) -> np.ndarray:
    """Every code of a type of at most 16 bits, in code order, as an array of that type."""
    if t.bits > 16:
        raise ValueError(f"{t.name} has 2**{t.bits} codes: too many to enumerate")
    codes = np.arange(2**t.bits, dtype=np.uint32)
    if t.bits >= 8:
        return codes.astype(np.uint8 if t.bits == 8 else np.uint16).view(t.dtype)
    # Sub-byte types: ml_dtypes stores one element per byte; the low bits are the code, and
    # signed integer codes are sign-extended (int4 code 0b1000 is -8).
    if t.is_integer:
        values = codes.astype(np.int64)
        if t.int_min is not None and t.int_min < 0:
            values = np.where(values >= 2 ** (t.bits - 1), values - 2**t.bits, values)
        return values.astype(t.dtype)
    return codes.astype(np.uint8).view(t.dtype)


def code_of(array: np.ndarray) -> np.ndarray:
    """The bit pattern of every element (inverse of :func:`bit_patterns`), as unsigned integers."""
    t = by_dtype(array.dtype)
    if t.bits > 8:
        return array.view(np.uint16 if t.bits == 16 else np.uint32).astype(np.uint32)
    raw = array.view(np.uint8).astype(np.uint32)
    return raw & ((1 << t.bits) - 1)


def texts(array: np.ndarray) -> list[str]:
    """Each element as text at its type's own precision: the shortest decimal that reads back as the same
    float32 or float16 (float32 0.1 is ``0.1``, not float64's ``0.10000000149011612``); the exact value of a
    narrower float (float8, float4, bfloat16: exact in float32); an integer as such."""
    t = by_dtype(array.dtype)
    flat = array.reshape(-1)
    if not t.is_float:
        return [str(v) for v in flat.astype(np.int64).tolist()]
    if t.bits == 16 and t.name == "float16":
        return [str(v) for v in flat]
    return [str(v) for v in flat.astype(np.float32)]
