"""A model's main graph as the pattern finders (:mod:`.graphs`, :mod:`.compute`) see it: producers and
consumers of each tensor, its small constants, the configurations of the quantization nodes whose cases exist,
what the checker knows of each tensor (type, shape, the TensorProto of a constant), and each node's attributes
as a case writes them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import AttributeProto, numpy_helper

from qdq_conformance.checker.tensor_facts import Scope

from .node_configs import NodeConfig, NodeRef

#: an attribute as a case writes it (INT, INTS, FLOAT, FLOATS, STRING)
AttrValue = int | float | str | list[int] | list[float]
Attrs = dict[str, AttrValue]
#: a constant this small (elements) is held by value (bounds, shapes, scales of Resize ...)
SMALL_CONSTANT = 64


def attributes(node: onnx.NodeProto) -> Attrs | None:
    """The node's attributes as a case writes them, None when one is of a kind a case cannot hold (a tensor,
    a graph)."""
    out: Attrs = {}
    for a in node.attribute:
        if a.type == AttributeProto.INT:
            out[a.name] = int(a.i)
        elif a.type == AttributeProto.INTS:
            out[a.name] = [int(v) for v in a.ints]
        elif a.type == AttributeProto.FLOAT:
            out[a.name] = float(a.f)
        elif a.type == AttributeProto.FLOATS:
            out[a.name] = [float(v) for v in a.floats]
        elif a.type == AttributeProto.STRING:
            try:
                out[a.name] = a.s.decode("utf-8")
            except UnicodeDecodeError:
                return None
        else:
            return None
    return out


def int_list(attrs: Attrs, key: str, default: list[int]) -> list[int]:
    """An INT or INTS attribute as a list of ints (``default`` when not written)."""
    v = attrs.get(key, default)
    if isinstance(v, (int, float)):
        return [int(v)]
    if isinstance(v, str):
        return list(default)
    return [int(i) for i in v]


@dataclass
class ModelGraph:
    model: onnx.ModelProto
    configs: dict[int, NodeConfig]  # main-graph node index -> its configuration (those in cases)
    scope: Scope
    model_name: str
    base_dir: Path = Path(".")
    producer: dict[str, int] = field(default_factory=dict)
    consumers: dict[str, list[int]] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k, n in enumerate(self.model.graph.node):
            for o in n.output:
                self.producer[o] = k
            for i in n.input:
                self.consumers.setdefault(i, []).append(k)
        for t in self.model.graph.initializer:
            if t.data_location != onnx.TensorProto.EXTERNAL and math.prod(t.dims) <= SMALL_CONSTANT:
                self.constants[t.name] = numpy_helper.to_array(t)
        for n in self.model.graph.node:
            value = n.attribute[0] if n.op_type == "Constant" and n.output and n.attribute else None
            small = value is not None and math.prod(value.t.dims) <= SMALL_CONSTANT
            if value is not None and value.type == AttributeProto.TENSOR and small:
                self.constants[n.output[0]] = numpy_helper.to_array(value.t)

    def per_tensor(self, k: int) -> NodeConfig | None:
        cfg = self.configs.get(k)
        return cfg if cfg is not None and cfg.granularity in ("per-tensor", "per-tensor-1d") else None

    def next_q(self, tensor: str) -> NodeConfig | None:
        for k in self.consumers.get(tensor, []):
            cfg = self.per_tensor(k)
            if cfg is not None and cfg.kind == "Q":
                return cfg
        return None

    def dims(self, name: str) -> tuple[int | None, ...] | None:
        """The tensor's shape as the checker knows it (None: unknown rank; a dim of None: unknown)."""
        f = self.scope.get(name)
        return None if f is None else f.shape

    def elem(self, name: str) -> int | None:
        f = self.scope.get(name)
        return None if f is None else f.elem

    def tensor(self, name: str) -> onnx.TensorProto | None:
        """The constant's TensorProto (an initializer or a Constant node's value), None for a runtime
        tensor."""
        f = self.scope.get(name)
        return None if f is None else f.tensor

    def ref(self, k: int) -> NodeRef:
        node = self.model.graph.node[k]
        return NodeRef(self.model_name, "main", k, node.name, f"ai.onnx::{node.op_type}")
