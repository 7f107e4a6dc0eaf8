"""The built-in backends: ONNX Runtime, onnx.reference, this project's oracle, any onnx.backend module."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping

import numpy as np
import onnx

from .. import __version__
from ..errors import SpecViolation
from ..types import by_dtype
from .base import NotApplicable, Rejected, Unsupported

#: ONNX Runtime messages that mean "not implemented here" rather than "this model is invalid".
_ORT_UNSUPPORTED = ("NOT_IMPLEMENTED", "Could not find an implementation", "Unsupported model IR version",
                    "is not a registered function/op", "is not supported")


def _ort_reason(text: str) -> str:
    """The useful part of an ONNX Runtime message (after the C++ location, when there is one)."""
    line = _first_line(text)
    for marker in ("Unsupported model IR version", "Could not find an implementation", "is not a registered"):
        if marker in line:
            return line[max(0, line.find(marker) - 60):]
    return line


class OrtBackend:
    """ONNX Runtime (CPU by default). Every exotic element type goes through OrtValue, never by editing the
    model."""

    name = "ort"

    def __init__(self, provider: str = "CPUExecutionProvider", optimization: str = "all", threads: int = 1,
                 custom_ops_libraries: tuple[str, ...] | list[str] = ()) -> None:
        import onnxruntime as ort

        ort.set_default_logger_severity(4)  # errors come back as exceptions; keep the C++ log quiet
        self.version = ort.__version__
        self.provider = provider
        self.optimization = optimization
        self.threads = threads
        self.custom_ops_libraries = list(custom_ops_libraries)

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from .ort_io import run_session, session

        try:
            sess = session(model, threads=self.threads, optimization=self.optimization, providers=[self.provider],
                           custom_ops_libraries=self.custom_ops_libraries)
        except Exception as e:  # onnxruntime raises its own exception types, each a subclass of Exception
            text = str(e)
            if any(m in text for m in _ORT_UNSUPPORTED):
                raise Unsupported(_ort_reason(text)) from None
            raise Rejected(_ort_reason(text)) from None
        try:
            return run_session(sess, feeds)
        except (KeyError, TypeError, RuntimeError) as e:
            if "is not supported" in str(e) and "tensor type" in str(e):
                raise Unsupported(_first_line(str(e))) from None
            raise

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (
            f"{model_code}\n"
            "import onnxruntime as ort\n"
            f"sess = ort.InferenceSession(model.SerializeToString(), providers=[{self.provider!r}])\n"
            f"for name, value in zip({output_names!r}, sess.run_with_ort_values({output_names!r}, {{}})):\n"
            "    print(name, value.data_type(), value.numpy())  # float8 / 4-bit types come back as raw codes\n"
        )


class OnnxReferenceBackend:
    """onnx.reference.ReferenceEvaluator (a backend under test like any other)."""

    name = "onnx-reference"

    def __init__(self) -> None:
        self.version = onnx.__version__

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                evaluator = ReferenceEvaluator(model)
            except (RuntimeError, NotImplementedError) as e:
                if "No implementation" in str(e) or isinstance(e, NotImplementedError):
                    raise Unsupported(_first_line(str(e))) from None
                raise Rejected(_first_line(str(e))) from None
            except (ValueError, TypeError, KeyError) as e:
                raise Rejected(_first_line(str(e))) from None
            return [np.asarray(o) for o in evaluator.run(None, dict(feeds))]

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nfrom onnx.reference import ReferenceEvaluator\n"
                f"for name, value in zip({output_names!r}, ReferenceEvaluator(model).run(None, {{}})):\n"
                "    print(name, value.dtype, value)\n")


class OracleBackend:
    """This project's reference kernel (a self-check: it must pass everything)."""

    name = "reference"
    version = __version__

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from ..reference import run

        try:
            return run(model, feeds)
        except SpecViolation as e:
            raise Rejected(str(e)) from None

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nfrom conformance.reference import run\n"
                f"for name, value in zip({output_names!r}, run(model, {{}})):\n    print(name, value.dtype, value)\n")


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
                raise NotApplicable(f"onnx.backend API: numpy inputs only; {by_dtype(value.dtype).name} cannot be fed")
        try:
            rep = self.module.prepare(model, self.device)
        except NotImplementedError as e:
            raise Unsupported(_first_line(str(e))) from None
        except Exception as e:
            text = str(e)
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
