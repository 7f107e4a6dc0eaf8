"""Each built-in backend's run path as a module of its own, a *kit*: the backend runs every case through it,
and a case's repro script holds it verbatim and calls it the same way with the same settings, so that the
script runs the case exactly as the run did (the same model bytes, graph inputs fed as graph inputs, the same
session or compile options). A kit imports nothing of this package, only numpy, onnx, ml_dtypes and its
runtime (tests/test_repro.py checks both: a kit's imports, and that a script's outputs are the
backend's, bit for bit)."""

from __future__ import annotations

import inspect
from functools import cache
from types import ModuleType


@cache
def source(kit: ModuleType) -> str:
    """The kit's text, as a repro script holds it."""
    return inspect.getsource(kit).rstrip() + "\n"


def call(function: str, *args: str, **keywords: object) -> str:
    """``function(arg, ..., key=repr(value), ...)``: a kit's call as a repro script writes it."""
    return f"{function}({', '.join([*args, *(f'{k}={v!r}' for k, v in keywords.items())])})"


def script(kit: ModuleType, model_code: str, steps: list[str], output_names: list[str]) -> str:
    """A repro script: the kit, the case (``model_code`` defines ``model`` and ``feeds``), ``steps`` (lines
    of Python ending in ``outputs = ...``, the kit's calls as the backend makes them), and a line that prints
    each output."""
    name = kit.__name__.rpartition(".")[2]
    return (f"# ---- how qdq-conformance's backend runs a model (qdq_conformance/backends/kits/{name}.py, "
            "verbatim) ----\n" + source(kit)
            + "\n\n# ---- the case: the model as the run gave it to the backend, and its inputs ----\n"
            + model_code.rstrip() + "\n\n# ---- run it as the run did ----\n" + "\n".join(steps) + "\n"
            + f"for name, value in zip({output_names!r}, outputs):\n    print(name, value.dtype, value)\n")
