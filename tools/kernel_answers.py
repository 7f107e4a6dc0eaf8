"""What the kernel answers on one frozen case, and how two answers differ: the one definition both the
freezing (``tools/kernel_mutation.py``, the unmutated kernel) and mutmut's test (a copy in the project's
``tests/``, the mutated kernel) use.

A case's answer holds every path by which a value of the kernel reaches a user of this tool:

- a node case: its outputs through the model in the initializer form (``run_any``: the kernel's model binding
  included, the oracle as a backend sees it) and through ``evaluate`` (the generators' path to its expected
  outputs), or the rule of its refusal; the catalogue's readings as the generators' status policy asks them
  (``catalogue_readings``: the entries whose question arises and the case's own), in their order; the output
  types the spec-checker's planner gives (``check`` reads them);
- one node case a template, also its model rewritten (``model_forms``): its parameters as Constant nodes, an
  omitted optional input spelled "", and malformed models that ``check`` must refuse with a given rule (no
  opset import for the node's domain, a second node, an input with no value, a FLOAT attribute (also beside
  Constant nodes), an extra input, an empty required input, x of an element type no version takes);
- a graph case: every output's interval (the generators' path), its outputs through ``run_any`` (the oracle as
  a backend), every node's step record as ``run_graph`` gives it (the node-by-node replay that attributes a
  failure to a rewrite) and its first node run alone on plain arrays (``run_node``, as the replay calls it);
  one graph case a template, also its model made invalid (``_graph_forms``), refused by rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from qdq_conformance.compare import compare
from qdq_conformance.errors import SpecViolation
from qdq_conformance.generators.status import catalogue_readings
from qdq_conformance.opspecs import get, normalize_domain
from qdq_conformance.reference import evaluate, run, run_any
from qdq_conformance.reference.graph_oracle import Step, run_graph, run_graph_bounded, run_node
from qdq_conformance.reference.model import node_spec
from qdq_conformance.reference.ops import PLANS

Answer = dict[str, Any]


def _attempt(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "outputs", fn(*args)
    except SpecViolation as e:
        return "rule", e.rule


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def model_forms(model: onnx.ModelProto) -> list[tuple[str, onnx.ModelProto]]:
    """A node case's model (initializer form) rewritten: forms the kernel must answer as on the case, and
    malformed ones it must refuse (their rule is in the frozen answer)."""
    forms = []
    for domain in ("", "ai.onnx"):  # the parameters as Constant nodes, in either spelling of the domain
        m = _copy(model)
        consts = [helper.make_node("Constant", [], [i.name], domain=domain, value=i)
                  for i in m.graph.initializer]
        nodes = list(m.graph.node)
        del m.graph.initializer[:], m.graph.node[:]
        m.graph.node.extend(consts + nodes)
        forms.append((f"constant[{domain}]", m))
    node = model.graph.node[-1]
    formal = len(node_spec(model, node).inputs)
    if len(node.input) < formal:
        m = _copy(model)
        m.graph.node[-1].input.append("")
        forms.append(("omitted-input", m))
    m = _copy(model)
    keep = [o for o in m.opset_import if normalize_domain(o.domain) != normalize_domain(node.domain)]
    del m.opset_import[:]
    m.opset_import.extend(keep)
    forms.append(("no-opset", m))
    m = _copy(model)
    m.graph.node.append(helper.make_node("Identity", [node.output[0]], ["probe_out"]))
    forms.append(("two-nodes", m))
    m = _copy(model)
    m.graph.node[-1].attribute.append(helper.make_attribute("probe", 1.5))
    forms.append(("float-attribute", m))
    m = _copy(model)
    m.graph.node[-1].input.extend([node.input[-1]] * (formal + 1 - len(node.input)))
    forms.append(("extra-input", m))
    if len(node.input) > 1:
        m = _copy(model)
        kept = [i for i in m.graph.initializer if i.name != node.input[1]]
        del m.graph.initializer[:]
        m.graph.initializer.extend(kept)
        forms.append(("no-value", m))
        m = _copy(model)
        m.graph.node[-1].input[1] = ""
        forms.append(("empty-required", m))
    return forms


def _forms(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, tuple[str, Any]]:
    out = {name: _attempt(run, m, feeds) for name, m in model_forms(model)}
    out.update({f"{name}@any": _attempt(run_any, m, feeds) for name, m in model_forms(model)
                if name in ("no-value", "float-attribute")})  # as the oracle backend sees them
    for name, m in model_forms(model)[:2]:  # a FLOAT attribute beside Constant nodes: one node all the same
        m.graph.node[-1].attribute.append(helper.make_attribute("probe", 1.5))
        out[f"{name}+float-attribute@any"] = _attempt(run_any, m, feeds)
    wide = {k: np.asarray(v).astype(np.float64) for k, v in feeds.items()}  # no element type of any version
    out["float64-x"] = _attempt(run, model, wide)
    return out


def _graph_forms(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, tuple[str, Any]]:
    """A graph case's model made invalid in the two ways the oracle refuses by rule: an attribute of a kind
    no op of the vocabulary has (a TENSOR, QDQ010), and an ai.onnx op outside the vocabulary (QDQ012)."""
    tensor = _copy(model)
    probe = helper.make_tensor("t", onnx.TensorProto.FLOAT, [1], [0.5])
    tensor.graph.node[0].attribute.append(helper.make_attribute("probe", probe))
    foreign = _copy(model)
    foreign.graph.node.append(helper.make_node("Gelu", [model.graph.output[0].name], ["probe_out"]))
    return {"tensor-attribute": _attempt(run_graph_bounded, tensor, feeds),
            "foreign-op": _attempt(run_graph_bounded, foreign, feeds)}


def _step(s: Step) -> tuple[Any, ...]:
    return (s.index, s.outputs, [b.low for b in s.bounds], [b.high for b in s.bounds])


def answer(c: dict[str, Any]) -> Answer:
    """The kernel's answer on a frozen case (``c``: its kind, model, feeds, and for a node case its domain,
    op, version, inputs, attributes, catalogue entry asked and whether its model forms are judged)."""
    model = onnx.load_model_from_string(c["model"])
    if c["kind"] == "graph":
        steps: list[Step] = []
        try:
            bounded = run_graph_bounded(model, c["feeds"])
            run_graph(model, c["feeds"], steps)  # the replay's records, as the runner asks for them
        except SpecViolation as e:
            return {"rule": e.rule}
        first = steps[0]
        alone = run_node(model, first.node, first.inputs)
        return {**({"forms": _graph_forms(model, c["feeds"])} if c.get("forms") else {}),
                "outputs": [iv.value for iv in bounded], "low": [iv.low for iv in bounded],
                "high": [iv.high for iv in bounded], "any": run_any(model, c["feeds"]),
                "steps": [_step(s) for s in steps],
                "alone": ([iv.value for iv in alone], [iv.low for iv in alone], [iv.high for iv in alone])}
    kind, outputs = _attempt(run_any, model, c["feeds"])
    out: Answer = {kind: outputs, "evaluate": _attempt(evaluate, c["domain"], c["op"], c["version"],
                                                        c["inputs"], c["attrs"])}
    if c.get("forms"):
        out["forms"] = _forms(model, c["feeds"])
    if kind == "rule":
        return out
    found = catalogue_readings(c["domain"], c["op"], c["version"], c["inputs"], c["attrs"], outputs,
                               c["asked"])
    spec = get(c["domain"], c["op"], c["version"])
    out["readings"] = [(r.key, r.outputs, r.judged) for r in found]
    out["plan"] = [t.name for t in PLANS[(spec.domain, spec.name)](spec, list(c["inputs"]),
                                                                    dict(c["attrs"])).outputs]
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal answers' parts: arrays compared as the runner compares outputs (bit for bit, NaN by class),
    sequences and tuples element by element, anything else by ==."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype == bool or b.dtype == bool:
            return a.dtype == b.dtype and np.array_equal(a, b)
        return compare(a, b) is None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def differences(got: Answer, want: Answer) -> list[str]:
    """The parts of an answer that differ (empty: the same answer)."""
    return [k for k in sorted(set(got) | set(want))
            if k not in got or k not in want or not _same(got[k], want[k])]
