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
        import tvm  # an optional dependency (the tvm extra): imported when the backend is made

        self._tvm = tvm
        self.version = tvm.__version__
        self.target = target

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        tvm = self._tvm
        from tvm import relax  # (tvm, optional: see __init__)
        from tvm.relax.frontend.onnx import from_onnx

        for vi in [*model.graph.input, *model.graph.output]:
            elem = vi.type.tensor_type.elem_type
            t = next((t for t in TYPES.values() if t.proto == elem), None)
            if t is not None and t.bits < 8:
                raise NotApplicable(f"this adapter does not exchange {t.name} tensors with TVM "
                                    "(tvm.runtime.Tensor "
                                  "does not pack sub-byte types from numpy, and its packing order is "
                                  "undocumented)")
        args = []
        for inp in model.graph.input:
            value = np.asarray(feeds[inp.name], order="C")  # keeps 0-d arrays 0-d
            try:
                tensor = tvm.runtime.empty(value.shape, str(value.dtype), tvm.cpu())
                tensor.copyfrom(value)
                args.append(tensor)
            except Exception as e:  # noqa: BLE001 - TVM raises TVMError / ValueError / TypeError here
                raise NotApplicable(f"TVM cannot take a {by_dtype(value.dtype).name} input: "
                                    f"{_first_line(str(e))}") \
                    from None
        try:
            mod = from_onnx(model, keep_params_in_input=False)
            vm = relax.VirtualMachine(tvm.compile(mod, target=self.target), tvm.cpu())
        except Exception as e:  # noqa: BLE001 - the importer raises many types; its message says which case
            text = str(e)
            if any(m in text for m in _UNSUPPORTED_MARKERS) or isinstance(e, NotImplementedError):
                raise Unsupported(_first_line(text)) from None
            raise Rejected(_first_line(text)) from None
        out = vm["main"](*args)
        outs = list(out) if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else [out]
        return [self._to_array(o) for o in outs]

    @staticmethod
    def _to_array(value) -> np.ndarray:  # noqa: ANN001 - tvm.runtime.Tensor
        a = value.numpy()
        dtype = str(value.dtype)
        for t in TYPES.values():  # TVM spells sub-byte and float8 types its own way; numpy() may widen them
            if t.dtype == a.dtype or dtype in (t.name, str(t.dtype)):
                return a.astype(t.dtype) if a.dtype != t.dtype else a
        return a

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (
            f"{model_code}\n"
            "import tvm\n"
            "from tvm import relax\n"
            "from tvm.relax.frontend.onnx import from_onnx\n"
            f"vm = relax.VirtualMachine(tvm.compile(from_onnx(model), target={self.target!r}), tvm.cpu())\n"
            "print(vm['main']())  # the repro keeps every input as an initializer\n"
        )
