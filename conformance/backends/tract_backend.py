"""tract (Sonos, Rust; ``pip install tract``): its ONNX loader, ``into_model().into_runnable()`` and ``run``.

tract's Python API exchanges tensors of numpy's own types only (bool, integers, float16/32/64): a case whose
graph inputs or outputs are bfloat16, float8, 4-bit or 2-bit cannot be put to it through that API, so it is
not applicable (the adapter's limit, not tract's verdict). tract loads models from a file: the model is
written to a temporary file, unchanged.

Unsupported or rejected is read from tract's error chain (one ``TractError`` for every refusal): a few message
markers (:data:`MARKERS`), each tested on the installed release (tests/test_new_backends.py), mark
what tract says it does not implement; any other refusal is a rejection. The markers that matched nothing in a
run are reported at its end (:class:`conformance.backends.markers.MarkerWatch`), as stale expectation entries
are.

``RUST_BACKTRACE=0`` (and ``RUST_LIB_BACKTRACE=0``) is set in the worker before tract is imported: with a
backtrace asked for, every refusal costs about 0.25 s of symbol resolution.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import onnx

from . import kits
from .base import NotApplicable, Rejected, Unsupported
from .markers import Marker, MarkerSet, exotic_io

#: Fragments of tract's error chain that say it does not implement what the model needs. Each is tested on the
#: installed tract (tests/test_new_backends.py); a whole run reports those that matched no refusal.
MARKERS = MarkerSet("tract", (
    Marker("must be a const",
           "a scale or zero point fed at run time (tract folds them into its quantized types)", ("runtime",)),
    Marker("Unknown DatumType", "an element type tract has no datum type for (bfloat16, float8)"),
    Marker("unknown ONNX TensorProto.DataType",
           "an element type tract's ONNX protobuf does not know (float8e8m0, "
           "4-bit, 2-bit, float6)"),
    Marker("quantization is not supported", "blocked quantization"),
    Marker("unsupported per-axis output type", "per-axis quantization to a type other than int8 / uint8"),
    Marker("Unimplemented(", "an operator tract's ONNX loader has no translation for (com.amd.quark's)"),
    Marker("Unsupported type",
           "an element type one of tract's evaluation kernels does not take (at run time)"),
    Marker("datum_type == F32: Impossible to unify", "a scale of a type other than float32 (tract's ONNX "
           "QuantizeLinear / DequantizeLinear declare a float32 y_scale / x_scale)"),
))

def _message(e: BaseException) -> str:
    """tract's error chain in one line: 'context: cause: cause'."""
    parts = [ln.strip() for ln in str(e).splitlines() if ln.strip() and ln.strip() != "Caused by:"]
    parts = [p.split(": ", 1)[1] if p[:1].isdigit() and ": " in p[:4] else p for p in parts]
    return ": ".join(parts)[:500]


class TractBackend:
    name = "tract"

    def __init__(self) -> None:
        os.environ["RUST_BACKTRACE"] = "0"  # before tract's library is loaded: see the module docstring (the
        os.environ["RUST_LIB_BACKTRACE"] = "0"  # kit sets them too, for a repro script)
        # an optional dependency (the tract extra), imported when the backend is made
        from .kits import tract as kit

        self.kit = kit
        self._tract = kit.tract
        self.version = kit.tract.version()

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        exotic = exotic_io(model)
        if exotic:
            raise NotApplicable(f"tract's Python API has no {exotic} tensor type (tract.DatumType: bool, "
                                "integers, float16/32/64), so a graph input or output of that type cannot be "
                                "exchanged")
        try:
            program = self.kit.runnable(model)
        except self._tract.TractError as e:
            text = _message(e)
            why = MARKERS.reason(text)
            raise (Unsupported(why) if why else Rejected(text)) from None
        try:
            return self.kit.run(program, model, dict(feeds))
        except self._tract.TractError as e:
            text = _message(e)
            why = MARKERS.reason(text)
            if why:
                raise Unsupported(why) from None
            raise RuntimeError(f"tract failed at run time: {text}") from None

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return kits.script(self.kit, model_code, ["outputs = run(runnable(model), model, feeds)"],
                           output_names)
