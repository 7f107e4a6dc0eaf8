"""Apache TVM (CPU, target ``llvm``): Relax's ONNX importer, ``tvm.compile`` and the Relax virtual machine.

Inputs go in as ``tvm.runtime.Tensor`` copies of the case's arrays; a type TVM cannot take from numpy /
ml_dtypes, a sub-byte input or output (TVM's Python API does not pack them and its packing order is
undocumented), or an operator version its importer does not convert, makes the case unsupported with the
reason.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx

from ..types import TYPES, by_dtype
from . import kits
from .base import NotApplicable, Rejected, Unsupported

_UNSUPPORTED_MARKERS = ("Unsupported", "unsupported", "not supported", "not implemented", "NotImplemented",
                        "OpNotImplemented", "is not a valid", "Unknown data type", "Cannot convert")


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines()
             if ln.strip() and not ln.strip().startswith(("File ", "["))]
    return (lines[-1] if lines else str(text).strip())[:300]


class TvmBackend:
    name = "tvm"

    def __init__(self, target: str = "llvm") -> None:
        # an optional dependency (the tvm extra), imported when the backend is made
        from .kits import tvm as kit

        self.kit = kit
        self.version = kit.tvm.__version__
        self.target = target

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        for vi in [*model.graph.input, *model.graph.output]:
            elem = vi.type.tensor_type.elem_type
            t = next((t for t in TYPES.values() if t.proto == elem), None)
            if t is not None and t.bits < 8:
                raise NotApplicable(f"this adapter does not exchange {t.name} tensors with TVM "
                                    "(tvm.runtime.Tensor does not pack sub-byte types from numpy, and its "
                                    "packing order is undocumented)")
        args = []
        for inp in model.graph.input:  # (the kit's arguments(), one by one: which type TVM cannot take)
            value = np.asarray(feeds[inp.name])
            try:
                args.append(self.kit.tensor(value))
            except Exception as e:  # noqa: BLE001 - TVM raises TVMError / ValueError / TypeError here
                raise NotApplicable(f"TVM cannot take a {by_dtype(value.dtype).name} input: "
                                    f"{_first_line(str(e))}") from None
        try:
            vm = self.kit.machine(model, self.target)
        except Exception as e:  # noqa: BLE001 - the importer raises many types; its message says which case
            text = str(e)
            if any(m in text for m in _UNSUPPORTED_MARKERS) or isinstance(e, NotImplementedError):
                raise Unsupported(_first_line(text)) from None
            raise Rejected(_first_line(text)) from None
        return self.kit.run(vm, args)

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return kits.script(self.kit, model_code, [
            f"outputs = run({kits.call('machine', 'model', target=self.target)}, arguments(model, feeds))"],
            output_names)
