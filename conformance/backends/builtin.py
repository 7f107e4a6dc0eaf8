"""The built-in backends: ONNX Runtime, onnx.reference, this project's oracle, any onnx.backend module."""

from __future__ import annotations

import importlib
import unittest
import warnings
from collections.abc import Mapping

import numpy as np
import onnx

from .. import __version__
from ..errors import SpecViolation
from ..types import by_dtype
from .base import NotApplicable, Rejected, Unsupported


class OrtBackend:
    """ONNX Runtime (CPU by default). Every exotic element type goes through OrtValue, never by editing the
    model."""

    name = "ort"

    def __init__(self, provider: str = "CPUExecutionProvider", optimization: str = "all", threads: int = 1,
                 custom_ops_libraries: tuple[str, ...] | list[str] = ()) -> None:
        import onnxruntime as ort  # here, not at the top: only this backend's worker pays its import

        ort.set_default_logger_severity(4)  # errors come back as exceptions; keep the C++ log quiet
        self.version = ort.__version__
        self.provider = provider
        self.optimization = optimization
        self.threads = threads
        self.custom_ops_libraries = list(custom_ops_libraries)

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from .ort_io import run_session, session  # (both import onnxruntime: see __init__)
        from .ort_probe import decide, feed_refusal

        try:
            sess = session(model, threads=self.threads, optimization=self.optimization,
                           providers=[self.provider], custom_ops_libraries=self.custom_ops_libraries)
        except Exception as e:  # onnxruntime raises its own exception types, each a subclass of Exception
            # Unsupported or Rejected, decided by asking ONNX Runtime (cached probes), not by its wording.
            raise decide(model, e, custom_ops=bool(self.custom_ops_libraries)) from None
        try:
            return run_session(sess, feeds)
        except (KeyError, TypeError, RuntimeError):
            why = feed_refusal(by_dtype(np.asarray(v).dtype).proto for v in feeds.values())
            # ORT cannot make an OrtValue of a feed's type (asked, not read from the message)
            if why is not None:
                raise Unsupported(why) from None
            raise

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (
            f"{model_code}\n"
            "import onnxruntime as ort\n"
            f"sess = ort.InferenceSession(model.SerializeToString(), providers=[{self.provider!r}])\n"
            f"for name, value in zip({output_names!r}, sess.run_with_ort_values({output_names!r}, {{}})):\n"
            "    print(name, value.data_type(), value.numpy())  # float8 / 4-bit types come back as raw "
            "codes\n"
        )


class OnnxReferenceBackend:
    """onnx.reference.ReferenceEvaluator (a backend under test like any other)."""

    name = "onnx-reference"

    def __init__(self) -> None:
        self.version = onnx.__version__

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator  # onnx.reference's import, for this backend only

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                evaluator = ReferenceEvaluator(model)
            except NotImplementedError as e:  # its own "no implementation" class (an unknown domain, say)
                raise Unsupported(_first_line(str(e))) from None
            except RuntimeError as e:  # unsupported only if its operator registry says so (asked, not read)
                why = _reference_refusal(model)
                raise (Unsupported(why) if why else Rejected(_first_line(str(e)))) from None
            except (ValueError, TypeError, KeyError) as e:
                raise Rejected(_first_line(str(e))) from None
            return [np.asarray(o) for o in evaluator.run(None, dict(feeds))]

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nfrom onnx.reference import ReferenceEvaluator\n"
                f"for name, value in zip({output_names!r}, ReferenceEvaluator(model).run(None, {{}})):\n"
                "    print(name, value.dtype, value)\n")


def _reference_refusal(model: onnx.ModelProto) -> str | None:
    """Why onnx.reference has no implementation of one of the model's ai.onnx nodes at the model's opset,
    asked of its operator registry (``onnx.reference.ops.load_op``); None if it has one for every node."""
    from onnx.reference.ops import load_op  # (see OnnxReferenceBackend.run)

    opset = {"" if o.domain == "ai.onnx" else o.domain: o.version for o in model.opset_import}.get("")
    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and opset is not None:
            try:
                load_op("", node.op_type, opset)
            except Exception as e:  # noqa: BLE001 - load_op raises RuntimeError (no such version) or others
                return (f"onnx.reference {onnx.__version__} has no implementation of {node.op_type} for "
                        f"opset {opset} (probe: onnx.reference.ops.load_op refused: {_first_line(str(e))})")
    return None


class OracleBackend:
    """This project's reference kernel (a self-check: it must pass everything)."""

    name = "reference"
    version = __version__

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from ..reference import run_any  # the kernel's import (0.1 s), for this backend's worker only
        from ..reference.graph import GraphError

        try:
            return run_any(model, feeds)
        except (SpecViolation, GraphError) as e:
            raise Rejected(str(e)) from None

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nfrom qdq_conformance.reference import run_any\n"
                f"for name, value in zip({output_names!r}, run_any(model, {{}})):\n    print(name, "
                "value.dtype, value)\n")


class OnnxBackendModule:
    """Any module implementing ``onnx.backend.base.Backend`` (``onnx-backend:onnxruntime.backend``)."""

    def __init__(self, module: str, device: str = "CPU") -> None:
        try:
            self.module = importlib.import_module(module)
        except ImportError as e:
            raise ValueError(f"cannot import backend module {module!r}: {e}") from None
        if not hasattr(self.module, "prepare"):
            raise ValueError(f"module {module!r} has no prepare(): not an onnx.backend.base.Backend")
        self.name = f"onnx-backend:{module}"
        top = importlib.import_module(module.split(".")[0])
        self.version = str(getattr(top, "__version__", "unknown"))
        self.device = device

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        for value in feeds.values():
            if value.dtype.kind not in "biuf" or by_dtype(value.dtype).name == "bfloat16":
                raise NotApplicable(f"onnx.backend API: numpy inputs only; {by_dtype(value.dtype).name} "
                                    "cannot be fed")
        try:
            rep = self.module.prepare(model, self.device)
        except (NotImplementedError, unittest.SkipTest) as e:  # onnx.backend's own ways of saying "not here"
            raise Unsupported(_first_line(str(e))) from None
        except Exception as e:
            # ask ONNX Runtime, as the ort backend does
            if self.module.__name__.split(".")[0] == "onnxruntime":
                from .ort_probe import decide  # (imports onnxruntime: see OrtBackend.__init__)

                raise decide(model, e) from None
            text = str(e)
            # fallback: message text
            if "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text:
                raise Unsupported(_first_line(text)) from None
            raise Rejected(_first_line(text)) from None
        names = [i.name for i in model.graph.input]
        return [np.asarray(o) for o in rep.run([feeds[n] for n in names])]

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nimport {self.module.__name__} as backend\n"
                f"rep = backend.prepare(model, {self.device!r})\nprint(rep.run([]))\n")


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return (lines[0] if lines else text)[:500]
