"""The spec-checker: one rule set with the kernel, a valid and an invalid fixture per rule, whole models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_conformance.checker import check_file, check_model
from qdq_conformance.checker import tensor_facts as checker_graph
from qdq_conformance.cli import main
from qdq_conformance.rules import RULES

F, I8, U8, I32 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32
E4M3 = TensorProto.FLOAT8E4M3FN


def _rules(report, severity=None):
    return sorted({f.rule for f in report.findings if severity is None or f.severity == severity})


# --- the corpus: invalid cases break exactly their rule, valid cases break none
# -------------------------------


@pytest.mark.parametrize("form", ["runtime", "initializer"])
def test_invalid_corpus_cases_report_exactly_their_rule(corpus, form):
    invalid = [c for c in corpus.cases if c.status == "invalid"]
    assert len(invalid) > 100
    wrong = {}
    for case in invalid:
        report = check_model(case.model(form), Path("."), case.id)
        got = sorted({f.rule for f in report.findings if f.severity == "error" and f.node_index is not None})
        model = sorted({f.rule for f in report.findings if f.severity == "error" and f.node_index is None})
        # A type the version does not allow can be one the model's IR version (its opset's) does not have
        # either: a second, model-level problem (QDQ023), never another.
        if got != [case.rule] or model not in ([], ["QDQ023"] if case.rule == "QDQ002" else []):
            wrong[case.id] = (case.rule, got, model)
    assert not wrong, list(wrong.items())[:5]


@pytest.mark.parametrize("form", ["runtime", "initializer"])
def test_valid_corpus_cases_report_no_error(corpus, form):
    """No errors and no notes; a warning only where the case's own data calls for it."""
    unexpected = {}
    checked = 0
    for case in corpus.cases:
        if case.status == "invalid":
            continue
        checked += 1
        report = check_model(case.model(form), Path("."), case.id)
        for f in report.findings:
            # a graph case: ONNX's type inference knows no custom domain, so
            if getattr(case, "is_graph", False):
                # an input made by a com.amd.quark node has no type to check (the note says so, rightly)
                quark_made = any(n.domain == "com.amd.quark" for n in case.nodes)
                if not (f.rule == "QDQ020" and quark_made):
                    unexpected.setdefault(case.id, []).append(f.line())
                continue
            zp = case.inputs[2][1] if len(case.inputs) > 2 else None
            justified = (
                (f.rule == "QDQ018" and "saturate" in case.attrs and not case.types["y"].startswith("float"))
                or (f.rule == "QDQ016" and form == "initializer" and zp is not None
                    and np.any(np.asarray(zp, np.float64) != 0))
                or (f.rule == "QDQ017" and form == "initializer" and zp is not None and zp.dtype == np.int32
                    and np.any(zp != 0))
            )
            if not justified:
                unexpected.setdefault(case.id, []).append(f.line())
    assert checked > 20_000
    assert not unexpected, list(unexpected.items())[:5]


# --- one valid and one invalid fixture per checker rule
# ---------------------------------------------------------


def _model(op="QuantizeLinear", version=21, inputs=(), attrs=None, out=U8, domain="", opsets=None,
           value_info=(), extra_nodes=()):
    """A model around one node. ``inputs``: (name, elem, shape, value or None); a value makes an
    initializer."""
    names, graph_inputs, inits = [], [], []
    for name, elem, shape, value in inputs:
        names.append(name)
        if not name:
            continue
        if value is None:
            graph_inputs.append(helper.make_tensor_value_info(name, elem, shape))
        elif isinstance(value, TensorProto):
            inits.append(value)
        else:
            inits.append(helper.make_tensor(name, elem, shape, np.asarray(value).reshape(-1).tolist()))
    node = helper.make_node(op, names, ["y"], name="q", domain=domain, **(attrs or {}))
    g = helper.make_graph([*extra_nodes, node], "g", graph_inputs,
                          [helper.make_tensor_value_info("y", out, None)], inits, value_info=list(value_info))
    imports = opsets or [helper.make_opsetid("", version)]
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = max(10, helper.find_min_ir_version_for(imports, ignore_unknown=True))  # (QDQ022, QDQ023)
    return m


X = ("x", F, [2, 4], None)
S = ("s", F, [], 0.5)
Z8 = ("z", U8, [], 3)


def _behind(producer, opsets, value_info):
    """Q fed by a node of an unknown domain: x's type is known only if value_info declares it."""
    m = _model(inputs=[("", F, [], None), S, Z8], opsets=opsets, extra_nodes=[producer],
               value_info=value_info)
    m.graph.node[-1].input[0] = "x"
    m.graph.input.append(helper.make_tensor_value_info("a", F, [2, 4]))
    return m


