"""``check`` on what surrounds the nodes: folders of models, node order (QDQ021), the IR version against the
opsets (QDQ022) and the element types (QDQ023), quantization operators it does not know (QDQ024), and a run
that checked nothing (exit status 3). Each through the command line: the exit status and the one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_conformance.checker import check_model
from qdq_conformance.checker.model_rules import TYPE_IR
from qdq_conformance.cli import main
from qdq_conformance.rules import RULES

F, U8 = TensorProto.FLOAT, TensorProto.UINT8


def _qdq(ir: int = 10, opset: int = 21, zp_type: int = U8, extra: tuple = (), x: str = "x",
         domains: tuple[str, ...] = ()) -> onnx.ModelProto:
    """x -> Q -> DQ -> y, per tensor, with ``extra`` nodes after them."""
    inits = [helper.make_tensor("s", F, [], [0.5]), helper.make_tensor("z", zp_type, [], [0])]
    nodes = [helper.make_node("QuantizeLinear", [x, "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq"), *extra]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 4])],
                          [helper.make_tensor_value_info(nodes[-1].output[0], F, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            *(helper.make_opsetid(d, 1) for d in domains)])
    m.ir_version = ir
    return m


def _run(capsys, *args: str) -> tuple[int, list[str], list[str]]:
    status = main(["check", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out.splitlines(), err.splitlines()


# --- folders ------------------------------------------------------------------------------------------------


def test_a_folder_is_searched_recursively_for_onnx_files(tmp_path, capsys):
    (tmp_path / "a" / "b").mkdir(parents=True)
    onnx.save(_qdq(), tmp_path / "top.onnx")
    onnx.save(_qdq(), tmp_path / "a" / "b" / "deep.ONNX")
    (tmp_path / "a" / "notes.txt").write_text("not a model")
    (tmp_path / "a" / "weights.onnx.data").write_bytes(b"\0" * 16)
    status, out, err = _run(capsys, "--json", str(tmp_path))
    doc = json.loads("\n".join(out))
    assert status == 0 and err == []
    # a folder's own files (sorted) before its subfolders' (sorted)
    assert [m["path"] for m in doc["models"]] == [str(tmp_path / "top.onnx"),
                                                  str(tmp_path / "a" / "b" / "deep.ONNX")]
    assert doc["summary"]["nodes_checked"] == 4


def test_a_folder_and_a_file_together_and_a_broken_model_inside(tmp_path, capsys):
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(_qdq(), folder / "good.onnx")
    (folder / "broken.onnx").write_bytes(b"garbage")
    onnx.save(_qdq(), tmp_path / "single.onnx")
    status, out, err = _run(capsys, str(folder), str(tmp_path / "single.onnx"))
    assert status == 2
    assert len(err) == 1 and err[0].startswith(f"{folder / 'broken.onnx'}: cannot check: not an ONNX model")
    assert out[-1] == "2 models, 4 quantization nodes: 0 errors, 0 warnings, 0 notes; 1 unreadable"


def test_a_folder_without_models_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_text("")
    status, _, err = _run(capsys, str(tmp_path))
    assert status == 2 and err == [f"{tmp_path}: cannot check: is a directory with no *.onnx file (searched "
                                   "recursively)"]


def test_links_to_folders_are_not_followed(tmp_path, capsys):
    """A link back to a parent would make the search endless."""
    onnx.save(_qdq(), tmp_path / "m.onnx")
    os.symlink(tmp_path, tmp_path / "loop")
    status, out, _ = _run(capsys, str(tmp_path))
    assert status == 0 and out[-1].startswith("1 model, 2 quantization nodes")


def test_a_folder_that_cannot_be_listed_is_one_line(tmp_path, capsys, monkeypatch):
    """(Listing refused as os.walk reports it: a chmod 0 folder is still listed by root.)"""
    from qdq_conformance.checker import check_cmd as cli

    onnx.save(_qdq(), tmp_path / "m.onnx")
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.walk

    def walk(top, onerror=None, **kw):  # noqa: ANN001, ANN202 - os.walk's own signature
        for root, dirs, files in real(top, onerror=onerror, **kw):
            if root == str(locked):
                onerror(PermissionError(13, "Permission denied", root))
                continue
            yield root, dirs, files
    monkeypatch.setattr(cli.os, "walk", walk)
    status, out, err = _run(capsys, str(tmp_path))
    assert status == 2 and err == [f"{locked}: cannot check: cannot list this folder (Permission denied)"]
    assert out[-1] == "1 model, 2 quantization nodes: 0 errors, 0 warnings, 0 notes; 1 unreadable"


def test_a_fifo_named_onnx_in_a_folder_is_not_opened(tmp_path, capsys):
    onnx.save(_qdq(), tmp_path / "m.onnx")
    os.mkfifo(tmp_path / "pipe.onnx")
    status, out, err = _run(capsys, str(tmp_path))
    assert (status == 2
            and err == [f"{tmp_path / 'pipe.onnx'}: cannot check: not a regular file (a FIFO); it was "
                        "not opened"])
    assert out[-1].endswith("; 1 unreadable")


# --- QDQ021: topological order
# --------------------------------------------------------------------------------


def test_a_quantize_reading_a_tensor_produced_later_is_an_error(tmp_path, capsys):
    """Quark's output: the QuantizeLinear reads the Relu's output, the Relu comes after it."""
    m = _qdq(x="r", extra=(helper.make_node("Relu", ["x"], ["r"], name="relu"),))
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", F, [2, 4]))
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(m)
    onnx.save(m, tmp_path / "m.onnx")
    status, out, _ = _run(capsys, str(tmp_path / "m.onnx"))
    assert status == 1
    assert (out[0]
            == (f"{tmp_path / 'm.onnx'}: node 0 'q' ai.onnx::QuantizeLinear-21: error QDQ021: input 'r' is "
                "produced later, by node 2 'relu' (Relu)"))


def test_order_in_subgraphs_and_functions_and_a_node_reading_its_own_output():
    then_g = helper.make_graph([helper.make_node("Relu", ["t1"], ["t0"], name="a"),
                                helper.make_node("Relu", ["x"], ["t1"], name="b")], "then", [],
                               [helper.make_tensor_value_info("t0", F, None)])
    if_node = helper.make_node("If", ["c"], ["r"], name="branch", then_branch=then_g, else_branch=then_g)
    cyc = helper.make_node("Relu", ["own"], ["own"], name="cyc")
    m = _qdq(extra=(if_node, cyc))
    m.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    found = [(f.graph, f.node_name, f.message) for f in check_model(m, Path(".")).findings
             if f.rule == "QDQ021"]
    assert ("main", "cyc", "input 'own' is produced later, by node 3 'cyc' (Relu)") in found
    assert ("main/node 2 'branch'.then_branch", "a",
            "input 't1' is produced later, by node 1 'b' (Relu)") in found


def test_a_subgraph_reading_an_outer_tensor_produced_after_its_node():
    inner = helper.make_graph([helper.make_node("Identity", ["late"], ["o"], name="use")], "body", [],
                              [helper.make_tensor_value_info("o", F, None)])
    if_node = helper.make_node("If", ["c"], ["r"], name="branch", then_branch=inner, else_branch=inner)
    m = _qdq(extra=(if_node, helper.make_node("Relu", ["y"], ["late"], name="producer")))
    m.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    found = [f for f in check_model(m, Path(".")).findings if f.rule == "QDQ021"]
    assert sorted(f.graph for f in found) == ["main/node 2 'branch'.else_branch",
                                              "main/node 2 'branch'.then_branch"]
    assert all(f.node_name == "use" and "main's node 3 'producer'" in f.message for f in found)


# --- QDQ022, QDQ023: IR version
# -------------------------------------------------------------------------------


def test_ir_8_with_float8_and_int4_tensors_is_an_error(tmp_path, capsys):
    """What 18 ORT-quantized models do: IR 8 kept, float8 / int4 tensors written."""
    m = _qdq(ir=8, zp_type=TensorProto.FLOAT8E4M3FN)
    m.graph.initializer.append(helper.make_tensor("w4", TensorProto.INT4, [2], [1, -1]))
    onnx.save(m, tmp_path / "m.onnx")
    status, out, _ = _run(capsys, str(tmp_path / "m.onnx"))
    assert status == 1
    assert f"{tmp_path / 'm.onnx'}: model: error QDQ023: IR version 8 has no float8e4m3fn (IR 9), int4 (IR " \
           "10); used by initializer 'z', graph output 'y' and" not in out  # (y is float)
    line = next(ln for ln in out if "QDQ023" in ln)
    assert line.startswith(f"{tmp_path / 'm.onnx'}: model: error QDQ023: IR version 8 has no float8e4m3fn "
                           "(IR 9), int4 (IR 10); used by initializer 'z', initializer 'w4'")
    assert any(ln.endswith("warning QDQ022: IR version 8 is older than its opsets: the model imports ai.onnx "
                           "opset 21, which came with IR version 10 (onnx 1.16.0)") for ln in out)


def test_types_in_value_infos_attributes_subgraphs_and_functions_are_seen():
    cast = helper.make_node("Cast", ["y"], ["c"], name="cast", to=TensorProto.FLOAT8E5M2)
    const = helper.make_node("Constant", [], ["k"], name="const",
                             value=helper.make_tensor("v", TensorProto.UINT4, [1], [3]))
    m = _qdq(ir=8, opset=17, extra=(cast, const))
    m.graph.value_info.append(helper.make_tensor_value_info("q", TensorProto.FLOAT4E2M1, None))
    fn = helper.make_function("local", "F", ["a"], ["b"],
                              [helper.make_node("Cast", ["a"], ["b"], to=TensorProto.FLOAT8E8M0)],
                              [helper.make_opsetid("", 17)])
    m.functions.append(fn)
    found = [f.message for f in check_model(m, Path(".")).findings if f.rule == "QDQ023"]
    assert len(found) == 1
    assert found[0].startswith("IR version 8 has no float8e5m2 (IR 9), uint4 (IR 10), float4e2m1 (IR 11), "
                               "float8e8m0 (IR 12); used by ")
    for where in ("node 2 'cast' attribute to", "node 3 'const' attribute value", "value_info 'q'"):
        assert where in found[0] or "more" in found[0]


def test_a_type_in_a_subgraph_is_named_once_per_place():
    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Identity", [name], [f"{name}_o"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_o", TensorProto.INT4, None)],
                                 [helper.make_tensor(name, TensorProto.INT4, [1], [1])])
    if_node = helper.make_node("If", ["c"], ["r"], name="branch", then_branch=branch("t"),
                               else_branch=branch("e"))
    m = _qdq(ir=9, opset=19, extra=(if_node,))
    m.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    found = [f.message for f in check_model(m, Path(".")).findings if f.rule == "QDQ023"]
    assert (found
            == ["IR version 9 has no int4 (IR 10); used by node 2 'branch''s else_branch: initializer 'e', "
                "node 2 'branch''s else_branch: graph output 'e_o', node 2 'branch''s then_branch: "
                "initializer 't' and 1 more"])


def test_the_type_table_follows_onnx_proto():
    assert TYPE_IR[TensorProto.FLOAT8E4M3FN] == 9 and TYPE_IR[TensorProto.INT4] == 10
    assert TYPE_IR[TensorProto.FLOAT4E2M1] == 11 and TYPE_IR[TensorProto.FLOAT8E8M0] == 12
    assert TensorProto.UINT8 not in TYPE_IR and TensorProto.FLOAT16 not in TYPE_IR
    assert set(TYPE_IR) == {v for n, v in TensorProto.DataType.items()
                            if n.startswith(("FLOAT8", "FLOAT4", "FLOAT6", "INT4", "UINT4", "INT2", "UINT2",
                                             "BFLOAT16"))}


def test_every_opset_import_at_its_release_ir_version_is_clean():
    """The negative control: make_model's own IR version for an opset is never too old."""
    for opset in (10, 13, 19, 21, 23, 24, 25):
        m = _qdq(opset=opset)
        m.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
        assert [f.line() for f in check_model(m, Path(".")).findings if f.rule in ("QDQ022", "QDQ023")] == []


