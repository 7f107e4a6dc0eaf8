"""Reading a single-node model: the node, its operator version, its inputs and its attributes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx

from .. import opspecs
from ..errors import SpecViolation
from ..opspecs import OpSpec
from ..types import from_tensor_proto


@dataclass
class BoundNode:
    spec: OpSpec
    node: onnx.NodeProto
    inputs: list[np.ndarray | None]
    attrs: dict[str, int]


def opset_version(model: onnx.ModelProto, domain: str) -> int | None:
    """The model's opset import for a node spelled ``domain``, resolved as onnx's checker does
    (:func:`opspecs.import_version`: the node's own spelling first, "" falling back to "ai.onnx")."""
    return opspecs.import_version(opspecs.import_table(model.opset_import), domain)


def node_spec(model: onnx.ModelProto, node: onnx.NodeProto) -> OpSpec:
    """What ``node``'s operator version accepts, at the opset ``model`` imports for its domain (QDQ001 when it
    imports none)."""
    domain = opspecs.normalize_domain(node.domain)
    opset = opset_version(model, node.domain)
    if opset is None:
        raise SpecViolation("QDQ001", f"the model imports no opset for domain {domain!r}", op=node.op_type,
                            domain=domain)
    return opspecs.resolve(domain, node.op_type, opset)


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    values = {init.name: from_tensor_proto(init) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for attr in node.attribute:
                if attr.name == "value":
                    values[node.output[0]] = from_tensor_proto(attr.t)
    return values


def bind(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> BoundNode:
    """The one non-Constant node of ``model``, with its inputs taken from ``feeds`` or initializers."""
    nodes = [n for n in model.graph.node if not (n.op_type == "Constant" and n.domain in ("", "ai.onnx"))]
    if len(nodes) != 1:
        raise SpecViolation("QDQ012", f"expected one quantization node, found {len(nodes)} nodes",
                            op=",".join(n.op_type for n in nodes) or "?")
    node = nodes[0]
    spec = node_spec(model, node)
    known = _constants(model.graph)
    inputs: list[np.ndarray | None] = []
    for name in node.input:
        if name == "":
            inputs.append(None)
        elif name in feeds:
            inputs.append(np.asarray(feeds[name]))
        elif name in known:
            inputs.append(known[name])
        else:
            raise spec.violation("QDQ011", f"no value for input {name!r}: not fed, not an initializer", name)
    while inputs and inputs[-1] is None:
        inputs.pop()
    attrs: dict[str, int] = {}
    for attr in node.attribute:
        if attr.type != onnx.AttributeProto.INT:
            raise spec.violation("QDQ010", f"attribute {attr.name!r} must be an INT", attr.name)
        attrs[attr.name] = int(attr.i)
    return BoundNode(spec, node, inputs, attrs)
