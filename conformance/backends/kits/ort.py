"""How qdq-conformance's ``ort`` backend runs a model with ONNX Runtime (and ``quark``, with AMD Quark's
custom-op library registered): the session it makes and how every element type goes in and comes out.

This module is the backend's run path, and every ``ort`` repro script holds it verbatim: it imports nothing
but numpy, onnx and onnxruntime. ONNX Runtime's Python API does not take ml_dtypes arrays, so a float8, 4-bit,
2-bit or bfloat16 tensor goes over as raw bytes in ONNX's layout (sub-byte types packed) into an OrtValue of
the exact element type, and comes back the same way; the model itself is never changed.

Only what every ONNX Runtime release from qdq-conformance's floor on has is used: a tensor's size in bytes is
computed from its shape and element type (``OrtValue.tensor_size_in_bytes`` arrived in 1.23), and an OrtValue
of a type numpy lacks needs ``ortvalue_from_shape_and_type`` with an ONNX element type, which arrived in 1.20
(before, ONNX Runtime's Python API takes numpy types only, and such a feed is unsupported).
"""

import ctypes
import math

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

#: --ort-optimization -> ONNX Runtime's graph optimization level
LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}
#: numpy's own dtypes, which ONNX Runtime's Python API takes and returns as they are
NATIVE = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                          np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64))
#: ONNX element type by ONNX Runtime's lower-case name (``tensor(float8e4m3fn)``)
ELEMENT_TYPES = {name.lower(): value for name, value in onnx.TensorProto.DataType.items()}
#: ONNX Runtime's names of the types in NATIVE
NATIVE_NAMES = frozenset(
    f"tensor({onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(d)).lower()})" for d in NATIVE)
#: bits of an element of the sub-byte types, by ONNX element type name (every other type: its itemsize)
SUB_BYTE_BITS = {"INT4": 4, "UINT4": 4, "FLOAT4E2M1": 4, "INT2": 2, "UINT2": 2}


def packed_size(elem: int, shape: list[int]) -> int:
    """Bytes a tensor of ONNX element type ``elem`` and ``shape`` takes in ONNX's (and ONNX Runtime's)
    layout: sub-byte elements packed, the last byte padded."""
    name = onnx.TensorProto.DataType.Name(elem)
    bits = SUB_BYTE_BITS.get(name) or 8 * np.dtype(helper.tensor_dtype_to_np_dtype(elem)).itemsize
    return math.ceil(math.prod(shape) * bits / 8)


def set_option(so: ort.SessionOptions, key: str, value: str) -> None:
    """One ``--backend-option KEY=VALUE``: a SessionOptions attribute (``enable_mem_reuse=0``), set with the
    attribute's own type, else a session config entry (``session.disable_quant_qdq=1``)."""
    if not isinstance(getattr(type(so), key, None), property):
        so.add_session_config_entry(key, value)
        return
    current = getattr(so, key)
    if isinstance(current, bool):
        setattr(so, key, value.strip().lower() in ("1", "true", "yes", "on"))
    elif isinstance(current, int):
        setattr(so, key, int(value))
    elif isinstance(current, str):
        setattr(so, key, value)
    else:  # an enumeration (execution_mode=ORT_PARALLEL)
        setattr(so, key, getattr(type(current), value))


def session(model: onnx.ModelProto, provider: str = "CPUExecutionProvider", optimization: str = "all",
            threads: int = 1, custom_ops_libraries: tuple[str, ...] | list[str] = (),
            options: dict[str, str] | None = None) -> ort.InferenceSession:
    """An InferenceSession on ``model`` (an onnx.ModelProto): one intra-op thread unless told, the named
    graph optimization level (ONNX Runtime's default is "all"), the libraries registered, the options set."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[optimization])
    so.log_severity_level = 4  # errors come back as exceptions; the C++ log would only repeat them
    for library in custom_ops_libraries:
        so.register_custom_ops_library(library)
    for key, value in (options or {}).items():
        set_option(so, key, value)
    return ort.InferenceSession(model.SerializeToString(), so, providers=[provider])


def to_ortvalue(array: np.ndarray) -> ort.OrtValue:
    """An OrtValue of ``array``'s ONNX element type holding the same elements."""
    array = np.asarray(array, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    if array.dtype in NATIVE:  # numpy's own types (float16 included) go in directly
        return ort.OrtValue.ortvalue_from_numpy(array)
    elem = helper.np_dtype_to_tensor_dtype(array.dtype)
    value = ort.OrtValue.ortvalue_from_shape_and_type(list(array.shape), elem)
    raw = numpy_helper.from_array(array).raw_data  # (ONNX's layout: sub-byte types packed)
    if raw:
        size = packed_size(elem, list(array.shape))
        if len(raw) != size:
            raise RuntimeError(f"element type {elem}, shape {list(array.shape)}: ONNX's layout has "
                               f"{len(raw)} bytes, the OrtValue {size}")
        ctypes.memmove(value.data_ptr(), raw, size)
    return value


def from_ortvalue(value: ort.OrtValue) -> np.ndarray:
    """The elements of an OrtValue tensor as an array (ml_dtypes for float8, 4-bit, ...; one element per
    item)."""
    elem = ELEMENT_TYPES[value.data_type().removeprefix("tensor(").removesuffix(")")]
    if np.dtype(helper.tensor_dtype_to_np_dtype(elem)) in NATIVE:
        return np.array(value.numpy(), copy=True)
    shape = list(value.shape())
    size = packed_size(elem, shape)
    raw = ctypes.string_at(value.data_ptr(), size) if size else b""
    return numpy_helper.to_array(helper.make_tensor("y", elem, shape, raw, raw=True))


def run(sess: ort.InferenceSession, feeds: dict[str, np.ndarray],
        output_names: list[str] | None = None) -> list[np.ndarray]:
    """Run ``sess`` on ``feeds``; the outputs in ``output_names`` (default: all) order."""
    names = list(output_names or [o.name for o in sess.get_outputs()])
    if all(o.type in NATIVE_NAMES for o in sess.get_outputs() if o.name in names) and \
            all(np.asarray(v).dtype in NATIVE for v in feeds.values()):
        # plain numpy in and out where numpy carries every type (the shortest path); OrtValues otherwise
        return [np.asarray(o) for o in sess.run(names, {k: np.asarray(v) for k, v in feeds.items()})]
    outs = sess.run_with_ort_values(names, {k: to_ortvalue(np.asarray(v)) for k, v in feeds.items()})
    return [from_ortvalue(o) for o in outs]

