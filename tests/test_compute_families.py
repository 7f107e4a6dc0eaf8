"""Issue 36, phase 2: the compute families that vary what a fused kernel must get right, and the pieces they
needed: Pad as an exact op, seeded graph values, an interval through a correctly rounded op (MatMul -> Add of
a bias), the fused-kernel emulation of the mutants (which gives the spec's values without a shortcut), and
each new family killing the mutant the corpus let through before it."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx.reference import ReferenceEvaluator

from qdq_conformance.cli import main
from qdq_conformance.compare import compare
from qdq_conformance.generators.corpus import case_files, load_file
from qdq_conformance.mutants.fused_kernel import Shortcut, fuse
from qdq_conformance.mutants.mutant import Mutant, MutantBackend
from qdq_conformance.reference.exact_ops import EXACT_OPS
from qdq_conformance.reference.graph_oracle import run_graph_bounded
from qdq_conformance.reference.ops import SPEC
from qdq_conformance.resources import cases_dir
from qdq_conformance.runner.execute import call_backend
from qdq_conformance.runner.outcome import classify

from .float32_orders import ORDERS, exact, f32

F32 = np.float32

#: each new family's file, the mutants it was added to kill, and the first case of the file that kills each;
#: the corpus before these files let every one of them through (test below); tests/test_mutants.py's
#: test_each_new_family_kills_its_mutants checks each file kills them with a wrong value
NEW_FAMILIES = {
    "graph_compute_weights.yaml": {
        "fused-weight-zero-point-ignored": "graph-matmul-weight-zero-point-uint8-u8tensor-o13",
        "fused-multiplier-16-bit": "graph-requant-near-ties-uint8-o13"},
    "graph_compute_bias.yaml": {
        "fused-accumulator-wraps-int32": "graph-conv-bias-int32-limits-uint8-inrange-o13"},
    "graph_compute_negative_scales.yaml": {"fused-scale-abs": "graph-conv-negative-scales-uint8-x-o13"},
    "graph_compute_padding.yaml": {"pad-on-codes-code-zero": "graph-pad-zero-point-uint8-zero-o13"},
    "graph_compute_long.yaml": {"fused-block-accumulator-int16": "graph-quantized-matmul-k4096-int4b32-o21"},
    "graph_compute_float8.yaml": {"fused-float8-no-saturation": "graph-matmul-float8-e4m3fnuz-o19"},
    "graph_compute_saturation.yaml": {
        "sigmoid-coarse-table": "graph-sigmoid-saturation-uint8-0p0491-o13",
        "softmax-coarse-exp": "graph-softmax-saturation-uint8-o13"},
}


#: graph files written after the new families (issue 37: the kernel's mutmut survivors), which also kill some
#: of their mutants (the knife-edge Sigmoid and Softmax budgets kill the coarse tables)
LATER = frozenset({"graph_op_defaults.yaml", "graph_op_attributes.yaml", "graph_compute_knife_edges.yaml",
                   "graph_interval_paths.yaml", "graph_softmax_first_axis.yaml",
                   "graph_compute_resize_long.yaml"})


def test_the_graph_corpus_before_the_new_families_lets_their_mutants_through(tmp_path, capsys):
    """Every graph file written before the new families (the corpus these mutants were written against;
    single-node cases cannot kill a graph rewrite or a compute step): each of the new families' mutants
    survives."""
    for p in case_files():
        if p.name.startswith("graph_") and p.name not in NEW_FAMILIES and p.name not in LATER:
            shutil.copy(p, tmp_path / p.name)
    shutil.copy(cases_dir() / "case.schema.json", tmp_path)
    mutants = sorted({m for kills in NEW_FAMILIES.values() for m in kills})
    code = main(["mutants", "--cases", str(tmp_path), "--only", *mutants, "--json", "--jobs", "2"])
    verdicts = {v["mutant"]: v["status"] for v in json.loads(capsys.readouterr().out)["verdicts"]}
    assert verdicts == dict.fromkeys(mutants, "surviving") and code == 1


def test_the_fused_kernel_without_a_shortcut_passes_every_graph_case():
    """The emulation the fused mutants share (integer accumulation, then the scales) gives values inside every
    case's interval: a case that fails a fused mutant fails it for its shortcut, not for the emulation."""
    backend = MutantBackend(Mutant("no-shortcut", "-", "-", lambda: SPEC, equivalent="-",
                                   rewrite=fuse(Shortcut())))
    fused = 0
    for p in case_files():
        if not p.name.startswith("graph_compute_"):
            continue
        for case in load_file(p):
            model, feeds = case.model("runtime"), case.feeds("runtime")
            rewritten, _ = fuse(Shortcut())(_copy(model), dict(feeds))
            fused += sum(n.name.endswith("_fused") for n in rewritten.graph.node)
            raw = call_backend(backend, model, feeds)
            outcome = classify(raw, case_status=case.status, expected=case.expected,
                               bounds=case.output_bounds())
            assert outcome.status == "passed", (case.id, outcome.message)
    assert fused >= 150  # (Conv, MatMul, Gemm between DQ and Q: most of the families)


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


