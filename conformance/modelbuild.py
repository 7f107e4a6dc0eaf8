"""Building single-node Q/DQ models valid for a given opset (correct IR version, opset imports)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper

from . import opspecs
from .types import by_dtype, to_tensor_proto

#: The ai.onnx opset imported next to a contrib domain (any opset that has the operators' companions).
CONTRIB_AI_ONNX_OPSET = 21


def opset_imports(domain: str, version: int) -> list[onnx.OperatorSetIdProto]:
    domain = opspecs.normalize_domain(domain)
    if domain == opspecs.AI_ONNX:
        return [helper.make_opsetid("", version)]
    return [helper.make_opsetid("", CONTRIB_AI_ONNX_OPSET), helper.make_opsetid(domain, version)]


def ir_version_for(domain: str, version: int) -> int:
    """The lowest IR version that carries the opset (ONNX's VERSION_TABLE), and every element type used."""
    ai = version if opspecs.normalize_domain(domain) == opspecs.AI_ONNX else CONTRIB_AI_ONNX_OPSET
    return helper.find_min_ir_version_for([helper.make_opsetid("", ai)], ignore_unknown=True)


def single_node_model(
    domain: str,
    op: str,
    version: int,
    inputs: Sequence[tuple[str, np.ndarray | None]],
    outputs: Sequence[tuple[str, int, Sequence[int] | None]],
    attrs: Mapping[str, int] | None = None,
    initializers: Sequence[str] = (),
    name: str = "qdq",
    doc: str = "",
) -> onnx.ModelProto:
    """A model with one node ``domain::op`` at opset ``version``.

    ``inputs`` are (name, example array) pairs (None for an omitted optional input); those named in
    ``initializers`` become initializers holding the example value, the others graph inputs of its type and
    shape. ``outputs`` are (name, TensorProto type, shape or None).
    """
    node_inputs, graph_inputs, inits = [], [], []
    for input_name, value in inputs:
        if value is None:
            node_inputs.append("")
            continue
        node_inputs.append(input_name)
        if input_name in initializers:
            inits.append(to_tensor_proto(value, input_name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(input_name, by_dtype(value.dtype).proto,
                                                              list(value.shape)))
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    node_domain = "" if opspecs.normalize_domain(domain) == opspecs.AI_ONNX else domain
    attributes: dict[str, Any] = dict(attrs or {})  # (Any: make_node's own keywords are not attributes)
    node = helper.make_node(op, node_inputs, [o[0] for o in outputs], name=name, domain=node_domain,
                            **attributes)
    graph = helper.make_graph(
        [node], name, graph_inputs,
        [helper.make_tensor_value_info(n, t, list(s) if s is not None else None) for n, t, s in outputs],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=opset_imports(domain, version),
                              producer_name="onnx-qdq-conformance", doc_string=doc)
    model.ir_version = ir_version_for(domain, version)
    return model
