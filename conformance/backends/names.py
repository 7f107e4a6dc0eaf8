"""The names ``--backend`` takes, without importing any backend: the one list every ``--help`` and the registry
share (``tests/test_backends_more.py`` checks that the registry builds exactly these)."""

from __future__ import annotations

#: the built-in backends, in the order the help texts list them
BUILTIN_NAMES: tuple[str, ...] = ("ort", "onnx-reference", "openvino", "quark", "tvm", "iree", "reference")
#: the forms of name that take an argument
PARAMETRIZED: tuple[str, ...] = ("onnx-backend:MODULE", "command:CMD", "python:MODULE:FACTORY", "mutant:ID")
#: where third-party packages register theirs
ENTRY_POINT_GROUP = "onnx_qdq_conformance.backends"


def help_text() -> str:
    """Every built-in name and form, as the help texts of run, fuzz and compliance say them."""
    return (", ".join(BUILTIN_NAMES + PARAMETRIZED)
            + f", or a name registered under the entry-point group {ENTRY_POINT_GROUP} (docs/backends.md)")
