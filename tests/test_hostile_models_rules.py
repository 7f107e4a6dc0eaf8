"""Hostile models for what ``check`` learned in issue 27: every problem of a node, the model rules (order, IR
version, unknown quantization operators), nodes whose types are unknown, and folders. Each ends in one line
per problem and a documented exit status, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from qdq_conformance.checker import check_model
from qdq_conformance.cli import main

from .test_hostile_models import _attr, _model, _set

F = TensorProto.FLOAT


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def fail(*_: object) -> None:
        raise TimeoutError(f"the checker did not finish in {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check(capsys, *paths: Path) -> tuple[int, list[str], str]:
    with _deadline(60):
        status = main(["check", *map(str, paths)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out.splitlines(), err


def _rules(m: onnx.ModelProto) -> set[str]:
    return {f.rule for f in check_model(m, Path(".")).findings}


def test_four_problems_of_one_node_are_four_lines(tmp_path, capsys):
    m = _model()
    for a in (helper.make_attribute("axis", 9), helper.make_attribute("foo", 1),
              helper.make_attribute("output_dtype", TensorProto.INT8)):
        _attr(0, a)(m)
    _set("s", data_type=TensorProto.INT8, raw_data=b"\1" * 4)(m)
    onnx.save(m, tmp_path / "m.onnx")
    status, out, _ = _check(capsys, tmp_path / "m.onnx")
    node0 = [ln.split(": ")[2] for ln in out if ": node 0 'q' " in ln]
    assert (status == 1
            and sorted(node0) == ["error QDQ002", "error QDQ004", "error QDQ007", "error QDQ009"]), out


def test_ten_thousand_unknown_quark_nodes_are_one_note_each_operator(tmp_path, capsys):
    m = _model()
    m.opset_import.append(helper.make_opsetid("com.amd.quark", 1))
    prev = "y"
    for k in range(10_000):
        m.graph.node.append(helper.make_node("BFPQuantizeDequantize", [prev], [f"b{k}"], name=f"b{k}",
                                             domain="com.amd.quark"))
        prev = f"b{k}"
    onnx.save(m, tmp_path / "m.onnx")
    start = time.perf_counter()
    status, out, _ = _check(capsys, tmp_path / "m.onnx")
    assert time.perf_counter() - start < 60  # (the deadline; the real cost is in benchmarks/bench_checker.py)
    assert status == 0 and len(out) == 2 and "10000 nodes not checked" in out[0]
    assert (out[1]
            == ("1 model, 2 quantization nodes (10000 more not checked: an operator the checker does not "
                "know): 0 errors, 0 warnings, 1 note"))


@pytest.mark.parametrize(("name", "change", "expected"), [
    # x of unknown rank and an absurd axis: not judged (a note), no stand-in of rank 2**62
    ("axis-huge-rank-unknown", lambda m: (m.graph.input[0].type.tensor_type.ClearField("shape"),
                                          _attr(0, helper.make_attribute("axis", 2**62))(m)), {"QDQ020"}),
    ("axis-huge-negative-rank-unknown", lambda m: (m.graph.input[0].type.tensor_type.ClearField("shape"),
                                                   _attr(0, helper.make_attribute("axis", -(2**63)))(m)),
     {"QDQ020"}),
    # a type attribute holding no type, an element type onnx does not know: no IR finding, no crash
    ("cast-to-garbage", lambda m: m.graph.node.append(helper.make_node("Cast", ["y"], ["c"], to=2**40)),
     set()),
    # (the Q's output declared of type 99, which the DQ reads: said of both nodes, no IR finding)
    ("value-info-elem-99", lambda m: m.graph.value_info.append(helper.make_tensor_value_info("q", 99, None)),
     {"QDQ002", "QDQ019", "QDQ020"}),
    # an ai.onnx.ml opset beyond onnx's release table, an IR version far in the future: nothing to compare
    ("ml-opset-beyond-the-table", lambda m: m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 99)),
     set()),
    ("ir-version-huge", lambda m: m.__setattr__("ir_version", 2**62), set()),
    # an operator of a quantization domain with an empty name
    ("quark-op-without-a-name", lambda m: (m.opset_import.append(helper.make_opsetid("com.amd.quark", 1)),
                                           m.graph.node.append(helper.make_node("", ["y"], ["o"],
                                                                                domain="com.amd.quark"))),
     {"QDQ024"}),
    # the x of the Q is an undefined name and the DQ reads it: QDQ011 only where the name is undefined
    ("x-undefined", lambda m: m.graph.node[0].input.__setitem__(0, "nowhere"), {"QDQ011", "QDQ020"}),
    # a Q whose every input is missing but the required count
    ("q-without-scale", lambda m: m.graph.node[0].input.__delitem__(slice(1, 3)), {"QDQ011"}),
])
def test_hostile_model_rules_inputs(name, change, expected):
    m = _model()
    change(m)
    assert _rules(m) == expected, [f.line() for f in check_model(m, Path(".")).findings]


def test_a_cycle_through_two_nodes_and_a_long_chain(tmp_path, capsys):
    m = _model()
    m.graph.node.append(helper.make_node("Add", ["y", "b"], ["a"], name="first"))
    m.graph.node.append(helper.make_node("Relu", ["a"], ["b"], name="second"))
    for k in range(50_000):
        m.graph.node.append(helper.make_node("Identity", [f"i{k - 1}" if k else "a"], [f"i{k}"]))
    onnx.save(m, tmp_path / "m.onnx")
    status, out, _ = _check(capsys, tmp_path / "m.onnx")
    assert status == 1 and [ln for ln in out if "QDQ021" in ln] == [
        f"{tmp_path / 'm.onnx'}: node 2 'first' ai.onnx::Add-21: error QDQ021: input 'b' is produced later, "
        "by node 3 'second' (Relu)"]


def test_a_deep_folder_tree_with_hostile_entries(tmp_path, capsys):
    deep = tmp_path
    for k in range(40):
        deep = deep / f"d{k}"
    deep.mkdir(parents=True)
    onnx.save(_model(), deep / "m.onnx")
    os.symlink(tmp_path, deep / "loop")  # never followed
    os.symlink(tmp_path / "absent.onnx", tmp_path / "dangling.onnx")
    (tmp_path / "dir.onnx").mkdir()  # a folder named like a model: searched, not opened
    status, out, err = _check(capsys, tmp_path)
    assert (status == 2
            and err.splitlines() == [f"{tmp_path / 'dangling.onnx'}: cannot check: cannot read: No such "
                                     "file or directory"])
    assert out[-1] == "1 model, 2 quantization nodes: 0 errors, 0 warnings, 0 notes; 1 unreadable"
    with _deadline(60):
        assert main(["check", "--json", str(tmp_path)]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [m["path"] for m in doc["models"]] == [str(deep / "m.onnx")]


# --- any node the checker can meet: findings, never an exception
# ---------------------------------------------

_OPS = [("", "QuantizeLinear"), ("", "DequantizeLinear"), ("", "DynamicQuantizeLinear"),
        ("com.microsoft", "QuantizeLinear"), ("com.microsoft", "DequantizeLinear"),
        ("com.amd.quark", "ExtendedQuantizeLinear"), ("com.amd.quark", "ExtendedDequantizeLinear")]
_ELEMS = [0, *range(1, 24), 99]  # 0: unknown; 99: no ONNX type


def _random_node(draw) -> onnx.ModelProto:  # noqa: ANN001 - a Hypothesis draw
    from hypothesis import strategies as st

    domain, op = draw(st.sampled_from(_OPS))
    dim = st.one_of(st.integers(0, 9), st.just("N"), st.just(-1))
    shape = st.one_of(st.none(), st.lists(dim, max_size=4))
    inputs, inits, names = [], [], []
    for k, name in enumerate(["x", "s", "z", "extra"][:draw(st.integers(0, 4))]):
        kind = draw(st.sampled_from(["input", "initializer", "undefined", "absent"]))
        if kind == "absent":
            names.append("")
            continue
        names.append(name)
        elem = draw(st.sampled_from(_ELEMS))
        if kind == "input":
            inputs.append(helper.make_tensor_value_info(name, elem, draw(shape)))
        elif kind == "initializer":
            dims = draw(st.lists(st.integers(0, 4), max_size=3))
            elem = elem if elem not in (0, 99) else TensorProto.FLOAT
            values = [0] * int(__import__("math").prod(dims))
            inits.append(helper.make_tensor(name, elem, dims, values if elem != TensorProto.STRING else
                                            [b""] * len(values)))
        del k
    attrs = {a: draw(st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 30))
             for a in draw(st.lists(st.sampled_from(["axis", "block_size", "saturate", "output_dtype",
                                                     "precision", "foo"]), max_size=4, unique=True))}
    node = helper.make_node(op, names, ["y"], name="n", domain=domain, **attrs)
    out = helper.make_tensor_value_info("y", draw(st.sampled_from(_ELEMS)), draw(shape))
    g = helper.make_graph([node], "g", inputs, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", draw(st.integers(10, 25))),
                                            helper.make_opsetid(domain or "ai.onnx",
                                                                draw(st.integers(1, 25)))])
    m.ir_version = draw(st.integers(3, 14))
    return m


def test_any_node_is_findings_never_an_exception():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(st.data())
    def run(data) -> None:  # noqa: ANN001 - a Hypothesis data object
        m = _random_node(data.draw)
        report = check_model(m, Path("."), "m.onnx")
        by_node: dict[tuple, list[str]] = {}
        for f in report.findings:
            assert "\n" not in f.line()
            by_node.setdefault((f.graph, f.node_index), []).append(f.rule)
        assert all(len(rules) == len(set(rules)) for rules in by_node.values()), by_node  # each rule once
    run()
