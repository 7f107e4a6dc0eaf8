"""Tensor storage for the checker: what a TensorProto's type, dims and data must agree on, where external data
may live, and bounded reads of the few values a rule needs.

Nothing here loads a weight. Validation looks at types, dims, typed-field counts, the length of inline data
(only for tensors whose dims make them small) and, for external data, the file's kind and size: a location
must name a regular file inside the model's folder (never a FIFO or a device, which would block or never end),
and the tensor's bytes must lie within it. Values are read in chunks of at most :data:`CHUNK` bytes, and never
for a tensor larger than :data:`MAX_VALUE_BYTES`. Every problem is an :class:`Unreadable` with a one-line
message.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from onnx import TensorProto, numpy_helper

from .model_errors import Unreadable

#: More elements than this in one tensor or declared shape is taken for a corrupt header (2**56: an exbibyte
#: of int8), and keeps every stand-in array the checker builds within numpy's limits.
MAX_ELEMENTS = 2**56
#: Values of larger scales and zero points are not read (a note says so); real ones are far smaller.
MAX_VALUE_BYTES = 2**30
#: Bytes read at a time: a multiple of 3 (6-bit types pack 4 values in 3 bytes) and of 16 (complex128).
CHUNK = 3 * 2**20
#: Inline data is measured only for tensors whose dims need at most this many bytes: reading the length of a
#: protobuf bytes field copies it, and the checker never touches a weight's data.
MAX_MEASURED_INLINE = 2**24

_PACKED: dict[int, int] = {TensorProto.INT4: 2, TensorProto.UINT4: 2, TensorProto.FLOAT4E2M1: 2}
_PACKED.update({getattr(TensorProto, n): 4 for n in ("INT2", "UINT2") if hasattr(TensorProto, n)})
_SIX_BIT: set[int] = {getattr(TensorProto, n) for n in ("FLOAT6E2M3", "FLOAT6E3M2")
                      if hasattr(TensorProto, n)}
_ITEMSIZE: dict[int, int] = {TensorProto.FLOAT: 4, TensorProto.UINT8: 1, TensorProto.INT8: 1,
                             TensorProto.UINT16: 2,
             TensorProto.INT16: 2, TensorProto.INT32: 4, TensorProto.INT64: 8, TensorProto.BOOL: 1,
             TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8, TensorProto.UINT32: 4, TensorProto.UINT64: 8,
             TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16, TensorProto.BFLOAT16: 2}
_ITEMSIZE.update({getattr(TensorProto, n): 1 for n in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                                        "FLOAT8E5M2FNUZ", "FLOAT8E8M0")
                  if hasattr(TensorProto, n)})
_FIELDS: dict[str, tuple[int, ...]] = {"float_data": (TensorProto.FLOAT, TensorProto.COMPLEX64),
           "int64_data": (TensorProto.INT64,), "double_data": (TensorProto.DOUBLE, TensorProto.COMPLEX128),
           "uint64_data": (TensorProto.UINT32, TensorProto.UINT64), "string_data": (TensorProto.STRING,)}
_DIGITS = re.compile(r"[0-9]{1,19}")


def type_label(data_type: int) -> str:
    known = data_type in TensorProto.DataType.values()
    return TensorProto.DataType.Name(data_type).lower() if known else f"data_type {data_type}"


def element_count(dims: list[int] | tuple[int, ...], what: str) -> int:
    """The number of elements ``dims`` describe; refuses negative dims and implausible totals."""
    if any(d < 0 for d in dims):
        raise Unreadable(f"{what}: dims {list(dims)} hold a negative dimension")
    n = math.prod(dims)
    if n > MAX_ELEMENTS:
        raise Unreadable(f"{what}: dims {list(dims)} describe {n} elements, too large for any tensor "
                         "(a corrupt header?)")
    return n


def storage_bytes(data_type: int, n: int) -> tuple[int, int] | None:
    """The least and most bytes ``n`` elements take as raw data (packed types), None for strings."""
    if data_type in _PACKED:
        per = _PACKED[data_type]
        return -(-n // per), -(-n // per)
    if data_type in _SIX_BIT:
        return -(-n * 6 // 8), -(-n // 4) * 3
    if data_type in _ITEMSIZE:
        return n * _ITEMSIZE[data_type], n * _ITEMSIZE[data_type]
    return None


def element_layout(data_type: int) -> tuple[int, int] | None:
    """(bytes per element, elements per byte) of raw data: (4, 1) for float, (1, 2) for the 4-bit types; None
    for types whose elements do not sit on byte boundaries this way (strings, the 6-bit types)."""
    if data_type in _PACKED:
        return 1, _PACKED[data_type]
    if data_type in _ITEMSIZE:
        return _ITEMSIZE[data_type], 1
    return None


def _typed_count(data_type: int, n: int) -> tuple[str, int]:
    """The typed field a tensor without raw data stores its values in, and how many entries it needs."""
    for name, types in _FIELDS.items():
        if data_type in types:
            return name, 2 * n if data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else n
    if data_type in _PACKED:
        return "int32_data", -(-n // _PACKED[data_type])
    return "int32_data", n


def check_tensor(t: TensorProto, base_dir: Path, sizes: dict[Path, int]) -> None:
    """One tensor's type, dims and data agree, and its external data (if any) lies in a regular file."""
    what = f"tensor {t.name!r}"
    if t.data_type == TensorProto.UNDEFINED or t.data_type not in TensorProto.DataType.values():
        shown = ("no data_type" if t.data_type == TensorProto.UNDEFINED
                 else f"data_type {t.data_type}, which "
                 "is not an ONNX element type")
        raise Unreadable(f"{what} has {shown}")
    n = element_count(tuple(t.dims), what)
    if t.HasField("segment"):
        return
    span = storage_bytes(t.data_type, n)
    if t.data_location == TensorProto.EXTERNAL:
        check_external(t, base_dir, span, sizes)
        return
    if t.HasField("raw_data"):
        if span is None:
            raise Unreadable(f"{what}: a {type_label(t.data_type)} tensor cannot hold raw_data")
        if span[0] <= MAX_MEASURED_INLINE and not span[0] <= len(t.raw_data) <= span[1]:
            raise Unreadable(f"{what}: raw_data holds {len(t.raw_data)} bytes; dims {list(t.dims)} of "
                             f"{type_label(t.data_type)} need {span[0]}")
        return
    field, needed = _typed_count(t.data_type, n)
    held = len(getattr(t, field))
    if held != needed:
        raise Unreadable(f"{what}: {field} holds {held} values; dims {list(t.dims)} of "
                         f"{type_label(t.data_type)} need {needed}")