def _fixtures():
    """rule -> (valid model, invalid model)."""
    e4m3_zero = helper.make_tensor("z", E4M3, [], [0.0])
    e4m3_two = helper.make_tensor("z", E4M3, [], [2.0])
    bad_i8 = TensorProto(name="z", data_type=I8, int32_data=[300])
    good_i8 = TensorProto(name="z", data_type=I8, int32_data=[100])
    unknown = helper.make_node("Mystery", ["a"], ["x"], domain="com.example")
    two = [helper.make_opsetid("", 21), helper.make_opsetid("com.example", 1)]
    return {
        "QDQ001": (_model("DequantizeLinear", 10, [("x", U8, [4], None), S], out=F),
                   _model("DequantizeLinear", 9, [("x", U8, [4], None), S], out=F)),
        "QDQ002": (_model(inputs=[X, S, Z8]),
                   _model(inputs=[("x", TensorProto.DOUBLE, [2, 4], None), S, Z8])),
        "QDQ003": (_model("DequantizeLinear", inputs=[("x", U8, [4], None), S, Z8], out=F),
                   _model("DequantizeLinear", inputs=[("x", I8, [4], None), S, Z8], out=F)),
        "QDQ004": (_model(inputs=[X, S, Z8], attrs={"output_dtype": U8}),
                   _model(inputs=[X, S, Z8], attrs={"output_dtype": I8})),
        "QDQ005": (_model(inputs=[X, ("s", F, [4], [1.0] * 4)], attrs={"axis": 1}),
                   _model(inputs=[X, ("s", F, [3], [1.0] * 3)], attrs={"axis": 1})),
        "QDQ006": (_model(inputs=[X, S, Z8]), _model(inputs=[X, S, ("z", U8, [2], [0, 0])])),
        "QDQ007": (_model(inputs=[X, ("s", F, [4], [1.0] * 4)], attrs={"axis": -1}),
                   _model(inputs=[X, ("s", F, [4], [1.0] * 4)], attrs={"axis": 2})),
        "QDQ008": (_model(inputs=[X, ("s", F, [2, 2], [1.0] * 4)], attrs={"axis": 1, "block_size": 2}),
                   _model(inputs=[X, ("s", F, [2, 2], [1.0] * 4)], attrs={"axis": 1, "block_size": 4})),
        "QDQ009": (_model(version=19, inputs=[X, S, Z8]), _model(version=19, inputs=[X, S, Z8],
                                                                 attrs={"block_size": 2})),
        "QDQ010": (_model(inputs=[X, S, Z8], attrs={"axis": 1}),
                   _model(inputs=[X, S, Z8], attrs={"axis": 1.0})),
        "QDQ011": (_model(inputs=[X, S, Z8]), _model(inputs=[X, S, Z8, ("w", U8, [], 1)])),
        "QDQ013": (_model("DequantizeLinear", 24,
                          [("x", U8, [4], None), ("s", TensorProto.FLOAT8E8M0, [], None)],
                          attrs={"output_dtype": F}, out=F),
                   _model("DequantizeLinear", 24,
                          [("x", U8, [4], None), ("s", TensorProto.FLOAT8E8M0, [], None)], out=F)),
        "QDQ014": (_model(inputs=[X, S, Z8]), _model(inputs=[X, ("s", F, [], 0.0), Z8])),
        "QDQ015": (_model(inputs=[X, S, ("z", I8, [], good_i8)], out=I8),
                   _model(inputs=[X, S, ("z", I8, [], bad_i8)], out=I8)),
        "QDQ016": (_model(inputs=[X, S, ("z", E4M3, [], e4m3_zero)], out=E4M3),
                   _model(inputs=[X, S, ("z", E4M3, [], e4m3_two)], out=E4M3)),
        "QDQ017": (_model("DequantizeLinear", inputs=[("x", I32, [4], None), S, ("z", I32, [], 0)], out=F),
                   _model("DequantizeLinear", inputs=[("x", I32, [4], None), S, ("z", I32, [], 5)], out=F)),
        "QDQ018": (_model(inputs=[X, S, ("z", E4M3, [], e4m3_zero)], attrs={"saturate": 0}, out=E4M3),
                   _model(inputs=[X, S, Z8], attrs={"saturate": 0})),
        "QDQ019": (_model(inputs=[X, S, Z8], out=U8), _model(inputs=[X, S, Z8], out=I8)),
        "QDQ020": (_behind(unknown, two, [helper.make_tensor_value_info("x", F, [2, 4])]),
                   _behind(unknown, two, [])),
        **_model_rule_fixtures(),
    }


