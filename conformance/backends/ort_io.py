"""Feeding and fetching every ONNX element type through ONNX Runtime's OrtValue.

ONNX Runtime's Python API does not accept ml_dtypes arrays. Every tensor is therefore handed over as raw bytes
in ONNX's own layout (sub-byte types packed, via onnx's TensorProto helpers) into an OrtValue of the exact
ONNX element type, and read back the same way; the model itself is never changed.

Only what every ONNX Runtime release from the floor (``FLOOR``) on has is used: a tensor's size in bytes is
computed from its shape and element type (``OrtValue.tensor_size_in_bytes`` arrived in 1.23), and an OrtValue
of a type numpy lacks needs ``ortvalue_from_shape_and_type`` with an ONNX element type, which arrived in 1.20
(before, ORT's Python API takes numpy types only: such a feed is unsupported, ``ort_probe.feed_refusal``).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from ..types import NUMPY_NATIVE, TYPES, ElementType, by_dtype, by_name, from_tensor_proto, to_tensor_proto

_NATIVE = NUMPY_NATIVE
_NATIVE_TYPE_STRS = {f"tensor({t.name})" for t in TYPES.values() if t.dtype in NUMPY_NATIVE}


def packed_size(t: ElementType, shape: Sequence[int]) -> int:
    """Bytes a tensor of ``t`` and ``shape`` takes in ONNX's (and ONNX Runtime's) layout: sub-byte elements
    packed, the last byte padded."""
    return math.ceil(math.prod(shape) * t.bits / 8)


def to_ortvalue(array: np.ndarray) -> ort.OrtValue:
    """An OrtValue of ``array``'s ONNX element type holding the same elements."""
    t = by_dtype(array.dtype)
    array = np.asarray(array, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    if array.dtype in _NATIVE:  # numpy's own types (float16 included) go in directly
        return ort.OrtValue.ortvalue_from_numpy(array)
    value = ort.OrtValue.ortvalue_from_shape_and_type(list(array.shape), t.proto)
    raw = to_tensor_proto(array).raw_data
    if raw:
        size = packed_size(t, array.shape)
        assert len(raw) == size, (t.name, list(array.shape), len(raw), size)
        ctypes.memmove(value.data_ptr(), raw, size)
    return value


def from_ortvalue(value: ort.OrtValue) -> np.ndarray:
    """The elements of an OrtValue tensor as an array of the registry's dtype (one element per item)."""
    t = by_name(value.data_type())
    shape = list(value.shape())
    if t.dtype in _NATIVE:
        return np.array(value.numpy(), copy=True)
    size = packed_size(t, shape)
    raw = ctypes.string_at(value.data_ptr(), size) if size else b""
    tensor = helper.make_tensor("y", t.proto, shape, raw, raw=True)
    return from_tensor_proto(tensor)


def run_session(session: ort.InferenceSession, feeds: Mapping[str, np.ndarray],
                output_names: Sequence[str] | None = None) -> list[np.ndarray]:
    """Run ``session`` on ``feeds`` through OrtValues; outputs in ``output_names`` (default: all) order."""
    names = list(output_names or [o.name for o in session.get_outputs()])
    native_out = all(o.type in _NATIVE_TYPE_STRS for o in session.get_outputs() if o.name in names)
    if native_out and all(np.asarray(v).dtype in _NATIVE for v in feeds.values()):
        # Plain numpy in and out where numpy can carry every type (the shortest path); OrtValue otherwise.
        return [np.asarray(o) for o in session.run(names, {k: np.asarray(v) for k, v in feeds.items()})]
    values = {k: to_ortvalue(np.asarray(v)) for k, v in feeds.items()}
    outs = session.run_with_ort_values(names, values)
    return [from_ortvalue(o) for o in outs]


def session(model: onnx.ModelProto, *, threads: int = 1, optimization: str = "all",
            providers: Sequence[str] = ("CPUExecutionProvider",),
            custom_ops_libraries: Sequence[str] = ()) -> ort.InferenceSession:
    """An InferenceSession on ``model`` with ``threads`` intra-op threads and the named optimization level."""
    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = levels[optimization]
    so.log_severity_level = 4  # errors come back as exceptions; the C++ log would only repeat them
    for lib in custom_ops_libraries:
        so.register_custom_ops_library(lib)
    return ort.InferenceSession(model.SerializeToString(), so, providers=list(providers))
