"""The built-in backends: ONNX Runtime, onnx.reference, this project's oracle, any onnx.backend module."""

from __future__ import annotations

import importlib
import itertools
import unittest
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx

from .. import __version__
from ..blame import harness_fault
from ..errors import SpecViolation
from ..types import by_dtype
from . import kits
from .base import BackendUnavailable, NotApplicable, Rejected, Unsupported, require

#: The oldest ONNX Runtime release this tool runs on (pyproject.toml's ``onnxruntime>=`` says the same, and
#: tests/test_ort_floor.py holds them together): the lowest on which the whole corpus, both graph forms, runs
#: without one harness error (docs/backends.md, "ONNX Runtime releases"; 1.15.1 has none of
#: ``get_all_operator_schema``, which the operator probe asks). Releases before 1.19 are built against numpy
#: 1.x and need ``numpy<2`` beside them.
ORT_FLOOR = (1, 16)


def version_tuple(version: str) -> tuple[int, ...]:
    """``(1, 16, 3)`` for ``"1.16.3"`` (a dev or local suffix left out)."""
    out = []
    for part in version.split("+")[0].split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def below_floor(version: str) -> str | None:
    """Why ONNX Runtime ``version`` cannot be run (older than :data:`ORT_FLOOR`), in one line; None if it
    can."""
    floor = ".".join(map(str, ORT_FLOOR))
    if version_tuple(version)[:2] >= ORT_FLOOR:
        return None
    return (f"onnxruntime {version} is older than {floor}, the oldest release qdq-conformance runs on (the "
            f"lowest it runs without a harness error); pip install 'onnxruntime>={floor}'")


class OrtBackend:
    """ONNX Runtime (CPU by default), run through its kit (``kits/ort.py``: the session, and every exotic
    element type through an OrtValue, never by editing the model); ``options``: --backend-option's session
    options and config entries (``options.ort_options`` checks them)."""

    name = "ort"

    def __init__(self, provider: str = "CPUExecutionProvider", optimization: str = "all", threads: int = 1,
                 custom_ops_libraries: tuple[str, ...] | list[str] = (),
                 options: dict[str, str] | None = None) -> None:
        # here, not at the top: only this backend's worker pays its import
        ort = require("onnxruntime", "pip install onnxruntime (one before 1.19 needs numpy<2 beside it)")
        if (why := below_floor(ort.__version__)) is not None:
            raise BackendUnavailable(why)
        from .kits import ort as kit  # (imports onnxruntime: this backend's worker only, see above)

        ort.set_default_logger_severity(4)  # errors come back as exceptions; keep the C++ log quiet
        self.kit = kit
        self.version = ort.__version__
        self.settings: dict[str, Any] = {
            "provider": provider, "optimization": optimization, "threads": threads,
            "custom_ops_libraries": list(custom_ops_libraries), "options": dict(options or {})}

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from .ort_probe import decide, decide_run, feed_refusal  # (imports onnxruntime: see __init__)

        try:
            sess = self.kit.session(model, **self.settings)
        except Exception as e:  # onnxruntime raises its own exception types, each a subclass of Exception
            if harness_fault(e):  # (this adapter's own mistake: the tool's fault, never ORT's refusal)
                raise
            # Unsupported or Rejected, decided by asking ONNX Runtime (cached probes), not by its wording.
            raise decide(model, e, custom_ops=bool(self.settings["custom_ops_libraries"])) from None
        try:
            return self.kit.run(sess, dict(feeds))
        except Exception as e:
            if harness_fault(e):
                raise
            why = feed_refusal(by_dtype(np.asarray(v).dtype).proto for v in feeds.values())
            # ORT cannot make an OrtValue of a feed's type (asked, not read from the message)
            if why is not None:
                raise Unsupported(why) from None
            # ... or it implements less than it lists (a granularity of an operator version, say): asked too
            unsupported = decide_run(model, custom_ops=bool(self.settings["custom_ops_libraries"]))
            if unsupported is not None:
                raise unsupported from None
            raise

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return kits.script(self.kit, model_code, [
            "ort.set_default_logger_severity(4)",
            f"outputs = run({kits.call('session', 'model', **self.settings)}, feeds)"], output_names)


class OnnxReferenceBackend:
    """onnx.reference.ReferenceEvaluator (a backend under test like any other), run through its kit
    (``kits/onnx_reference.py``)."""

    name = "onnx-reference"

    def __init__(self) -> None:
        from .kits import onnx_reference as kit  # (onnx.reference's import, for this backend only)

        self.kit = kit
        self.version = onnx.__version__

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        try:
            evaluator = self.kit.evaluator(model)
        except NotImplementedError as e:  # its own "no implementation" class (an unknown domain, say)
            raise Unsupported(_first_line(str(e))) from None
        except RuntimeError as e:  # unsupported only if its operator registry says so (asked, not read)
            why = _reference_refusal(model)
            raise (Unsupported(why) if why else Rejected(_first_line(str(e)))) from None
        except (ValueError, TypeError, KeyError) as e:
            raise Rejected(_first_line(str(e))) from None
        return self.kit.run(evaluator, dict(feeds))

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return kits.script(self.kit, model_code, ["outputs = run(evaluator(model), feeds)"], output_names)


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

    name = "oracle"
    version = __version__

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        from ..reference import run_any  # the kernel's import (0.1 s), for this backend's worker only
        from ..reference.graph_oracle import GraphError

        try:
            return run_any(model, feeds)
        except (SpecViolation, GraphError) as e:
            raise Rejected(str(e)) from None

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nfrom qdq_conformance.reference import run_any\n"
                f"for name, value in zip({output_names!r}, run_any(model, feeds)):\n    print(name, "
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
                f"rep = backend.prepare(model, {self.device!r})\n"
                f"outputs = rep.run([feeds[i.name] for i in model.graph.input])\n"
                f"for name, value in zip({output_names!r}, outputs):\n    print(name, value.dtype, value)\n")


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return (lines[0] if lines else text)[:500]
