"""What the checker knows about each tensor name, and the walk over every node of a model.

Facts come, in order of preference, from initializers and Constant nodes (type, shape and, on request, value),
then from declared and inferred value infos (graph inputs, outputs, ``value_info`` after onnx shape
inference). Subgraphs see their enclosing graphs' names; a local function sees only its own body.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto

from ..opspecs import AI_ONNX, import_table, normalize_domain
from .model_errors import Unreadable
from .tensors import decode, decode_chunks, element_count, read_external, storage_bytes


@dataclass
class Facts:
    """What is known about one tensor: element type (TensorProto enum), shape (None: unknown rank; a dim of
    None: unknown), and the TensorProto holding its value when it is a constant."""

    elem: int | None
    shape: tuple[int | None, ...] | None
    tensor: TensorProto | None = None
    source: str = ""

    def values(self, base_dir: Path) -> Iterator[np.ndarray] | None:
        """The constant's values, flat, in chunks (external data is read for this tensor only, in bounded
        reads); None if not a constant. Data that does not fit the tensor's dims raises Unreadable."""
        if self.tensor is None:
            return None
        t = self.tensor
        if t.data_location == TensorProto.EXTERNAL:
            return decode_chunks(t, read_external(t, base_dir))
        return _slices(decode(t))

    def nbytes(self) -> int:
        """The bytes the constant's data takes (0 when unknown)."""
        if self.tensor is None:
            return 0
        try:
            span = storage_bytes(self.tensor.data_type, element_count(tuple(self.tensor.dims), ""))
        except Unreadable:
            return 0
        return span[0] if span else 0


def _slices(a: np.ndarray, size: int = 2**20) -> Iterator[np.ndarray]:
    for start in range(0, a.size, size):
        yield a[start:start + size]


def _from_value_info(vi: onnx.ValueInfoProto, source: str) -> Facts | None:
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    elem = tt.elem_type or None
    shape: tuple[int | None, ...] | None = None
    if tt.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
                      for d in tt.shape.dim)
    return Facts(elem, shape, None, source)


def _from_tensor(t: TensorProto, source: str) -> Facts:
    return Facts(t.data_type or None, tuple(int(d) for d in t.dims), t, source)


def _constant_facts(node: onnx.NodeProto) -> Facts | None:
    for a in node.attribute:
        if a.name == "value" and a.type == AttributeProto.TENSOR:
            return _from_tensor(a.t, "Constant node")
        if a.name == "value_float":
            return Facts(TensorProto.FLOAT, (), onnx.helper.make_tensor("", TensorProto.FLOAT, [], [a.f]),
                         "Constant node")
        if a.name == "value_floats":
            return Facts(TensorProto.FLOAT, (len(a.floats),),
                         onnx.helper.make_tensor("", TensorProto.FLOAT, [len(a.floats)], list(a.floats)),
                         "Constant node")
    return None


class Scope:
    """Name -> Facts for one graph, falling back to the enclosing graph's scope; and the names the graph
    defines (inputs, initializers, node outputs), whether or not anything is known about them."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.facts: dict[str, Facts] = {}
        self.defined: set[str] = set()

    def define(self, names: Iterable[str]) -> None:
        self.defined.update(n for n in names if n)

    def is_defined(self, name: str) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.defined or name in scope.facts:
                return True
            scope = scope.parent
        return False

    def add(self, name: str, facts: Facts | None, override: bool = False) -> None:
        if name and facts is not None and (override or name not in self.facts):
            self.facts[name] = facts

    def get(self, name: str) -> Facts | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.facts:
                return scope.facts[name]
            scope = scope.parent
        return None


def _add_constants(scope: Scope, nodes) -> None:  # noqa: ANN001 - repeated NodeProto
    for n in nodes:
        scope.define(n.output)
        if n.op_type == "Constant" and normalize_domain(n.domain) == AI_ONNX and n.output:
            scope.add(n.output[0], _constant_facts(n), override=True)


def graph_scope(graph: onnx.GraphProto, parent: Scope | None) -> Scope:
    scope = Scope(parent)
    for t in graph.initializer:
        scope.add(t.name, _from_tensor(t, "initializer"), override=True)
    scope.define([vi.name for vi in graph.input] + [t.values.name for t in graph.sparse_initializer])
    _add_constants(scope, graph.node)
    for vi in graph.input:
        scope.add(vi.name, _from_value_info(vi, "graph input"))
    for vi in graph.output:
        scope.add(vi.name, _from_value_info(vi, "graph output"))
    for vi in graph.value_info:
        scope.add(vi.name, _from_value_info(vi, "value_info"))
    return scope


@dataclass(frozen=True)
class Site:
    """One node and where it is: ``graph`` names the graph path (``main``, ``main/node 3 'If_0'.then_branch``,
    ``function com.x::F``), ``opsets`` the imports its version resolves against."""

    node: onnx.NodeProto
    index: int
    graph: str
    opsets: dict[str, int]
    scope: Scope


def _opsets(imports) -> dict[str, int]:  # noqa: ANN001 - repeated OperatorSetIdProto
    """By domain as spelled ("" and "ai.onnx" kept apart: a node resolves through opspecs.import_version)."""
    return import_table(imports)


def _walk_nodes(nodes, path: str, opsets: dict[str, int], scope: Scope) -> Iterator[Site]:  # noqa: ANN001
    """Each node, then the subgraphs in its attributes (which see ``scope`` as their enclosing scope)."""
    for k, node in enumerate(nodes):
        yield Site(node, k, path, opsets, scope)
        for a in node.attribute:
            subs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
            for j, sub in enumerate(subs):
                label = f"{path}/node {k} {node.name!r}.{a.name}" + (f"[{j}]" if len(subs) > 1 else "")
                yield from _walk_nodes(sub.node, label, opsets, graph_scope(sub, scope))


def walk(model: onnx.ModelProto) -> Iterator[Site]:
    """Every node of the main graph, its subgraphs, and the model's local functions."""
    yield from _walk_nodes(model.graph.node, "main", _opsets(model.opset_import),
                           graph_scope(model.graph, None))
    for f in model.functions:
        scope = Scope()
        scope.define(f.input)
        _add_constants(scope, f.node)
        for vi in getattr(f, "value_info", []):
            scope.add(vi.name, _from_value_info(vi, "value_info"))
        opsets = _opsets(f.opset_import) or _opsets(model.opset_import)
        yield from _walk_nodes(f.node, f"function {normalize_domain(f.domain)}::{f.name}", opsets, scope)
