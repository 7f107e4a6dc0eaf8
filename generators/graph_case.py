"""A concrete graph case: a small graph of quantization nodes, exact ops and compute ops, its values, and the
oracle's node-by-node outputs (``qdq_conformance.reference.graph_oracle``): each output's representative value
(``expected``) and, where a compute op leaves more than one acceptable value, its interval (``bounds``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from qdq_conformance import opspecs
from qdq_conformance.ambiguities import Reading
from qdq_conformance.compare import rule_text
from qdq_conformance.domain import FORMS, CaseMetadata, CaseStatus, Form, SourceText, SpecText
from qdq_conformance.modelbuild import CONTRIB_AI_ONNX_OPSET
from qdq_conformance.reference.graph_oracle import QUANT_OPS, tensor_proto
from qdq_conformance.types import by_dtype

from .case import Clause, FromTemplate

#: a graph case's ``operator`` in records and manifests, and its ``granularity``
GRAPH = "graph"
#: the clause every graph case relies on besides its operators' sentences
GRAPH_CLAUSE = Clause("ONNX IR", "ir",
                      "Each computation dataflow graph is structured as a topologically sorted list "
                      "of nodes that form a graph, which MUST be free of cycles. Each node represents a call "
                      "to an operator. ... The graph MUST use single static assignment for all node outputs.")


@dataclass
class GraphNode:
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    name: str
    domain: str = ""
    line: int = 0


@dataclass
class GraphCase(FromTemplate):
    id: str
    template: str
    file: str
    line: int
    description: str
    clauses: list[Clause]
    family: str
    opset: int
    nodes: list[GraphNode]
    inputs: list[tuple[str, np.ndarray]]  # always graph inputs
    # graph inputs in the runtime form, initializers in the initializer form
    params: list[tuple[str, np.ndarray]]
    constants: list[tuple[str, np.ndarray]]  # always initializers (shapes, indices, bounds)
    output_names: list[str]
    expected: list[np.ndarray]
    variant: dict[str, Any] = field(default_factory=dict)
    status: str = CaseStatus.NORMATIVE.value
    tier: str = "default"
    ulp: int = 0
    readings: list[Reading] = field(default_factory=list)
    rule: str | None = None
    ambiguity: str | None = None
    is_graph: bool = True
    #: per output, (low, high) where an element has more than one acceptable value; empty: every output exact
    bounds: list[tuple[np.ndarray, np.ndarray] | None] = field(default_factory=list)
    #: why the comparison is an interval (None: exact)
    interval_why: str | None = None
    #: the compute ops whose exact result meets a tie of the QuantizeLinear after them (coverage)
    ties: list[str] = field(default_factory=list)
    #: the compute ops of the graph whose every output element feeds one acceptable value on (coverage)
    exact_ops: list[str] = field(default_factory=list)
    source: SourceText | None = None

    # what the runner and the reports read of every case
    @property
    def comparison(self) -> str:
        return rule_text(self.ulp, interval=any(b is not None for b in self.bounds))

    def output_bounds(self) -> list[tuple[np.ndarray, np.ndarray] | None] | None:
        """Per output, its interval (None: exact), or None when every output is exact."""
        return list(self.bounds) if any(b is not None for b in self.bounds) else None

    @property
    def clause(self) -> Clause:
        """The first clause (every one: ``clauses``)."""
        return self.clauses[0]

    @property
    def op(self) -> str:
        return GRAPH

    @property
    def domain(self) -> str:
        return opspecs.AI_ONNX

    @property
    def version(self) -> int:
        return self.opset

    @property
    def granularity(self) -> str:
        return GRAPH

    @property
    def output_types(self) -> list[int]:
        return [by_dtype(e.dtype).proto for e in self.expected]

    def operators(self) -> list[str]:
        """The distinct ops of the graph, in node order."""
        return list(dict.fromkeys(n.op for n in self.nodes))

    def model(self, form: str = Form.RUNTIME) -> onnx.ModelProto:
        kept = self.__dict__.get("_model_bytes")
        if kept is not None and form in kept:
            return onnx.load_model_from_string(kept[form])
        return self.build(form)

    def prepare(self) -> None:
        self.metadata()
        self.__dict__["_model_bytes"] = {f: self.build(f).SerializeToString() for f in FORMS}

    def build(self, form: str, nodes: list[GraphNode] | None = None,
              outputs: list[tuple[str, np.ndarray]] | None = None,
              extra_inputs: Sequence[tuple[str, np.ndarray]] = ()) -> onnx.ModelProto:
        """The model in ``form``; ``nodes`` / ``outputs`` replace the case's own, ``extra_inputs`` are more
        graph inputs (a node-by-node replay builds one node's model this way, its inputs from earlier nodes
        fed)."""
        if form not in FORMS:
            raise ValueError(f"unknown graph form {form!r}; known: {', '.join(FORMS)}")
        nodes = self.nodes if nodes is None else nodes
        used = {i for n in nodes for i in n.inputs if i}
        fed = [(n, v) for n, v in self.inputs if n in used] + list(extra_inputs)
        inits = [(n, v) for n, v in self.constants if n in used]
        params = [(n, v) for n, v in self.params if n in used]
        if form == Form.INITIALIZER:
            inits += params
        else:
            fed += params
        outs = outputs if outputs is not None else list(zip(self.output_names, self.expected, strict=True))
        graph = helper.make_graph(
            [helper.make_node(n.op, n.inputs, n.outputs, name=n.name, domain=n.domain, **n.attrs)
             for n in nodes],
            self.id,
            [helper.make_tensor_value_info(n, by_dtype(v.dtype).proto, list(v.shape)) for n, v in fed],
            [helper.make_tensor_value_info(n, by_dtype(v.dtype).proto, list(v.shape)) for n, v in outs],
            initializer=[tensor_proto(v, n) for n, v in inits])
        imports = [helper.make_opsetid("", self.opset)]
        for d in sorted({n.domain for n in nodes if n.domain}):
            imports.append(helper.make_opsetid(d, max(opspecs.versions(d, _quant_op(nodes, d)))))
        model = helper.make_model(graph, opset_imports=imports, producer_name="onnx-qdq-conformance",
                                  doc_string=f"onnx-qdq-conformance graph case {self.id}")
        model.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", max(self.opset,
                                                                                      CONTRIB_AI_ONNX_OPSET
                                                                                      if len(imports) > 1
                                                                                      else self.opset))],
                                                          ignore_unknown=True)
        return model

    def feeds(self, form: str = Form.RUNTIME) -> dict[str, np.ndarray]:
        """The graph inputs' values in ``form`` (a parameter no node reads is no input of the model)."""
        used = {i for n in self.nodes for i in n.inputs if i}
        values = {n: v for n, v in self.inputs if n in used}
        if form != Form.INITIALIZER:
            values.update((n, v) for n, v in self.params if n in used)
        return values

    def spec_text(self) -> SpecText:
        first = self.clauses[0]
        return {"operator": first.operator, "versions": first.versions, "text": first.text,
                "clauses": [{"operator": c.operator, "versions": c.versions, "text": c.text}
                            for c in self.clauses]}

    def _metadata(self) -> CaseMetadata:
        every = [*self.inputs, *self.params]
        return {
            "id": self.id, "template": self.template_key(), "operator": GRAPH, "domain": opspecs.AI_ONNX,
            "version": self.opset, "family": self.family, "granularity": GRAPH,
            "variant": dict(sorted(self.variant.items())), "status": self.status, "ambiguity": None,
            "readings": [], "rule": None, "comparison": self.comparison, "ulp_why": None,
            "interval_why": self.interval_why, "tier": self.tier,
            "attributes": {}, "graph": {"nodes": [{"op": n.op, "domain": n.domain or opspecs.AI_ONNX,
                                                   "name": n.name, "inputs": n.inputs, "outputs": n.outputs}
                                                  for n in self.nodes],
                                        "operators": self.operators()},
            "inputs": [{"name": n, "formal": n, "element_type": by_dtype(v.dtype).name,
                        "shape": list(v.shape)}
                       for n, v in every],
            "outputs": [{"name": n, "element_type": by_dtype(e.dtype).name, "shape": list(e.shape)}
                        for n, e in zip(self.output_names, self.expected, strict=True)],
        }


def _quant_op(nodes: list[GraphNode], domain: str) -> str:
    return next(n.op for n in nodes if n.domain == domain and n.op in QUANT_OPS)
