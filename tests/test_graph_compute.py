"""Graph cases around compute ops (issue 36): the families load with intervals where the oracle needs them,
every compute op has an exact case with a tie, the interval travels to the records, the export and the suite
reader, and a failing case gets its rewrite / node attribution from a node-by-node run of the new ops."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx.backend.test.loader import load_model_tests

from qdq_conformance.backends.registry import create
from qdq_conformance.compare import compare
from qdq_conformance.generators.corpus import case_files, load_file
from qdq_conformance.generators.export import export
from qdq_conformance.reference import run_any
from qdq_conformance.reference.graph_oracle import COMPUTE_OPS, run_graph_bounded
from qdq_conformance.runner.execute import ObjRef, Sources, run_case
from qdq_conformance.runner.expectations import Expectations
from qdq_conformance.runner.suite import load_suite

FILES = [p for p in case_files() if p.stem.startswith("graph_compute_")]


@pytest.fixture(scope="module")
def compute():
    return [c for p in FILES for c in load_file(p)]


def test_the_compute_families_hold_exact_and_interval_cases(compute):
    assert len(FILES) >= 15 and 400 <= len(compute) <= 800
    ops = {n.op for c in compute for n in c.nodes if n.op in COMPUTE_OPS}
    assert ops == set(COMPUTE_OPS)
    intervals = [c for c in compute if c.comparison == "interval"]
    assert intervals and all(c.output_bounds() and c.interval_why for c in intervals)
    exact = [c for c in compute if c.comparison == "exact"]
    assert all(c.output_bounds() is None and c.interval_why is None for c in exact)
    for op in set(COMPUTE_OPS) - {"MatMulInteger", "Cast"}:  # (integer ops: no rounding, no tie of their own)
        assert any(op in c.ties and op in c.exact_ops for c in compute), op
    for c in compute:  # (opset 19: float8, the types it brought)
        assert c.opset in (13, 19, 21) and c.spec_text()["clauses"], c.id
        assert c.opset != 19 or c.family == "graph-compute-float8", c.id


def test_every_model_is_valid_and_the_oracle_gives_its_intervals(compute):
    for c in compute[::3]:
        for form in ("runtime", "initializer"):
            model = c.model(form)
            onnx.checker.check_model(model, full_check=True)
            got = run_graph_bounded(model, c.feeds(form))
            bounds = c.output_bounds() or [None] * len(got)
            for e, iv, b in zip(c.expected, got, bounds, strict=True):
                assert compare(e, iv.value) is None, c.id
                assert (b is None) == iv.is_exact(), c.id
                if b is not None:  # the representative lies inside, and so do both ends
                    for v in (iv.value, iv.low, iv.high):
                        assert compare(e, v, bounds=b) is None, c.id


def test_export_carries_both_bounds_and_run_suite_judges_them(compute, tmp_path):
    cases = [c for c in compute if c.comparison == "interval"][:4] + \
        [c for c in compute if c.comparison == "exact"][:2]
    out = tmp_path / "suite"
    manifest = export(cases, out)
    entries = {e["id"]: e for e in manifest["cases"]}
    for c in cases:
        e = entries[c.id]
        assert e["comparison"] == c.comparison
        assert (e["bound_files"] != []) == (c.comparison == "interval")
        blind = any(b.startswith("interval") for b in e["onnx_runner_blind_to"])
        assert blind == (c.comparison == "interval")
    assert len(load_model_tests(data_dir=str(out), kind="normative")) == 2 * len(cases)
    _, suite = load_suite(out)
    by_id = {c.id: c for c in cases}
    for s in suite:
        mine = by_id[s.id].output_bounds()
        theirs = s.output_bounds()
        assert (mine is None) == (theirs is None)
        for m, t in zip(mine or [], theirs or [], strict=True):
            assert (m is None) == (t is None)
            if m is not None and t is not None:
                assert compare(m[0], t[0]) is None and compare(m[1], t[1]) is None
    assert "judged by an interval" in (out / "README.md").read_text()
    assert json.loads((out / "manifest.json").read_text())["manifest_version"] == 3


def test_the_reference_backend_runs_every_compute_op_alone(compute):
    """The node-by-node run (attribution) gives each op its own model: the oracle runs each one."""
    seen = set()
    for c in compute:
        for node in c.nodes:
            if node.op in COMPUTE_OPS and node.op not in seen:
                steps = []
                run_graph_bounded(c.model("initializer"), c.feeds("initializer"), steps)
                step = next(s for s in steps if c.nodes[s.index] is node)
                produced = {o for n in c.nodes for o in n.outputs}
                extra = [(n, v) for n, v in zip(node.inputs, step.inputs, strict=False) if n in produced]
                outs = list(zip(node.outputs, step.outputs, strict=False))
                model = c.build("initializer", nodes=[node], outputs=outs, extra_inputs=extra)
                feeds = dict(extra)
                feeds.update({n: v for n, v in c.feeds("initializer").items() if n in node.inputs})
                got = run_any(model, feeds)
                assert all(compare(e, g) is None for (_, e), g in zip(outs, got, strict=True)), c.id
                seen.add(node.op)
    assert seen == set(COMPUTE_OPS)


@dataclass
class _Shifted:
    """A backend that runs the oracle, and shifts the codes of whole graphs by one (its 'optimizer')."""

    name: str = "shifted"
    version: str = "0"

    def run(self, model, feeds):
        out = run_any(model, feeds)
        if len(model.graph.node) > 1:
            out = [(o.astype(np.int64) + 1).astype(o.dtype) if o.dtype.kind in "iu" else o for o in out]
        return out

    def repro(self, model_code, output_names):
        return model_code


def test_a_failing_compute_case_says_rewrite_or_node(compute):
    c = next(c for c in compute if c.id == "graph-conv3x3-exact-uint8-channel-o13")
    rec = json.loads(run_case(_Shifted(), ObjRef(c), "initializer", Sources(), Expectations()).record)
    assert rec["status"] == "failed" and rec["defect"] == "rewrite", rec.get("defect_why")
    # rounding half away from zero: the QuantizeLinear after the Conv is wrong on its own, on the tie
    rec = json.loads(run_case(create("mutant:round-half-away"), ObjRef(c), "runtime", Sources(),
                              Expectations()).record)
    assert rec["status"] == "failed" and rec["defect"] == "node" and "QuantizeLinear" in rec["defect_why"]
    assert rec["comparison"] == "exact"
    # an interval case passes on the oracle, both forms
    near = next(c for c in compute if c.comparison == "interval")
    for form in ("runtime", "initializer"):
        ok = run_case(create("oracle"), ObjRef(near), form, Sources(), Expectations())
        assert ok.status == "passed", (near.id, form, ok.message)


def test_an_interval_record_previews_its_bounds(compute):
    near = next(c for c in compute if c.comparison == "interval" and c.expected[0].dtype == np.uint8)
    rec = json.loads(run_case(_Shifted(), ObjRef(near), "runtime", Sources(), Expectations()).record)
    assert rec["status"] == "failed" and rec["comparison"] == "interval" and rec["interval_why"]
    (low, high) = near.output_bounds()[0]
    assert rec["expected"][0]["low"] == low.reshape(-1)[:64].tolist()
    assert rec["expected"][0]["high"] == high.reshape(-1)[:64].tolist()


def test_ort_node_by_node_blames_its_rewrite_of_a_quantized_add(compute):
    """ONNX Runtime at its default level fuses DQ -> Add -> Q into QLinearAdd, which rounds a tie the other
    way; node by node it gives the spec's codes."""
    c = next(c for c in compute if c.id == "graph-add-broadcast-uint8-exact-last-o13")
    rec = json.loads(run_case(create("ort"), ObjRef(c), "initializer", Sources(), Expectations()).record)
    assert rec["status"] == "failed" and rec["defect"] == "rewrite", rec.get("defect_why")