# --- QDQ024: quantization operators the checker does not know
# --------------------------------------------------


def _quark_only(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("BFPQuantizeDequantize" if k % 2 else "MXQuantizeDequantize", [f"t{k}"],
                              [f"t{k + 1}"], name=f"n{k}", domain="com.amd.quark") for k in range(n)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", F, [2, 4])],
                          [helper.make_tensor_value_info(f"t{n}", F, None)])
    m = helper.make_model(g,
                          opset_imports=[helper.make_opsetid("", 21),
                                         helper.make_opsetid("com.amd.quark", 1)])
    m.ir_version = 10
    return m


def test_a_model_of_only_unknown_quark_ops_is_not_a_silent_pass(tmp_path, capsys):
    onnx.save(_quark_only(5), tmp_path / "quark.onnx")
    status, out, err = _run(capsys, str(tmp_path / "quark.onnx"))
    assert status == 3
    assert out == [
        f"{tmp_path / 'quark.onnx'}: node 0 'n0' com.amd.quark::MXQuantizeDequantize-1: note QDQ024: "
        "com.amd.quark::MXQuantizeDequantize is not an operator the checker knows; 3 nodes not checked",
        f"{tmp_path / 'quark.onnx'}: node 1 'n1' com.amd.quark::BFPQuantizeDequantize-1: note QDQ024: "
        "com.amd.quark::BFPQuantizeDequantize is not an operator the checker knows; 2 nodes not checked",
        "1 model, 0 quantization nodes (5 more not checked: an operator the checker does not know): 0 "
        "errors, 0 warnings, 2 notes"]
    assert err == ["NOTHING CHECKED: no model holds a quantization node the checker knows (exit status 3)"]


