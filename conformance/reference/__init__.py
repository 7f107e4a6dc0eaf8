"""The bundled reference kernel: the oracle every backend is compared with.

Public API::

    conformance.reference.run(model, feeds) -> list[np.ndarray]
    conformance.reference.evaluate(domain, op, version, inputs, attrs) -> list[np.ndarray]
    conformance.reference.run_any(model, feeds) -> list[np.ndarray]  (graphs too: graph_oracle.py)

Both raise :class:`conformance.errors.SpecViolation` (and nothing else for a model they cannot or must not
compute): an operator or version the kernel does not know, a type not allowed at that version, a shape or an
attribute the spec forbids. The message names op, version, input and the violated rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx

from .. import opspecs
from ..errors import SpecViolation
from .graph_oracle import is_graph, run_graph
from .model import bind
from .ops import ENTRIES

__all__ = ["SpecViolation", "evaluate", "run", "run_any"]


def evaluate(domain: str, op: str, version: int, inputs: Sequence[np.ndarray | None],
             attrs: Mapping[str, int] | None = None) -> list[np.ndarray]:
    """Outputs of operator ``domain::op`` at exactly since_version ``version`` on ``inputs``.

    ``inputs`` follow the operator's input order; an omitted optional input is None (trailing ones may be left
    out). Arrays use ml_dtypes dtypes for exotic element types, one element per item.
    """
    spec = opspecs.get(domain, op, version)
    entry = ENTRIES[(spec.domain, spec.name)]
    return entry(spec, list(inputs), dict(attrs or {}))


def run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Outputs, in the node's output order, of a single-node quantization model.

    The operator version is the model's opset import for the node's domain (highest since_version <= it).
    Inputs come from ``feeds`` or from initializers / Constant nodes.
    """
    bound = bind(model, feeds)
    entry = ENTRIES[(bound.spec.domain, bound.spec.name)]
    outputs = entry(bound.spec, bound.inputs, bound.attrs)
    return outputs[: len(bound.node.output)]


def run_any(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """:func:`run` for a single-node model, :func:`graph.run_graph` for a graph of quantization nodes and
    exact ops (a graph case's model): the oracle as a backend sees it."""
    return run_graph(model, feeds) if is_graph(model) else run(model, feeds)
