"""Graph cases (issue 28): the oracle's node-by-node composition, the graph families loading and exporting
like single-node cases, hostile graph case files refused in one line naming file, line and node, the schema's
vocabularies matching the registries, and the rewrite / node attribution of a failing graph case."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.backend.test.loader import load_model_tests

from qdq_conformance.backends.registry import create
from qdq_conformance.checker import check_model
from qdq_conformance.compare import compare
from qdq_conformance.errors import CaseFileError
from qdq_conformance.generators.corpus import case_files, load_file
from qdq_conformance.generators.export import export
from qdq_conformance.generators.file_schemas import schema
from qdq_conformance.generators.graph_coverage import graph_coverage
from qdq_conformance.plugin.selection import marker_names
from qdq_conformance.reference import run_any
from qdq_conformance.reference.graph_oracle import (
    COMPUTE_OPS,
    EXACT_OPS,
    GRAPH_OPS,
    QUANT_OPS,
    GraphError,
    run_graph,
)
from qdq_conformance.results import CaseRecord, decode_record, header
from qdq_conformance.runner.execute import ObjRef, Sources, run_case
from qdq_conformance.runner.expectations import Expectations

from . import independent_graph
from .results_files import record

GRAPH_FILES = [p for p in case_files() if p.stem.startswith("graph_")]


@pytest.fixture(scope="module")
def graphs():
    cases = [c for p in GRAPH_FILES for c in load_file(p)]
    assert len(cases) >= 400
    return cases


def test_schema_vocabularies_are_the_registries():
    node = schema()["$defs"]["node"]["properties"]
    assert node["op"]["enum"] == [*QUANT_OPS, *EXACT_OPS, *COMPUTE_OPS] == list(GRAPH_OPS)
    families = schema()["$defs"]["graph"]["properties"]["family"]["enum"]
    assert all(f.startswith("graph-") for f in families)


#: what the independent evaluator (tests/independent_graph.py) leaves to the kernel alone, and how many
#: case-forms each accounts for: float8 / float4 / float6 quantization, AMD Quark's operators,
#: DynamicQuantizeLinear (its scale is computed from the data in float32, a reading of its own)
BEYOND = {"com.amd.quark ExtendedQuantizeLinear": 28, "DynamicQuantizeLinear": 36,
          "QuantizeLinear to float8_e4m3fn": 14, "QuantizeLinear to float8_e5m2": 10,
          "QuantizeLinear to float8_e4m3fnuz": 4, "QuantizeLinear to float8_e5m2fnuz": 4,
          "QuantizeLinear to float4_e2m1fn": 4, "QuantizeLinear to float6_e2m3fn": 2,
          "QuantizeLinear to float6_e3m2fn": 2,
          # (the compute families of issue 36 phase 2: float8 weights, int32 bias limits)
          "DequantizeLinear of float8_e4m3fn by a float32 scale": 12,
          "DequantizeLinear of float8_e4m3fnuz by a float32 scale": 8,
          "DequantizeLinear of float8_e5m2 by a float32 scale": 12,
          "DequantizeLinear of float8_e5m2fnuz by a float32 scale": 4,
          "DequantizeLinear of an int32 difference of 2**29 or more": 32,
          # (graph_op_defaults.yaml, graph_op_attributes.yaml's batched zero points: onnx.reference
          # subtracts a per-row zero point along K)
          "MatMulInteger with a per-row a_zero_point": 6}


def test_every_graph_case_is_normative_and_its_expected_values_are_the_oracles(graphs):
    """The expected outputs (the kernel's composition, reference/graph_oracle.py) are what a computation
    written
    apart gives: the nodes in order, the exact ops by onnx.reference, the integer QuantizeLinear /
    DequantizeLinear by the spec's formula in tests/independent_graph.py; same type, shape and bits (around a
    compute op, within the case's interval: that evaluation is one a float32 backend may make). The
    case-forms it does not compute are counted by why (:data:`BEYOND`), and the graph runner still runs every
    one."""
    beyond: Counter[str] = Counter()
    agreed = within = 0
    for c in graphs:
        assert c.status == "normative" and c.expected, c.id
        for form in ("runtime", "initializer"):
            model = c.model(form)
            onnx.checker.check_model(model, full_check=True)
            try:
                got = independent_graph.run(model, c.feeds(form))
            except independent_graph.Beyond as e:
                beyond[str(e)] += 1
                again = run_graph(model, c.feeds(form))  # (the oracle runs it, at least)
                assert all(compare(e, g) is None
                           for e, g in zip(c.expected, again, strict=True)), (c.id, form)
                continue
            assert [(g.dtype, g.shape) for g in got] == [(e.dtype, e.shape) for e in c.expected], (c.id, form)
            # (a case around a compute op: a float32 evaluation of its own lies within the oracle's interval)
            bounds = c.output_bounds() or [None] * len(got)
            assert all(compare(e, g, c.ulp, b) is None
                       for e, g, b in zip(c.expected, got, bounds, strict=True)), (c.id, form, got)
            agreed += 1
            within += any(b is not None for b in bounds)
    assert dict(beyond) == BEYOND
    assert agreed == 2 * len(graphs) - sum(BEYOND.values()) and agreed >= 1300, agreed
    assert within == 128  # (the case-forms around a compute op that take an interval)


def test_the_issues_example(graphs):
    """Q(0.01) -> DQ -> Q(0.1) -> DQ, uint8, x = 0.26: the spec gives 0.3 (ONNX Runtime's optimizer 0.26)."""
    c = next(c for c in graphs if c.id == "graph-requant-chain-coarser-uint8-o13")
    assert float(c.expected[0][0]) == pytest.approx(0.3) and float(c.inputs[0][1][0]) == pytest.approx(0.26)


def test_checker_accepts_every_graph_model(graphs, tmp_path):
    for c in graphs[::7]:
        for form in ("runtime", "initializer"):
            model = c.model(form)
            report = check_model(model, tmp_path, c.id)
            # (a graph of MatMulInteger alone holds no quantization node for the checker to check)
            quantizes = any(n.op_type in QUANT_OPS for n in model.graph.node)
            assert report.nodes_checked >= quantizes and report.count("error") == 0, \
                (c.id, form, report.findings)


def test_markers_and_metadata(graphs):
    c = next(c for c in graphs if c.id.startswith("graph-around-transpose"))
    names = marker_names(c, "initializer")
    assert {"graph", "family_graph_data_movement", "op_transpose", "op_quantizelinear",
            "initializer"} <= set(names)
    meta = c.metadata()
    assert meta["operator"] == "graph" and meta["graph"]["operators"][2] == "Transpose"
    assert c.spec_text()["clauses"][-1]["operator"] == "ONNX IR"  # the rule of executing nodes in order


def test_export_is_read_by_onnx_loader_and_matches_the_oracle(graphs, tmp_path):
    cases = [c for c in graphs if c.id.endswith("-o21")][::15]
    out = tmp_path / "graphs"
    manifest = export(cases, out)
    # (graph cases are normative: the export's normative/ kind folder holds them all)
    assert {e["kind"] for e in manifest["cases"]} == {"normative"}
    tests = load_model_tests(data_dir=str(out), kind="normative")
    assert len(tests) == 2 * len(cases) == 2 * manifest["case_count"]
    for t in tests:
        model = onnx.load(os.path.join(t.model_dir, "model.onnx"))
        data = Path(t.model_dir) / "test_data_set_0"
        inputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p)))
                  for p in sorted(data.glob("input_*.pb"))]
        outputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p)))
                   for p in sorted(data.glob("output_*.pb"))]
        got = run_any(model, {i.name: a for i, a in zip(model.graph.input, inputs, strict=True)})
        assert all(compare(e, g) is None for e, g in zip(outputs, got, strict=True)), t.model_dir
    entry = json.loads((out / "manifest.json").read_text())["cases"][0]
    assert entry["operator"] == "graph" and entry["graph"]["nodes"]