def test_unknown_microsoft_variants_are_named_and_known_ops_still_checked(tmp_path, capsys):
    ms = ("com.microsoft",)
    extra = (helper.make_node("DequantizeWithOrder", ["y", "s"], ["o1"], name="dwo", domain="com.microsoft"),
             helper.make_node("QuantizeBFP", ["o1"], ["o2", "o3"], name="bfp", domain="com.microsoft"),
             helper.make_node("FusedMatMul", ["o2", "o2"], ["o4"], name="mm", domain="com.microsoft"))
    m = _qdq(extra=extra, domains=ms)
    onnx.save(m, tmp_path / "m.onnx")
    status, out, _ = _run(capsys, str(tmp_path / "m.onnx"))
    assert status == 0
    notes = [ln for ln in out if "QDQ024" in ln]
    assert len(notes) == 2 and "com.microsoft::DequantizeWithOrder" in notes[0] and "QuantizeBFP" in notes[1]
    assert not any("FusedMatMul" in ln for ln in out)  # not a quantization operator
    assert (out[-1]
            == "1 model, 2 quantization nodes (2 more not checked: an operator the checker does not know): "
            "0 errors, 0 warnings, 2 notes")


def test_a_local_function_named_like_a_quantizer_is_checked_through_its_body():
    body = [helper.make_node("QuantizeLinear", ["a", "s2"], ["b"], name="inner", axis=7)]
    fn = helper.make_function("local", "MyQuantize", ["a", "s2"], ["b"], body, [helper.make_opsetid("", 21)])
    m = _qdq(extra=(helper.make_node("MyQuantize", ["y", "s"], ["o"], name="call", domain="local"),),
             domains=("local",))
    m.functions.append(fn)
    report = check_model(m, Path("."))
    assert report.nodes_not_checked == 0 and report.nodes_checked == 3
    assert "QDQ024" not in {f.rule for f in report.findings}