# --- Pad, the exact op ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("axes", [None, [1, 2]])
def test_pad_is_onnx_pad(mode, axes):
    x = np.arange(2 * 3 * 4, dtype=F32).reshape(2, 3, 4) * F32(0.5) - 3
    pads = np.array([0, 1, 2, 0, 2, 1] if axes is None else [1, 2, 2, 1], np.int64)
    inputs = [x, pads, np.array(1.5, F32)] + ([np.array(axes, np.int64)] if axes else [])
    names = ["x", "pads", "c"] + (["axes"] if axes else [])
    node = helper.make_node("Pad", names, ["y"], mode=mode)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 1 if n in ("x", "c") else 7,
                                                                          None) for n in names],
                              [helper.make_tensor_value_info("y", 1, None)])
    expected = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])).run(
        None, dict(zip(names, inputs, strict=True)))[0]
    got = EXACT_OPS["Pad"](list(inputs), {"mode": mode})[0]
    assert compare(expected, got) is None


def test_pad_keeps_the_constants_bits_and_refuses_what_it_does_not_compute():
    x = np.array([1.0, 2.0], F32)
    (y,) = EXACT_OPS["Pad"]([x, np.array([1, 1], np.int64), np.array(-0.0, F32)], {})
    assert np.signbit(y[0]) and np.signbit(y[-1]) and y[1] == 1.0
    for bad in ([x, np.array([-1, 1], np.int64)], [x, np.array([1], np.int64)],
                [x, np.array([1, 1], np.int64), np.array(0, np.int32)]):
        with pytest.raises(ValueError):
            EXACT_OPS["Pad"](bad, {})
    with pytest.raises(ValueError, match="mode"):
        EXACT_OPS["Pad"]([x, np.array([1, 1], np.int64)], {"mode": "mirror"})


# --- seeded graph values ------------------------------------------------------------------------------------

_SEEDED = """
graphs:
  - id: seeded
    description: seeded values
    spec: [{operator: DequantizeLinear, versions: "21+", text: "y = (x - x_zero_point) * x_scale"}]
    family: graph-roundtrip
    status: normative
    opsets: [21]
    inputs:
      x: {type: int4, shape: [3, 40], random: {seed: 5, low: -8, high: -5}}
    params:
      s: {type: float, values: 0.5}
      f: {type: float, shape: [7], random: {seed: 9, low: -1, high: 1, step: 0.25}}
    nodes:
      - {op: DequantizeLinear, inputs: [x, s], outputs: [d]}
      - {op: Identity, inputs: [f], outputs: [g]}
    outputs: [d, g]
"""


def test_random_graph_values_are_seeded_and_on_their_grid(tmp_path):
    (tmp_path / "graph_seeded.yaml").write_text(_SEEDED, encoding="utf-8")
    shutil.copy(cases_dir() / "case.schema.json", tmp_path)
    first, again = (load_file(tmp_path / "graph_seeded.yaml")[0] for _ in range(2))
    x = dict(first.inputs)["x"].astype(np.int64)
    f = dict(first.params)["f"].astype(np.float64)
    assert x.shape == (3, 40) and x.min() >= -8 and x.max() <= -5 and len(set(x.reshape(-1))) == 4
    assert f.min() >= -1 and f.max() <= 1 and (f * 4 == np.round(f * 4)).all()
    assert np.array_equal(x, dict(again.inputs)["x"].astype(np.int64))
    (tmp_path / "graph_seeded.yaml").write_text(_SEEDED.replace("shape: [7], ", ""), encoding="utf-8")
    with pytest.raises(Exception, match="random values need a shape"):
        load_file(tmp_path / "graph_seeded.yaml")


# --- an interval through Add: MatMul -> Add(bias) ---------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.lists(st.floats(-3, 3, width=32), min_size=n, max_size=n),
    st.lists(st.floats(-3, 3, width=32), min_size=n, max_size=n),
    st.floats(-50, 50, width=32))))
def test_an_interval_passes_through_add_by_its_ends(abc):
    """MatMul's interval, then Add of a constant: every float32 evaluation order of the dot product, then one
    rounded addition, lands inside the interval the graph gives."""
    a, b, c = np.array(abc[0], F32).reshape(1, -1), np.array(abc[1], F32).reshape(-1, 1), F32(abc[2])
    nodes = [helper.make_node("MatMul", ["a", "b"], ["m"]), helper.make_node("Add", ["m", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", 1, [1, a.shape[1]])],
                              [helper.make_tensor_value_info("y", 1, None)],
                              [onnx.numpy_helper.from_array(b, "b"),
                               onnx.numpy_helper.from_array(np.array(c), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    (iv,) = run_graph_bounded(model, {"a": a})
    low, high = Fraction(float(iv.low.reshape(-1)[0])), Fraction(float(iv.high.reshape(-1)[0]))
    for order in ORDERS.values():
        v = f32(order(exact(a), exact(b)) + Fraction(float(c)))
        assert low <= v <= high
