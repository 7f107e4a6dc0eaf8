"""OpenVINO (CPU): reads the ONNX model directly (``Core.read_model``), compiles it for the CPU and runs it,
through its kit (``kits/openvino.py``: inference precision pinned to f32, tensors as raw bytes in ONNX's
layout). Types OpenVINO has no element type for (float8 fnuz, int2, float6) make the case unsupported; the
model is never changed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper

from . import kits
from .backend_options import check_openvino
from .base import NotApplicable, Rejected, Unsupported

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

    def __init__(self, device: str = "CPU", properties: dict[str, str] | None = None) -> None:
        # an optional dependency (the openvino extra): imported when the backend is made
        from .kits import openvino as kit

        self.kit = kit
        self._ov = kit.ov
        self.version = kit.ov.__version__.split("-")[0]
        self.full_version = kit.ov.__version__
        self.device = device
        self._core = kit.ov.Core()
        self.properties = check_openvino(self._core, device, properties or {})
        if self.properties:  # (a value OpenVINO refuses: refused now, in its words, not in every case)
            try:
                self.kit.compiled(self._core, _identity(), device, self.properties)
            except Exception as e:  # noqa: BLE001 - openvino raises RuntimeError and its own types
                raise ValueError(f"--backend-option: OpenVINO's {device} plugin refuses "
                                 f"{', '.join(f'{k}={v}' for k, v in self.properties.items())}: "
                                 f"{_first_line(str(e))}") from None

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
        for value in feeds.values():
            name = self.kit.type_name(np.asarray(value).dtype)
            if name not in self.kit.OV_TYPES:
                raise NotApplicable(f"OpenVINO has no element type for {name}")
            if not hasattr(self._ov.Type, self.kit.OV_TYPES[name]):  # (OpenVINO 2025.4 has no u2, for one)
                raise NotApplicable(f"OpenVINO {self.version} has no element type for {name} (openvino.Type."
                                    f"{self.kit.OV_TYPES[name]} arrived in a later release)")
        try:
            compiled = self.kit.compiled(self._core, model, self.device, self.properties)
        except Exception as e:  # openvino raises RuntimeError / OpConversionFailure / GeneralFailure
            text = _first_line(str(e))
            why = self._unconverted(model)
            if why is not None or any(m in str(e) for m in _UNSUPPORTED_MARKERS):
                raise Unsupported(why or text) from None
            raise Rejected(text) from None
        return self.kit.infer(compiled, dict(feeds), [o.name for o in model.graph.output])

    def repro(self, model_code: str, output_names: list[str]) -> str:
        made = kits.call("compiled", "ov.Core()", "model", device=self.device, properties=self.properties)
        return kits.script(self.kit, model_code, [
            f"outputs = infer({made}, feeds, {output_names!r})"], output_names)


def _identity() -> onnx.ModelProto:
    """The smallest model (float Identity), compiled once to try --backend-option's properties."""
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
