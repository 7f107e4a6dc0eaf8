"""The names ``--backend`` takes, without importing any backend: the one list every ``--help`` and the
registry share (``tests/test_backends_more.py`` checks that the registry builds exactly these)."""

from __future__ import annotations

import sys

#: the built-in backends, in the order the help texts list them
BUILTIN_NAMES: tuple[str, ...] = ("ort", "onnx-reference", "openvino", "quark", "tvm", "iree", "tract",
                                  "tinygrad", "oracle")
#: one line each for the help texts: what the built-in runs and what it needs
HELP: dict[str, str] = {
    "ort": "ONNX Runtime, CPU",
    "onnx-reference": "onnx.reference.ReferenceEvaluator",
    "openvino": "OpenVINO's CPU plugin, extra openvino",
    "quark": "AMD Quark's com.amd.quark operators in ONNX Runtime, after qdq-conformance build-quark",
    "tvm": "Apache TVM, Relax on llvm, extra tvm",
    "iree": "IREE, llvm-cpu, extra iree",
    "tract": "Sonos tract, extra tract",
    "tinygrad": "tinygrad's ONNX frontend on its CPU device, extra tinygrad, needs clang",
    "oracle": "this project's reference kernel, a self-check (formerly 'reference')",
}
#: old names still taken, each with a deprecation line: old -> new
ALIASES: dict[str, str] = {"reference": "oracle"}
_warned: set[str] = set()


def canonical(spec: str) -> str:
    """The backend name ``spec`` stands for: an old name (:data:`ALIASES`) gives its new one, with one
    deprecation line on stderr (once a process); any other name is itself."""
    new = ALIASES.get(spec)
    if new is None:
        return spec
    if spec not in _warned:
        _warned.add(spec)
        print(f"qdq-conformance: the backend name {spec!r} is deprecated (it could be mistaken for "
              f"onnx.reference, which is 'onnx-reference'); use {new!r}", file=sys.stderr)
    return new


#: the forms of name that take an argument
PARAMETRIZED: tuple[str, ...] = ("onnx-backend:MODULE", "command:CMD", "python:MODULE:FACTORY", "mutant:ID")
#: where third-party packages register theirs
ENTRY_POINT_GROUP = "onnx_qdq_conformance.backends"


def help_text() -> str:
    """Every built-in name and form, as the help texts of run, fuzz and compliance say them."""
    return ("; ".join([f"{n} ({HELP[n]})" if n in HELP else n for n in BUILTIN_NAMES] + list(PARAMETRIZED))
            + f"; or a name registered under the entry-point group {ENTRY_POINT_GROUP} (docs/backends.md)")
