"""What a backend is: a name, a version, and a way to run a model or decline it.

A backend may raise :class:`Unsupported` (it does not implement this model: the case is skipped with the
reason), :class:`NotApplicable` (the adapter cannot even hand the case over) or :class:`Rejected` (it refuses
the model as invalid: right for an invalid case, an error for a valid one). Any other exception while running
is an error of the backend.

Optional: ``prepare(items, budget)`` with ``batch`` (a backend that compiles in batches, IREE's: its worker
hands it the (model, feeds) of each ``batch`` cases before running them one by one, ``budget`` the seconds it
may take: ``runner.execute.prepare_cases``).

A backend that cannot be created at all raises :class:`BackendUnavailable` from its factory (:func:`require`
for an optional package): a usage error of the run, not a run of unsupported cases.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Protocol, runtime_checkable

import numpy as np
import onnx


class Unsupported(Exception):
    """The backend does not implement what the model needs (operator version, type, attribute ...)."""


class NotApplicable(Unsupported):
    """The adapter cannot put this case to the backend at all (its package is missing, the case's domain or an
    element type is outside what the adapter can express). Unlike a backend's own "not implemented", this says
    nothing about the backend, so even an invalid case counts as unsupported, not as rejected."""


class Rejected(Exception):
    """The backend refuses the model as invalid (at load or validation time)."""


@runtime_checkable
class Backend(Protocol):
    """A runtime under test."""

    name: str
    version: str

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Outputs in the graph's output order; arrays in the registry's dtypes (ml_dtypes for exotic types).

        Raise Unsupported(reason) to decline, Rejected(reason) to refuse an invalid model.
        """
        ...

    def repro(self, model_code: str, output_names: list[str]) -> str:
        """Python lines that run the model built by ``model_code`` (which defines ``model``) with this
        backend's own API and print every output."""
        ...


class BackendUnavailable(Exception):
    """The backend cannot be created here: its package is not installed, its native library cannot be loaded
    or has not been built, its device is absent. A factory raises it (with the reason and the command that
    fixes it, in one line); the run then ends before its first case as a usage error (exit status 4) naming
    the backend, never as a run of "unsupported" cases that tested nothing. Any other exception a factory
    raises ends the run the same way, with its type in the message."""


def require(module: str, fix: str = "") -> ModuleType:
    """``import module`` for a backend's factory, or :class:`BackendUnavailable` saying it cannot be imported
    and ``fix`` (``install.install_hint('openvino')``'s line, say). An installed module whose import
    fails (a native library that does not load: OSError) is unavailable too."""
    try:
        return importlib.import_module(module)
    except (ImportError, OSError) as e:
        said = " ".join(str(e).split())[:300]
        raise BackendUnavailable(f"{module} cannot be imported ({said})" + (f"; {fix}" if fix else "")) \
            from None
