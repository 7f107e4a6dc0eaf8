"""Finding a backend by name: the built-ins, ``onnx-backend:MODULE``, ``command:CMD``, and third-party
backends registered under the entry-point group ``onnx_qdq_conformance.backends``.

A factory that cannot make its backend here (a package not installed, a library not built, a device absent)
raises :class:`~conformance.backends.base.BackendUnavailable` with the reason and the fix in one line
(:func:`~conformance.backends.base.require` imports an optional package that way): the run ends before its
first case with that line and exit status 4, within ``--backend-timeout`` however long the factory takes.

A third-party package declares, in its pyproject.toml::

    [project.entry-points."onnx_qdq_conformance.backends"]
    mybackend = "my_package.qdq:make_backend"

where ``make_backend(**options)`` returns an object with ``name``, ``version``, ``run(model, feeds)`` and
``repro(model_code, output_names)`` (see :class:`conformance.backends.base.Backend`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import TypedDict

from ..install import install_hint
from . import backend_options as backend_options
from .base import Backend, require
from .builtin import OnnxBackendModule, OnnxReferenceBackend, OracleBackend, OrtBackend
from .command import CommandBackend
from .iree_backend import MARKERS as IREE_MARKERS
from .iree_backend import IreeBackend
from .markers import MarkerSet
from .names import BUILTIN_NAMES, ENTRY_POINT_GROUP, PARAMETRIZED, canonical
from .openvino_backend import OpenVinoBackend
from .quark import QuarkBackend
from .tinygrad_backend import MARKERS as TINYGRAD_MARKERS
from .tinygrad_backend import TinygradBackend
from .tinygrad_backend import set_environment as set_tinygrad_environment
from .tract_backend import MARKERS as TRACT_MARKERS
from .tract_backend import TractBackend
from .tvm_backend import TvmBackend

#: A backend's options by name (``ort_provider``, ``ort_optimization``, ...: command-line values, text or
#: unset; ``backend_option``: --backend-option's KEY=VALUE pairs, a dict).
BackendOptions = Mapping[str, "str | dict[str, str] | None"]


def _text(options: BackendOptions, key: str) -> str | None:
    value = options.get(key)
    return value if isinstance(value, str) else None


def _ort(options: BackendOptions) -> Backend:
    return OrtBackend(provider=_text(options, "ort_provider") or "CPUExecutionProvider",
                      optimization=_text(options, "ort_optimization") or "all",
                      threads=int(_text(options, "ort_threads") or 1),
                      options=backend_options.check_ort(backend_options.of(options)))


def _plain(make: Callable[[], Backend], name: str) -> Callable[[BackendOptions], Backend]:
    """The factory of a backend that takes no option."""
    def factory(options: BackendOptions) -> Backend:
        backend_options.refuse_any(name, backend_options.of(options))
        return make()

    return factory


def _openvino(options: BackendOptions) -> Backend:
    require("openvino", install_hint("openvino"))  # (an optional dependency)
    return OpenVinoBackend(device=_text(options, "openvino_device") or "CPU",
                           properties=backend_options.of(options))


def _quark(options: BackendOptions) -> Backend:
    return QuarkBackend(options=backend_options.of(options))


def _iree() -> Backend:
    for half in ("iree.compiler", "iree.runtime"):  # (an optional dependency: both halves must be installed)
        require(half, install_hint("iree"))
    return IreeBackend()


def _tvm() -> Backend:
    require("tvm", "Apache TVM: " + install_hint("tvm"))  # (an optional dependency)
    return TvmBackend()


def _tract() -> Backend:
    require("tract", install_hint("tract"))  # (an optional dependency)
    return TractBackend()


def _tinygrad() -> Backend:
    set_tinygrad_environment()  # (tinygrad reads DEV and CACHEDB when it is imported, by require() here)
    require("tinygrad", install_hint("tinygrad"))  # (an optional dependency; and clang)
    return TinygradBackend()


BUILTIN: dict[str, Callable[[BackendOptions], Backend]] = {
    "ort": _ort,
    "onnx-reference": _plain(OnnxReferenceBackend, "onnx-reference"),
    "oracle": _plain(OracleBackend, "oracle"),
    "openvino": _openvino,
    "quark": _quark,
    "tvm": _plain(_tvm, "tvm"),
    "iree": _plain(_iree, "iree"),
    "tract": _plain(_tract, "tract"),
    "tinygrad": _plain(_tinygrad, "tinygrad"),
}

#: Backends whose unsupported-vs-rejected verdict rests on message markers: a whole run reports the markers
#: that matched none of its refusals (markers.MarkerWatch).
MARKERS: dict[str, MarkerSet] = {
    "iree": IREE_MARKERS,
    "tract": TRACT_MARKERS,
    "tinygrad": TINYGRAD_MARKERS,
}


class RunSettings(TypedDict, total=False):
    """How a backend runs a model, as a results header records it."""

    optimization: str
    backend_options: dict[str, str]  # --backend-option's KEY=VALUE pairs (absent: none given)


def settings(spec: str, options: BackendOptions | None = None) -> RunSettings:
    """How backend ``spec`` runs a model, for a results header and the report: the graph optimization it
    applies (graph cases are judged as deployed: ONNX Runtime at its default level unless --ort-optimization
    says otherwise, OpenVINO as ``compile_model`` compiles) and the --backend-option settings."""
    options = options or {}
    out: RunSettings = {}
    if spec == "ort":
        level = _text(options, "ort_optimization") or "all"
        out["optimization"] = (f"onnxruntime graph optimization level {level}"
                               + (" (ORT_ENABLE_ALL, its default)" if level == "all" else ""))
    elif spec == "openvino":
        out["optimization"] = "openvino compile_model with its default configuration"
    given = backend_options.of(options)
    if given:
        out["backend_options"] = given
    return out


def known_names() -> list[str]:
    names = list(BUILTIN_NAMES) + list(PARAMETRIZED)
    names += sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return names


def create(spec: str, options: BackendOptions | None = None) -> Backend:
    """The backend named ``spec``: ValueError naming the known backends when there is none of that name,
    :class:`BackendUnavailable` (or whatever its factory raises) when it cannot be created here. The runner
    creates it in a worker process (``runner.isolation``): either ends the run before its first case as a
    usage error."""
    options = dict(options or {})
    spec = canonical(spec)
    if spec in BUILTIN:
        return BUILTIN[spec](options)
    if spec.startswith(("onnx-backend:", "mutant:", "command:")):
        backend_options.refuse_any(spec, backend_options.of(options))
    if spec.startswith("onnx-backend:"):
        return OnnxBackendModule(spec.split(":", 1)[1])
    if spec.startswith("mutant:"):  # the reference kernel with one shortcut (qdq-conformance mutants --list)
        # imported for mutant: only: the zoo and the kernel it patches cost every other backend's worker
        # 0.1 s at start (measured)
        from ..mutants import backend

        return backend(spec.split(":", 1)[1])
    if spec.startswith("command:"):
        return CommandBackend(spec.split(":", 1)[1], version=_text(options, "command_version") or "unknown")
    if spec.startswith("python:"):
        try:
            module, factory = spec.split(":", 2)[1:]
            return getattr(importlib.import_module(module), factory)(**options)
        except (ValueError, ImportError, AttributeError) as e:
            raise ValueError(f"backend {spec!r}: expected python:MODULE:FACTORY naming an importable factory "
                             f"({e})") from None
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec:
            return ep.load()(**options)
    raise ValueError(f"unknown backend {spec!r}; known: {', '.join(known_names())}")


def unavailable(spec: str) -> str | None:
    """Why backend ``spec`` cannot run cases on this machine (not installed, not built, unknown here), in one
    line; None when it can."""
    try:
        backend = create(spec)
    except Exception as e:  # noqa: BLE001 - whatever stops it being made is the answer
        return (str(e).strip().splitlines() or [type(e).__name__])[0]
    return getattr(backend, "reason", None)  # (quark's library not built)
