"""A slice of a model's constant tensor (a weight, a bias), read without the rest of it.

A graph case made around a compute node holds the model's own weights cut to a few output channels and a small
input-channel or K count (:mod:`.compute_shapes` picks the indices). Only the bytes of the picked elements are
read: from external data, byte ranges of the tensor's file (adjacent elements in one read, nothing between
them); inline raw data is sliced in memory; a tensor stored in typed fields (``int32_data`` ...) is decoded
whole, up to :data:`MAX_TYPED_ELEMENTS`. A slice whose bytes exceed :data:`MAX_SLICE_BYTES` is not read: a
reason (:class:`SliceTooLarge`), never a read of the whole weight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from onnx import TensorProto

from qdq_conformance.checker.tensors import decode, element_layout, read_external_ranges, type_label

#: the most bytes one slice may take (a few channels of a real weight take a few KiB)
MAX_SLICE_BYTES = 1 << 24
#: a weight stored in typed fields is decoded whole: up to this many elements
MAX_TYPED_ELEMENTS = 1 << 22


class SliceTooLarge(LookupError):
    """The slice cannot be read within the bounds above (the message says why)."""


def _ranges(flat: np.ndarray, size: int, per: int) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` holding the elements ``flat`` (sorted, unique), adjacent ones merged."""
    first = (flat // per) * size
    out: list[tuple[int, int]] = []
    for b in first.tolist():
        if out and b <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b + size))
        else:
            out.append((b, b + size))
    return out


def read_slice(t: TensorProto, base_dir: Path, picks: Sequence[Sequence[int]]) -> np.ndarray:
    """``t[np.ix_(*picks)]`` as float64, reading only the bytes it needs (SliceTooLarge when the slice cannot
    be read within the bounds; the checker's Unreadable for data that does not fit its tensor)."""
    dims = tuple(int(d) for d in t.dims)
    if len(picks) != len(dims):
        raise ValueError(f"tensor {t.name!r}: {len(picks)} index lists for rank {len(dims)}")
    shape = tuple(len(p) for p in picks)
    if not math.prod(shape):
        return np.zeros(shape)
    grid = np.ix_(*[np.asarray(p, np.int64) for p in picks])
    flat = np.ravel_multi_index(grid, dims).reshape(-1)
    if t.data_location != TensorProto.EXTERNAL and not t.HasField("raw_data"):
        if math.prod(dims) > MAX_TYPED_ELEMENTS:
            raise SliceTooLarge(f"tensor {t.name!r} is stored in typed fields and holds {math.prod(dims)} "
                                f"elements (more than {MAX_TYPED_ELEMENTS} are not decoded)")
        return decode(t).astype(np.float64)[flat].reshape(shape)
    layout = element_layout(t.data_type)
    if layout is None:
        raise SliceTooLarge(f"tensor {t.name!r}: {type_label(t.data_type)} elements are not sliced")
    size, per = layout
    wanted = np.unique(flat)
    ranges = _ranges(wanted, size, per)
    total = sum(b - a for a, b in ranges)
    if total > MAX_SLICE_BYTES:
        raise SliceTooLarge(f"the slice of tensor {t.name!r} spans {total} bytes (more than "
                            f"{MAX_SLICE_BYTES >> 20} MiB are not read)")
    if t.data_location == TensorProto.EXTERNAL:
        chunks = read_external_ranges(t, base_dir, ranges)
    else:
        raw = t.raw_data
        chunks = [raw[a:b] for a, b in ranges]
    starts = np.array([a // size * per for a, _ in ranges], np.int64)  # first element of each range
    # each range is whole elements (whole bytes of a packed type): their bytes together decode as one tensor
    joined = b"".join(chunks)
    values = decode(TensorProto(name=t.name, data_type=t.data_type, dims=[len(joined) // size * per],
                                raw_data=joined)).astype(np.float64)
    offsets = np.cumsum([0] + [len(c) // size * per for c in chunks[:-1]])
    k = np.searchsorted(starts, flat, side="right") - 1
    return values[offsets[k] + flat - starts[k]].reshape(shape)
