"""OpenVINO (CPU): reads the ONNX model directly (``Core.read_model``), compiles it for the CPU and runs it.

Every tensor is handed over as raw bytes in ONNX's layout (sub-byte types packed, low nibble first) in an
``openvino.Tensor`` of the matching ``openvino.Type``; the model is never changed. Types OpenVINO has no
element type for (float8 fnuz, int2, float6) make the case unsupported. Inference precision is pinned to f32
so that the CPU plugin does not lower float arithmetic to bf16 / f16 on CPUs that have it.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper

from ..types import TYPES, by_dtype, from_tensor_proto, to_tensor_proto
from .base import NotApplicable, Rejected, Unsupported

#: Registry type name -> openvino.Type attribute name.
OV_TYPES = {
    "float": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "uint32": "u32", "int16": "i16",
    "uint16": "u16", "int8": "i8", "uint8": "u8", "int4": "i4", "uint4": "u4", "uint2": "u2",
    "float8e4m3fn": "f8e4m3", "float8e5m2": "f8e5m2", "float8e8m0": "f8e8m0", "float4e2m1": "f4e2m1",
}
_UNSUPPORTED_MARKERS = ("not supported", "Unsupported", "unsupported", "No conversion rule",
                        "is not implemented", "doesn't support", "does not support", "Cannot create",
                        "not registered")


_NOISE = ("Exception from", "Check '", "FrontEnd API failed", "Model wasn't", "Summary", "--",
          "While validating", "Traceback")


def _first_line(text: str) -> str:
    """The informative line of an OpenVINO message (past the C++ locations and the conversion report
    frame)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(_NOISE)]
    return (useful[0] if useful else (lines[0] if lines else ""))[:300]


class OpenVinoBackend:
    name = "openvino"

    def __init__(self, device: str = "CPU") -> None:
        # an optional dependency (the openvino extra): imported when the backend is made
        import openvino as ov

        self._ov = ov
        self.version = ov.__version__.split("-")[0]
        self.full_version = ov.__version__
        self.device = device
        self._core = ov.Core()
        # (an older release lacks some: OpenVINO 2025.4 has no u2, for one)
        self._types = {k: getattr(ov.Type, v) for k, v in OV_TYPES.items() if hasattr(ov.Type, v)}
        self._by_ov = {t.get_type_name(): k for k, t in self._types.items()}

    def _tensor(self, array: np.ndarray):  # noqa: ANN202 - openvino.Tensor
        t = by_dtype(array.dtype)
        if t.name not in OV_TYPES:
            raise NotApplicable(f"OpenVINO has no element type for {t.name}")
        if t.name not in self._types:
            raise NotApplicable(f"OpenVINO {self.version} has no element type for {t.name} (openvino.Type."
                                f"{OV_TYPES[t.name]} arrived in a later release)")
        tensor = self._ov.Tensor(self._types[t.name], list(array.shape))
        raw = to_tensor_proto(np.asarray(array, order="C")).raw_data
        if raw:
            view = np.asarray(tensor.data).reshape(-1).view(np.uint8)
            if view.size != len(raw):
                raise RuntimeError(f"{t.name} tensor of shape {list(array.shape)}: OpenVINO holds "
                                   f"{view.size} bytes, ONNX's layout {len(raw)}")
            view[:] = np.frombuffer(raw, np.uint8)
        return tensor

    def _array(self, tensor) -> np.ndarray:  # noqa: ANN001 - openvino.Tensor
        name = self._by_ov.get(tensor.element_type.get_type_name())
        if name is None:
            raise RuntimeError(f"OpenVINO returned element type {tensor.element_type}, which has no ONNX "
                               "counterpart here")
        shape = list(tensor.shape)
        raw = bytes(np.asarray(tensor.data).reshape(-1).view(np.uint8)) if tensor.byte_size else b""
        return from_tensor_proto(helper.make_tensor("y", TYPES[name].proto, shape, raw, raw=True))

    def _unconverted(self, model: onnx.ModelProto) -> str | None:
        """Operators OpenVINO's ONNX frontend has no conversion rule for, asked of the frontend itself: a
        partial conversion leaves them as framework nodes (a rule that exists but refuses the node is not one
        of them, and is judged by the message markers instead). None when every operator has a rule."""
        try:
            frontend = self._ov.frontend.FrontEndManager().load_by_framework("onnx")
            with tempfile.TemporaryDirectory(prefix="qdq-ov-") as tmp:
                path = f"{tmp}/model.onnx"
                onnx.save(model, path)
                converted = frontend.convert_partially(frontend.load(path))
        except Exception:  # noqa: BLE001 - no answer from the frontend: leave it to the markers
            return None
        missing = sorted({n.op_type if not n.domain else f"{n.domain}.{n.op_type}"
                          for n in model.graph.node}) \
            if any(op.get_type_name() == "ONNXFrameworkNode" for op in converted.get_ops()) else []
        return (f"OpenVINO {self.version} has no conversion rule for {', '.join(missing)} (probe: its ONNX "
                "frontend's partial conversion left a framework node)") if missing else None

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        tensors = {k: self._tensor(np.asarray(v)) for k, v in feeds.items()}
        try:
            ov_model = self._core.read_model(io.BytesIO(model.SerializeToString()))
            compiled = self._core.compile_model(ov_model, self.device, {"INFERENCE_PRECISION_HINT": "f32"})
        except Exception as e:  # openvino raises RuntimeError / OpConversionFailure / GeneralFailure
            text = _first_line(str(e))
            why = self._unconverted(model)
            if why is not None or any(m in str(e) for m in _UNSUPPORTED_MARKERS):
                raise Unsupported(why or text) from None
            raise Rejected(text) from None
        request = compiled.create_infer_request()
        ports = {n for p in compiled.inputs for n in p.get_names()}
        for name, tensor in tensors.items():
            if name in ports:  # OpenVINO drops inputs its conversion leaves unused (a float8 zero point, say)
                request.set_tensor(name, tensor)
        request.infer()
        outputs = []
        for out in model.graph.output:
            outputs.append(self._array(request.get_tensor(out.name)))
        return outputs

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (
            f"{model_code}\n"
            "import io\n"
            "import openvino as ov\n"
            "core = ov.Core()\n"
            "compiled = core.compile_model(core.read_model(io.BytesIO(model.SerializeToString())), 'CPU',\n"
            "                              {'INFERENCE_PRECISION_HINT': 'f32'})\n"
            "request = compiled.create_infer_request()\n"
            "request.infer()  # the repro keeps every input as an initializer\n"
            f"for name in {output_names!r}:\n"
            "    t = request.get_tensor(name)\n"
            "    print(name, t.element_type, t.data)  # float8 / 4-bit types come back as raw bytes\n"
        )