def _external_info(t: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _number(info: dict[str, str], key: str, what: str) -> int | None:
    value = info.get(key)
    if value is None:
        return None
    if not _DIGITS.fullmatch(value) or int(value) >= 2**63:
        raise Unreadable(f"{what}: external data {key} {value!r} is not a non-negative integer below 2**63")
    return int(value)


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket or other special file"


def regular_file(path: Path, what: str) -> int:
    """``path``'s size, if it is a regular file (stat only: a FIFO or a device is never opened)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise Unreadable(f"{what} cannot be read ({reason})") from None
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(f"{what} is not a regular file ({file_kind(st.st_mode)})")
    return st.st_size


def external_location(t: TensorProto, base_dir: Path) -> tuple[Path, int, int | None]:
    """The file, offset and length of an externally stored tensor, the location checked to stay inside
    ``base_dir``."""
    what = f"tensor {t.name!r}"
    info = _external_info(t)
    location = info.get("location")
    if not location:
        raise Unreadable(f"{what} is stored externally but names no location")
    if "\0" in location:
        raise Unreadable(f"{what}: external data location {location!r} holds a NUL character")
    if os.path.isabs(location) or location.startswith(("/", "\\")):
        raise Unreadable(f"{what}: external data location {location!r} is outside the model's folder")
    try:
        root = base_dir.resolve()
        path = (root / location).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        raise Unreadable(f"{what}: external data location {location!r} cannot be resolved ({e})") from None
    if root not in path.parents:
        raise Unreadable(f"{what}: external data location {location!r} is outside the model's folder")
    return path, _number(info, "offset", what) or 0, _number(info, "length", what)


def check_external(t: TensorProto, base_dir: Path, span: tuple[int, int] | None,
                   sizes: dict[Path, int]) -> None:
    what = f"tensor {t.name!r}"
    if span is None:
        raise Unreadable(f"{what}: a {type_label(t.data_type)} tensor cannot be stored externally")
    path, offset, length = external_location(t, base_dir)
    location = _external_info(t)["location"]
    if length is not None and not span[0] <= length <= span[1]:
        raise Unreadable(f"{what}: external data length is {length} bytes; dims {list(t.dims)} of "
                         f"{type_label(t.data_type)} need {span[0]}")
    if path not in sizes:
        sizes[path] = regular_file(path, f"{what}: external data file {location!r}")
    end = offset + (span[0] if length is None else length)
    if end > sizes[path]:
        raise Unreadable(f"{what}: external data file {location!r} has {sizes[path]} bytes, the tensor needs "
                         f"bytes {offset}..{end}")


def read_external(t: TensorProto, base_dir: Path) -> Iterator[bytes]:
    """The bytes of one externally stored tensor, in chunks of at most :data:`CHUNK` bytes."""
    for _, chunk in _read_external(t, base_dir, None):
        yield chunk


def read_external_ranges(t: TensorProto, base_dir: Path, ranges: list[tuple[int, int]]) -> list[bytes]:
    """Bytes ``[start, end)`` of one externally stored tensor's data, one ``bytes`` per range: only those
    bytes are read, never the rest of the tensor or the file."""
    out = [bytearray() for _ in ranges]
    for k, chunk in _read_external(t, base_dir, ranges):
        out[k] += chunk
    return [bytes(b) for b in out]


def _read_external(t: TensorProto, base_dir: Path,
                   ranges: list[tuple[int, int]] | None) -> Iterator[tuple[int, bytes]]:
    """(range index, chunk) for each range of the tensor's data (None: all of it), in chunks of at most
    :data:`CHUNK` bytes."""
    n = element_count(tuple(t.dims), f"tensor {t.name!r}")
    span = storage_bytes(t.data_type, n)
    if span is None:
        raise Unreadable(f"tensor {t.name!r}: a {type_label(t.data_type)} tensor cannot be stored externally")
    path, offset, length = external_location(t, base_dir)
    size = span[0] if length is None else length
    for start, end in ranges or ():
        if not 0 <= start <= end <= size:
            raise Unreadable(f"tensor {t.name!r}: bytes {start}..{end} are outside its {size} bytes")
    regular_file(path, f"tensor {t.name!r}: external data file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise Unreadable(f"tensor {t.name!r}: external data file cannot be opened ({e.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise Unreadable(f"tensor {t.name!r}: external data file is not a regular file")
        for k, (start, end) in enumerate([(0, size)] if ranges is None else ranges):
            at, left = offset + start, end - start
            while left > 0:
                try:
                    fh.seek(at)
                    chunk = fh.read(min(left, CHUNK))
                except OSError as e:
                    raise Unreadable(f"tensor {t.name!r}: external data file cannot be read "
                                     f"({e.strerror})") from None
                if not chunk:
                    raise Unreadable(f"tensor {t.name!r}: external data file ends {left} bytes before the "
                                     "tensor does")
                left -= len(chunk)
                at += len(chunk)
                yield k, chunk


def decode_chunks(t: TensorProto, chunks: Iterator[bytes]) -> Iterator[np.ndarray]:
    """Raw little-endian chunks of ``t``'s data as flat arrays (packed types unpacked)."""
    n = element_count(tuple(t.dims), f"tensor {t.name!r}")
    per_byte = _PACKED.get(t.data_type, 1)
    done = 0
    for chunk in chunks:
        if t.data_type in _SIX_BIT:
            count = min(n - done, len(chunk) * 8 // 6)
        elif t.data_type in _PACKED:
            count = min(n - done, len(chunk) * per_byte)
        else:
            count = min(n - done, len(chunk) // _ITEMSIZE.get(t.data_type, 1))
        yield decode(TensorProto(name=t.name, data_type=t.data_type, dims=[count], raw_data=chunk))
        done += count


def decode(t: TensorProto) -> np.ndarray:
    """An inline tensor's values, flat; data that does not fit its dims is :class:`Unreadable`."""
    try:
        return numpy_helper.to_array(t).reshape(-1)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeDecodeError, MemoryError) as e:
        reason = " ".join(str(e).split())[:160] or type(e).__name__
        raise Unreadable(f"tensor {t.name!r}: its data cannot be decoded ({reason})") from None
