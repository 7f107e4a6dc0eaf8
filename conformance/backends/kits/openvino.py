"""How qdq-conformance's ``openvino`` backend runs a model: OpenVINO reads the ONNX model itself
(``Core.read_model``), compiles it for the device (CPU) with inference precision pinned to f32, so that the
CPU plugin does not lower float arithmetic to bf16 / f16 on processors that have them, and with the
--backend-option properties; every tensor goes over as raw bytes in ONNX's layout (sub-byte types packed, low
nibble first) in an ``openvino.Tensor`` of the matching element type. This module is the backend's run path,
and every ``openvino`` repro script holds it verbatim: it imports nothing but numpy, onnx and openvino."""

import io

import numpy as np
import onnx
import openvino as ov
from onnx import helper, numpy_helper

#: ONNX element type name -> openvino.Type attribute (types OpenVINO has no element type for are absent)
OV_TYPES = {
    "float": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "uint32": "u32", "int16": "i16",
    "uint16": "u16", "int8": "i8", "uint8": "u8", "int4": "i4", "uint4": "u4", "uint2": "u2",
    "float8e4m3fn": "f8e4m3", "float8e5m2": "f8e5m2", "float8e8m0": "f8e8m0", "float4e2m1": "f4e2m1",
}
#: properties every compilation gets (--backend-option adds to them)
PROPERTIES = {"INFERENCE_PRECISION_HINT": "f32"}


def type_name(dtype: np.dtype) -> str:
    """The ONNX element type name of a numpy / ml_dtypes dtype (``float``, ``float8e4m3fn``, ...)."""
    return onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(np.dtype(dtype))).lower()


def compiled(core: ov.Core, model: onnx.ModelProto, device: str = "CPU",
             properties: dict[str, str] | None = None) -> ov.CompiledModel:
    """``model`` read by OpenVINO's ONNX frontend and compiled for ``device``."""
    ov_model = core.read_model(io.BytesIO(model.SerializeToString()))
    return core.compile_model(ov_model, device, {**PROPERTIES, **(properties or {})})


def tensor(array: np.ndarray) -> ov.Tensor:
    """An openvino.Tensor of ``array``'s element type holding its bytes in ONNX's layout."""
    array = np.asarray(array, order="C")
    name = type_name(array.dtype)
    out = ov.Tensor(getattr(ov.Type, OV_TYPES[name]), list(array.shape))
    raw = numpy_helper.from_array(array).raw_data
    if raw:
        view = np.asarray(out.data).reshape(-1).view(np.uint8)
        if view.size != len(raw):
            raise RuntimeError(f"{name} tensor of shape {list(array.shape)}: OpenVINO holds {view.size} "
                               f"bytes, ONNX's layout {len(raw)}")
        view[:] = np.frombuffer(raw, np.uint8)
    return out


def array(t: ov.Tensor) -> np.ndarray:
    """An openvino.Tensor's elements as an array of its ONNX element type (ml_dtypes for float8, 4-bit,
    ...)."""
    by_ov = {getattr(ov.Type, v).get_type_name(): k for k, v in OV_TYPES.items()
             if hasattr(ov.Type, v)}  # (an older release lacks some: 2025.4 has no u2)
    name = by_ov.get(t.element_type.get_type_name())
    if name is None:
        raise RuntimeError(f"OpenVINO returned element type {t.element_type}, which has no ONNX counterpart")
    raw = bytes(np.asarray(t.data).reshape(-1).view(np.uint8)) if t.byte_size else b""
    elem = onnx.TensorProto.DataType.Value(name.upper())
    return numpy_helper.to_array(helper.make_tensor("y", elem, list(t.shape), raw, raw=True))


def infer(model: ov.CompiledModel, feeds: dict[str, np.ndarray], output_names: list[str]) -> list[np.ndarray]:
    """One inference of a compiled model on ``feeds``; the outputs named, in that order."""
    request = model.create_infer_request()
    ports = {n for p in model.inputs for n in p.get_names()}
    for name, value in feeds.items():
        if name in ports:  # OpenVINO drops inputs its conversion leaves unused (a float8 zero point, say)
            request.set_tensor(name, tensor(value))
    request.infer()
    return [array(request.get_tensor(name)) for name in output_names]
