"""A slice of a model's weight, as ``cases --from-model`` reads it for a compute graph case: the same values
as slicing the whole tensor, for every storage (external data, inline raw data, typed fields; 4-bit packed,
odd counts), reading only the bytes of the picked elements, and a bound instead of a read of a huge slice."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_conformance.checker import tensors
from qdq_conformance.checker.tensors import Unreadable, read_external_ranges
from qdq_conformance.generators.frommodel import weights
from qdq_conformance.generators.frommodel.weights import SliceTooLarge, read_slice

PICKS = [[0, 2, 3, 6], [1, 2, 3, 8]]  # (adjacent and apart, the last element of odd rows too)


def _external(t: TensorProto, folder: Path, pad: int = 5) -> TensorProto:
    """``t`` stored at an offset of an external file (other bytes before it)."""
    (folder / "w.bin").write_bytes(b"\xee" * pad + t.raw_data + b"\xee" * 3)
    out = TensorProto(name=t.name, data_type=t.data_type, dims=t.dims, data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", str(pad)), ("length", str(len(t.raw_data)))):
        out.external_data.add(key=k, value=v)
    return out


def _tensors() -> dict[str, tuple[TensorProto, np.ndarray]]:
    rng = np.random.default_rng(5)
    f = rng.standard_normal((7, 9)).astype(np.float32)
    i4 = rng.integers(-8, 8, (7, 9))
    u4 = rng.integers(0, 16, (7, 9))
    i8 = rng.integers(-128, 128, (7, 9)).astype(np.int8)
    i32 = rng.integers(-5000, 5000, (7, 9)).astype(np.int32)
    return {
        "float": (numpy_helper.from_array(f, "f"), f),
        "int4 (packed, odd count)": (numpy_helper.from_array(i4.astype(ml_dtypes.int4), "i4"), i4),
        "uint4": (numpy_helper.from_array(u4.astype(ml_dtypes.uint4), "u4"), u4),
        "int8": (numpy_helper.from_array(i8, "i8"), i8),
        "int32 typed fields": (helper.make_tensor("i32", TensorProto.INT32, [7, 9], i32.reshape(-1).tolist()),
                               i32),
    }


@pytest.mark.parametrize(("name", "where"), [(n, w) for n in _tensors() for w in ("inline", "external")
                                             if w == "inline" or "typed" not in n])  # (typed: never external)
def test_a_slice_is_the_tensors_own_values(name, where, tmp_path):
    t, values = _tensors()[name]
    if where == "external":
        t = _external(t, tmp_path)
    got = read_slice(t, tmp_path, PICKS)
    assert got.shape == (4, 4) and np.array_equal(got, values[np.ix_(*PICKS)].astype(np.float64))


def test_only_the_picked_bytes_are_read(tmp_path, monkeypatch):
    t, values = _tensors()["float"]
    t = _external(t, tmp_path)
    asked: list[tuple[int, int]] = []

    def spy(tensor, base_dir, ranges):  # noqa: ANN001, ANN202
        asked.extend(ranges)
        return read_external_ranges(tensor, base_dir, ranges)

    monkeypatch.setattr(weights, "read_external_ranges", spy)
    monkeypatch.setattr(tensors, "read_external", lambda *a: pytest.fail("the whole tensor was read"))
    assert np.array_equal(read_slice(t, tmp_path, PICKS), values[np.ix_(*PICKS)])
    # rows 0, 2, 3, 6 x columns 1-3 (adjacent: one range) and 8: 8 ranges of 4 bytes x 3 or x 1
    assert sum(b - a for a, b in asked) == 16 * 4 and len(asked) == 8


def test_a_huge_slice_is_a_reason_not_a_read(tmp_path, monkeypatch):
    t, _ = _tensors()["float"]
    monkeypatch.setattr(weights, "MAX_SLICE_BYTES", 32)
    with pytest.raises(SliceTooLarge, match="spans 64 bytes"):
        read_slice(_external(t, tmp_path), tmp_path, PICKS)
    typed, _ = _tensors()["int32 typed fields"]
    monkeypatch.setattr(weights, "MAX_TYPED_ELEMENTS", 10)
    with pytest.raises(SliceTooLarge, match="typed fields"):
        read_slice(typed, tmp_path, PICKS)


def test_ranges_outside_the_tensor_or_its_file_are_unreadable(tmp_path):
    t, _ = _tensors()["int8"]
    ext = _external(t, tmp_path)
    with pytest.raises(Unreadable, match="outside its 63 bytes"):
        read_external_ranges(ext, tmp_path, [(60, 64)])
    (tmp_path / "w.bin").write_bytes(b"\0" * 10)  # (the file shorter than the tensor says)
    with pytest.raises(Unreadable, match="ends"):
        read_external_ranges(ext, tmp_path, [(0, 63)])