def test_graph_coverage_has_no_gap(graphs):
    assert graph_coverage(graphs).gaps() == []


# --- hostile graph case files
# ------------------------------------------------------------------------------------

HEAD = """graphs:
  - id: g
    description: d
    spec: [{text: t}]
    family: graph-requantize
    status: normative
    opsets: [21]
    inputs:
      x: {type: float, shape: [2, 3], values: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}
    params:
      s: {type: float, values: 0.1}
      z: {type: uint8, values: 0}
    constants:
      shape: {type: int64, values: [3, 2]}
      bad: {type: int64, values: [4, 4]}
    nodes:
"""
GOOD_NODES = """      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q]}
      - {op: DequantizeLinear, inputs: [q, s, z], outputs: [y]}
"""

#: name -> (nodes, the line the error names, the problem: a substring of the one line)
HOSTILE = {
    "cycle": ("""      - {op: QuantizeLinear, inputs: [d, s, z], outputs: [q]}
      - {op: DequantizeLinear, inputs: [q, s, z], outputs: [d]}
      - {op: Identity, inputs: [d], outputs: [y]}
""", 17, "cycle"),
    "op-outside-the-list": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q]}
      - {op: Sin, inputs: [q], outputs: [y]}
""", 18, "'Sin' is not one of"),
    "dangling": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q]}
      - {op: DequantizeLinear, inputs: [nowhere, s, z], outputs: [y]}
""", 18, "node n1_dequantizelinear (DequantizeLinear): input 'nowhere' is no graph input"),
    "duplicate-tensor": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q]}
      - {op: DequantizeLinear, inputs: [q, s, z], outputs: [q]}
      - {op: Identity, inputs: [q], outputs: [y]}
""", 18, "tensor 'q' is produced twice"),
    "shadows-an-input": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [s]}
      - {op: Identity, inputs: [s], outputs: [y]}
""", 17, "tensor 's' is produced twice"),
    "shapes-do-not-compose": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q]}
      - {op: Reshape, inputs: [q, bad], outputs: [y]}
