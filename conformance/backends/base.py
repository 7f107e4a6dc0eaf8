"""What a backend is: a name, a version, and a way to run a model or decline it.

A backend may raise :class:`Unsupported` (it does not implement this model: the case is skipped with the
reason), :class:`NotApplicable` (the adapter cannot even hand the case over) or :class:`Rejected` (it refuses the model as invalid: right for an invalid case, an error for a valid
one). Any other exception while running is an error of the backend.

Optional: ``prepare(items, budget)`` with ``batch`` (a backend that compiles in batches, IREE's: its worker hands it
the (model, feeds) of each ``batch`` cases before running them one by one, ``budget`` the seconds it may take:
``runner.execute.prepare_cases``).
"""

from __future__ import annotations

from collections.abc import Mapping
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


class MissingBackend:
    """Stands in for a backend whose package is not installed: every case is unsupported, with the reason."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.version = "not installed"
        self.reason = reason

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        raise NotApplicable(self.reason)

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return f"{model_code}\n# {self.reason}\n"