def test_no_quantization_node_at_all_exits_3_and_json_says_why(tmp_path, capsys):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", F, [2])],
                          [helper.make_tensor_value_info("y", F, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, tmp_path / "float.onnx")
    status, out, _ = _run(capsys, "--json", str(tmp_path / "float.onnx"))
    doc = json.loads("\n".join(out))
    assert status == 3 and doc["summary"]["exit_status"] == 3 and "nothing was checked" in doc["summary"][
        "exit_meaning"]
    onnx.save(_qdq(), tmp_path / "q.onnx")
    # something was checked
    assert main(["check", str(tmp_path / "float.onnx"), str(tmp_path / "q.onnx")]) == 0


def test_rules_lists_the_model_rules(capsys):
    assert main(["check", "--rules"]) == 0
    out = capsys.readouterr().out
    for rule in ("QDQ021", "QDQ022", "QDQ023", "QDQ024", "QDQ025"):
        assert f"{rule}  {RULES[rule].severity:7}  {RULES[rule].summary}" in out


def test_a_big_folder_of_models_with_weights_is_checked_without_loading_weights(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((64, 64), np.int8), "w")
    node = helper.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")
    for k in range(3):
        g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", F, [64, 64])],
                              [w, helper.make_tensor("s", F, [], [0.5])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
        m.ir_version = 10
        (tmp_path / f"m{k}").mkdir()
        onnx.save_model(m, tmp_path / f"m{k}" / "model.onnx", save_as_external_data=True, location="w.bin",
                        size_threshold=0)
    status, out, _ = _run(capsys, str(tmp_path))
    assert status == 0 and out == ["3 models, 3 quantization nodes: 0 errors, 0 warnings, 0 notes"]


def test_the_toolchain_docs_list_every_rule():
    text = (Path(__file__).resolve().parent.parent / "docs" / "toolchains.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in text.splitlines()
            if line.startswith("| QDQ")}
    assert rows == {r.id: r.severity for r in RULES.values()}