""", 18, "node n1_reshape (Reshape)"),
    "bound-not-constant": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q]}
      - {op: DequantizeLinear, inputs: [q, s, z], outputs: [d]}
      - {op: Reshape, inputs: [d, x], outputs: [y]}
""", 19, "must be one of the template's constants"),
    "nan-into-relu": ("""      - {op: Relu, inputs: [nan], outputs: [y]}
""", 18, "NaN reaches a comparison"),
    "duplicate-node-name": ("""      - {op: QuantizeLinear, inputs: [x, s, z], outputs: [q], name: a}
      - {op: DequantizeLinear, inputs: [q, s, z], outputs: [y], name: a}
""", 17, "the node name is used twice"),
    "output-nobody-makes": (GOOD_NODES.replace("outputs: [y]", "outputs: [w]"), 19,
                            "graph output 'y' is produced "
                                                                                     "by no node"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_graph_files_are_one_line_naming_file_line_and_node(tmp_path, name):
    nodes, line, problem = HOSTILE[name]
    head = HEAD.replace("    constants:\n",
                        "    constants:\n      nan: {type: float, values: [nan, 1.0]}\n") \
        if name == "nan-into-relu" else HEAD
    path = tmp_path / f"{name}.yaml"
    path.write_text(head + nodes + "    outputs: [y]\n")
    with pytest.raises(CaseFileError) as info:
        load_file(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{path}:{line}:"), text
    assert problem in text, text


def test_the_good_graph_loads(tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(HEAD + GOOD_NODES + "    outputs: [y]\n")
    (case,) = load_file(path)
    assert case.id == "graph-g-o21" and case.expected[0].shape == (2, 3)


def test_run_graph_refuses_what_is_not_a_graph_case():
    bad = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Sin", ["a"], ["b"])], "g",
        [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1])],
        [onnx.helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [1])]))
    with pytest.raises((GraphError, Exception), match="Sin"):
        run_graph(bad, {"a": np.ones(1, np.float32)})


# --- rewrite or node
# ---------------------------------------------------------------------------------------------

def test_a_failing_graph_case_says_rewrite_or_node(graphs):
    chain = next(c for c in graphs if c.id == "graph-requant-chain-coarser-uint8-o13")
    result = run_case(create("mutant:collapse-requant-chain"), ObjRef(chain), "runtime", Sources(),
                      Expectations())
    rec = decode_record(result.record)
    assert rec["status"] == "failed" and rec["defect"] == "rewrite", rec.get("defect_why")
    # a wrong node (rounding half away from zero): node by node the outputs are wrong too
    ties = next(c for c in graphs if c.id == "graph-requant-ties-o13")
    result = run_case(create("mutant:round-half-away"), ObjRef(ties), "runtime", Sources(), Expectations())
    rec = decode_record(result.record)
    assert rec["status"] == "failed" and rec["defect"] == "node", rec.get("defect_why")
    assert "QuantizeLinear" in rec["defect_why"]
    ok = run_case(create("oracle"), ObjRef(chain), "initializer", Sources(), Expectations())
    assert ok.status == "passed" and "defect" not in decode_record(ok.record)


def test_findings_and_the_compliance_table_group_graph_failures_by_defect():
    from qdq_conformance.reports.compliance import render_findings
    from qdq_conformance.reports.findings import group

    def rec(i: str, defect: str, tpl: str) -> CaseRecord:
        return record(i, "failed", form="initializer", message="values differ", operator="graph",
                      domain="ai.onnx", version=21, family="graph-requantize", granularity="graph",
                      defect=defect, template=f"graph_x.yaml#{tpl}")

    cases = [rec("graph-a-uint8-o21", "rewrite", "a"), rec("graph-a-int8-o21", "rewrite", "a"),
             rec("graph-b-o21", "node", "b")]
    found = group(cases)
    assert sorted((f.defect, f.count) for f in found) == [("node", 1), ("rewrite", 2)]
    assert "rewrite: the backend's own node-by-node run" in next(f for f in found
                                                                 if f.defect == "rewrite").where()
    head = header("x", "1", {"optimization": "level all"})
    text = render_findings([(head, cases, None)])
    assert ("## Graph cases: rewrite or node" in text
            and "- rewrite: a (2 case-forms, e.g. `graph-a-uint8-o21`, initializer form)" in text)
    assert "- node: b (1 case-forms" in text and "(level all)" in text


def test_a_zero_of_either_sign_keeps_both_signs_through_an_exact_op(graphs):
    """A MatMul's zero row (its sign set by the order of the additions) sliced out alone: every element has
    one value, 0, and both signs stay acceptable (the oracle made it +0 to pass it through the Slice)."""
    (case,) = [c for c in graphs if c.id == "graph-slice-of-a-zero-row-o13"]
    ((low, high),) = case.output_bounds()
    assert (low == 0).all() and np.signbit(low).all() and (high == 0).all() and not np.signbit(high).any()