def _model_rule_fixtures():
    """QDQ021-QDQ025, the rules on the model around the nodes."""
    relu = helper.make_node("Relu", ["a"], ["x"], name="relu")
    sorted_, unsorted = _behind(relu, None, []), _behind(relu, None, [])
    relu_node, q_node = list(unsorted.graph.node)
    del unsorted.graph.node[:]
    unsorted.graph.node.extend([q_node, relu_node])  # the Q before the Relu that produces its x
    old_ir, new_ir = _model(inputs=[X, S, Z8]), _model(inputs=[X, S, Z8])
    old_ir.ir_version = 8  # opset 21 came with IR 10
    spare = helper.make_tensor("spare", TensorProto.INT4, [2], [1, -1])  # int4: IR 10; opset 19: IR 9
    int4_ok, int4_old = (_model(version=19, inputs=[X, S, Z8]) for _ in range(2))
    for m, ir in ((int4_ok, 10), (int4_old, 9)):
        m.graph.initializer.append(spare)
        m.ir_version = ir
    quark = [helper.make_opsetid("", 21), helper.make_opsetid("com.amd.quark", 1)]
    bfp = helper.make_node("BFPQuantizeDequantize", ["a"], ["x"], name="bfp", domain="com.amd.quark")
    known = helper.make_node("Relu", ["a"], ["x"], name="relu")
    return {
        "QDQ021": (sorted_, unsorted),
        "QDQ022": (new_ir, old_ir),
        "QDQ023": (int4_ok, int4_old),
        "QDQ024": (_behind(known, quark, []),
                   _behind(bfp, quark, [helper.make_tensor_value_info("x", F, [2, 4])])),
        "QDQ025": (_model(inputs=[("x", F, [2, "n"], None), S, Z8]),
                   _model(inputs=[("x", F, [2, -4], None), S, Z8])),
    }


FIXTURES = _fixtures()


def test_every_checker_rule_has_fixtures():
    # "not a single node the kernel can evaluate": kernel-only
    assert set(RULES) - set(FIXTURES) == {"QDQ012"}


@pytest.mark.parametrize("rule", sorted(FIXTURES))
def test_rule_fixtures(rule):
    valid, invalid = FIXTURES[rule]
    assert _rules(check_model(valid, Path("."))) == [], check_model(valid, Path(".")).findings
    assert _rules(check_model(invalid, Path("."))) == [rule], check_model(invalid, Path(".")).findings


# --- subgraphs, local functions, unknowns
# ---------------------------------------------------------------------


def _q(name, block_size=None):
    attrs = {"axis": 1, "block_size": block_size} if block_size else {}
    return helper.make_node("QuantizeLinear", ["x", "s2", "z2"], [name], name=name, **attrs)


def test_subgraphs_and_local_functions_are_checked():
    s2 = helper.make_tensor("s2", F, [2, 2], [1.0] * 4)
    z2 = helper.make_tensor("z2", U8, [2, 2], [0] * 4)
    then_g = helper.make_graph([_q("then_q", block_size=2)], "then", [], [helper.make_tensor_value_info(
        "then_q", U8, None)])
    else_g = helper.make_graph([_q("else_q", block_size=4)], "else", [], [helper.make_tensor_value_info(
        "else_q", U8, None)])
    if_node = helper.make_node("If", ["c"], ["r"], name="branch", then_branch=then_g, else_branch=else_g)
    fdq = helper.make_node("DequantizeLinear", ["fx", "fs"], ["fy"], name="f_dq", axis=3)
    fconst = helper.make_node("Constant", [], ["fs"], value=helper.make_tensor("v", F, [4], [1.0] * 4))
    func = helper.make_function("local", "Deq", ["fx"], ["fy"], [fconst, fdq], [helper.make_opsetid("", 21)])
    func.value_info.append(helper.make_tensor_value_info("fx", U8, [2, 4]))
    call = helper.make_node("Deq", ["qx"], ["out"], name="call", domain="local")
    g = helper.make_graph([if_node, call], "main",
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in
                           [("c", TensorProto.BOOL, []), ("x", F, [2, 4]), ("qx", U8, [2, 4])]],
                          [helper.make_tensor_value_info("r", U8, None),
                           helper.make_tensor_value_info("out", F, None)],
                          [s2, z2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)],
                          functions=[func])
    m.ir_version = 10
    report = check_model(m, Path("."), "m.onnx")
    assert report.nodes_checked == 3
    got = {(f.graph, f.node_name, f.rule) for f in report.findings}
    assert got == {("main/node 0 'branch'.else_branch", "else_q", "QDQ008"),
                   ("function local::Deq", "f_dq", "QDQ007")}, report.findings


