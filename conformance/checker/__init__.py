"""The spec-checker: validates every quantization node of a model against its opset's spec, and the model
around them (node order, IR version, quantization operators it does not know: :mod:`.model_rules`).

``check_file(path) -> ModelReport``, ``check_model(model, base_dir)`` for a model already in memory; both
raise :class:`Unreadable` (one line: the problem and the tensor, function or input it is in) for input that
cannot be read or interpreted, and nothing else. Findings carry the same rule ids as the reference kernel's
:class:`SpecViolation`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import onnx.shape_inference

from ..opspecs import OpSpec, import_version, normalize_domain
from ..rules import RULES
from . import model_rules
from . import node_checks as nodes
from .loading import read_model
from .model_errors import Unreadable
from .tensor_facts import Site, walk

__all__ = ["CheckedNode", "ModelReport", "NodeFinding", "Unreadable", "check_file", "check_model"]


@dataclass(frozen=True)
class NodeFinding:
    model: str
    graph: str
    node_index: int | None
    node_name: str
    domain: str
    operator: str
    version: int | None
    rule: str
    severity: str
    message: str
    input: str | None

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = dict(self.__dict__)
        d["summary"] = RULES[self.rule].summary
        d["spec"] = RULES[self.rule].spec
        return d

    def line(self) -> str:
        where = f"node {self.node_index} {self.node_name!r}" if self.node_index is not None else "model"
        op = f" {self.domain}::{self.operator}-{self.version if self.version is not None else '?'}" \
            if self.operator else ""
        graph = "" if self.graph == "main" else f" in {self.graph}"
        subject = f"{self.input}: " if self.input else ""
        return f"{self.model}: {where}{op}{graph}: {self.severity} {self.rule}: {subject}{self.message}"


@dataclass(frozen=True)
class CheckedNode:
    """One quantization node as the checker saw it (``check_model(..., keep_nodes=True)``): where it is (its
    scope holds what is known of each tensor), the operator version it resolved to (None: unresolved, or an
    operator the checker does not know: ``known``), and its findings."""

    site: Site
    spec: OpSpec | None
    findings: tuple[NodeFinding, ...]
    known: bool = True


@dataclass
class ModelReport:
    path: str
    nodes_checked: int = 0
    findings: list[NodeFinding] = field(default_factory=list)
    #: quantization nodes of operators the checker does not know (each operator has a QDQ024 note)
    nodes_not_checked: int = 0
    #: every quantization node, checked or not, in walk order, and the model as walked (shapes inferred)
    #: (only with ``keep_nodes``)
    nodes: list[CheckedNode] = field(default_factory=list)
    model: onnx.ModelProto | None = None

    def count(self, severity: str) -> int:
        return sum(f.severity == severity for f in self.findings)


def _infer(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    """The model with onnx shape inference applied (tensor data stays unloaded), or the reason it failed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False), None
    except Exception as e:  # noqa: BLE001 - inference failing is a note, never the end of the check
        return model, " ".join(str(e).split())[:200]


def _model_finding(label: str, f: model_rules.ModelFinding) -> NodeFinding:
    return NodeFinding(label, f.graph, f.node_index, f.node_name, f.domain, f.operator, f.version, f.rule,
                       RULES[f.rule].severity, f.message, None)


def check_model(model: onnx.ModelProto, base_dir: Path, label: str = "<model>",
                keep_nodes: bool = False) -> ModelReport:
    """Every rule on ``model`` (its external data, if any, read from ``base_dir``); ``keep_nodes``: the report
    keeps each quantization node with its scope and findings (``qdq-conformance cases --from-model``)."""
    report = ModelReport(label)
    for mf in [*model_rules.ir_for_opsets(model), *model_rules.ir_for_types(model),
               *model_rules.order(model), *model_rules.negative_dimensions(model)]:
        report.findings.append(_model_finding(label, mf))
    inferred, failure = _infer(model)
    if failure:
        report.findings.append(NodeFinding(label, "main", None, "", "", "", None, "QDQ020", "note",
                                           f"onnx shape inference failed ({failure}); the nodes were checked "
                                           "with the types and shapes the initializers and declarations give",
                                           None))
    if keep_nodes:
        report.model = inferred
    local = {(normalize_domain(f.domain), f.name) for f in model.functions}
    unknown: list[Site] = []
    for site in walk(inferred):
        if not nodes.is_checked(site):
            if model_rules.is_quantization(site, local):
                unknown.append(site)
                if keep_nodes:
                    report.nodes.append(CheckedNode(site, None, (), known=False))
            continue
        report.nodes_checked += 1
        spec, findings = nodes.check(site, base_dir)
        found = [NodeFinding(label, site.graph, site.index, site.node.name, nodes.domain_of(site),
                             site.node.op_type,
                             spec.version if spec else import_version(site.opsets, site.node.domain), f.rule,
                             f.severity, f.message, f.input) for f in findings]
        report.findings += found
        if keep_nodes:
            report.nodes.append(CheckedNode(site, spec, tuple(found)))
    report.nodes_not_checked = len(unknown)
    report.findings += [_model_finding(label, f) for f in model_rules.unknown_operators(unknown)]
    return report


def check_file(path: Path, keep_nodes: bool = False) -> ModelReport:
    model = read_model(path)
    return check_model(model, path.parent, str(path), keep_nodes)