def test_symbolic_batch_dimension_still_checks_the_channel_axis():
    x = ("x", F, ["N", 4, "H"], None)
    ok = _model(inputs=[x, ("s", F, [4], [1.0] * 4)], attrs={"axis": 1})
    bad = _model(inputs=[x, ("s", F, [3], [1.0] * 3)], attrs={"axis": 0})
    assert _rules(check_model(ok, Path("."))) == []
    assert _rules(check_model(bad, Path("."))) == []  # axis 0 is symbolic: cannot be judged
    wrong = _model(inputs=[x, ("s", F, [3], [1.0] * 3)], attrs={"axis": 1})
    assert _rules(check_model(wrong, Path("."))) == ["QDQ005"]


# --- files: external data, bad input, the command line
# ---------------------------------------------------------


def _external_model(tmp_path: Path) -> Path:
    w = numpy_helper.from_array(np.arange(256 * 1024, dtype=np.int64).astype(np.int8).reshape(256, 1024), "w")
    scale = numpy_helper.from_array(np.full(1024, 0.1, np.float32), "s")
    zp = numpy_helper.from_array(np.zeros(1024, np.int8), "z")
    node = helper.make_node("DequantizeLinear", ["w", "s", "z"], ["y"], name="dq", axis=1)
    g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", F, [256, 1024])],
                          [w, scale, zp])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    path = tmp_path / "ext.onnx"
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.bin",
                    size_threshold=0)
    return path


def test_external_data_reads_only_scales_and_zero_points(tmp_path, monkeypatch):
    path = _external_model(tmp_path)
    read = []
    original = checker_graph.read_external
    monkeypatch.setattr(checker_graph, "read_external", lambda t, d: read.append(t.name) or original(t, d))
    report = check_file(path)
    assert report.nodes_checked == 1 and report.findings == []
    assert sorted(read) == ["s", "z"]  # never the 256 KB weight


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "check", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_unreadable_inputs_exit_2_with_one_line(tmp_path):
    good = _external_model(tmp_path)
    cases = {"empty.onnx": b"", "garbage.onnx": bytes(range(256)) * 8,
             "truncated.onnx": good.read_bytes()[:40]}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    missing = tmp_path / "missing"
    missing.mkdir()
    (missing / "ext.onnx").write_bytes(good.read_bytes())  # its ext.bin is not there
    short = tmp_path / "short"
    short.mkdir()
    (short / "ext.onnx").write_bytes(good.read_bytes())
    (short / "ext.bin").write_bytes((tmp_path / "ext.bin").read_bytes()[:1000])
    m = _model(inputs=[X, S, Z8])
    m.opset_import[0].version = 99
    onnx.save(m, tmp_path / "future.onnx")
    said: dict[Path, str] = {}  # stderr by model
    for path in [*(tmp_path / n for n in cases), missing / "ext.onnx", short / "ext.onnx", tmp_path
                 / "future.onnx", tmp_path / "nonexistent.onnx"]:
        r = _cli(str(path))
        assert r.returncode == 2, (path, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert str(path) in r.stderr
        said[path] = r.stderr
    assert "ext.bin" in said[missing / "ext.onnx"]
    assert "opset 99" in said[tmp_path / "future.onnx"]


def test_cli_exit_status_text_and_json(tmp_path, capsys):
    valid, invalid = FIXTURES["QDQ008"]
    onnx.save(valid, tmp_path / "ok.onnx")
    onnx.save(invalid, tmp_path / "bad.onnx")
    _, warn = FIXTURES["QDQ016"]
    onnx.save(warn, tmp_path / "warn.onnx")
    assert main(["check", str(tmp_path / "ok.onnx"), str(tmp_path / "warn.onnx")]) == 0  # warnings allowed
    out = capsys.readouterr().out
    assert ("warning QDQ016" in out
            and out.strip().endswith("2 models, 2 quantization nodes: 0 errors, 1 warning, "
                                      "0 notes"))
    assert main(["check", str(tmp_path / "bad.onnx")]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(f"{tmp_path / 'bad.onnx'}: node 0 'q' ai.onnx::QuantizeLinear-21: error QDQ008: ")
    assert main(["check", "--json", str(tmp_path / "bad.onnx")]) == 1
    import json

    doc = json.loads(capsys.readouterr().out)
    f = doc["models"][0]["findings"][0]
    assert (f["rule"], f["severity"], f["node_index"], f["operator"], f["version"]) == \
        ("QDQ008", "error", 0, "QuantizeLinear", 21)
    assert f["spec"] == RULES["QDQ008"].spec and doc["summary"]["exit_status"] == 1
    assert main(["check", "--rules"]) == 0
    assert "QDQ020" in capsys.readouterr().out
