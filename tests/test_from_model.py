"""``qdq-conformance cases --from-model``: every quantization node of what ONNX Runtime's quantizer writes and
of a hand-made float8 / blocked model accounted for, the case files the corpus's own (schema, loader), the
model's own parameters in them, deduplicated, and bad input refused in one line."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from onnx import numpy_helper

from qdq_conformance.cli import main
from qdq_conformance.frommodel_cmd import make
from qdq_conformance.generators.corpus import case_files, load
from qdq_conformance.generators.expand import expand
from qdq_conformance.generators.loader import CaseFileError
from qdq_conformance.generators.template import Template

pytest.importorskip("onnxruntime.quantization")

from .frommodel_models import HAND, save_external  # noqa: E402 - after the skip

QUANTIZATION = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")


@pytest.fixture(scope="module")
def models(quantized_models) -> dict[str, Path]:
    return quantized_models


def _make(paths: list[Path], out: Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code, _ = make([str(p) for p in paths], out)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def made(models, tmp_path_factory) -> tuple[Path, dict, str]:
    out = tmp_path_factory.mktemp("made") / "cases"
    code, text, err = _make(list(models.values()), out)
    assert code == 0, err
    return out, json.loads((out / "from-model.json").read_text()), text


def _templates(out: Path) -> dict[str, dict]:
    found = {}
    for f in sorted(out.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        for t in doc.get("cases", []) + doc.get("graphs", []):
            found[t["id"]] = t
    return found


def test_every_quantization_node_is_accounted_for(models, made):
    out, doc, text = made
    by_model = {m["name"]: m for m in doc["models"]}
    for name, path in models.items():
        m = onnx.load(path)
        count = sum(1 for n in m.graph.node if n.op_type in QUANTIZATION or "Quantiz" in n.op_type)
        row = by_model[path.name]
        assert row["quantization_nodes"] == count > 0, name
        assert row["in_cases"] + sum(row["not_in_cases"].values()) == count, name
        rows = [n for n in doc["nodes"] if n["model"] == path.name]
        assert len(rows) == count and len({n["index"] for n in rows}) == count, name
        for n in rows:
            assert (n["file"] is None) == (n["reason"] is not None), n
            assert n["file"] is None or (out / n["file"]).is_file(), n
        assert re.search(rf"^{re.escape(str(path))}: {count} quantization nodes: {row['in_cases']} in cases, "
                         rf"{count - row['in_cases']} not", text, re.M), text
    hand = {n["name"]: n for n in doc["nodes"] if n["model"] == "hand.onnx"}
    assert {k: v["reason"] or "case" for k, v in hand.items()} == HAND
    assert re.search(r"^\d+ quantization nodes: \d+ in cases, 2 not \(1 a parameter computed at run time, "
                     r"1 an operator the checker does not know\)$", text, re.M), text
    assert all(m["in_cases"] == m["quantization_nodes"] for m in doc["models"] if m["name"] != "hand.onnx")


def test_the_case_files_pass_the_schema_and_load_with_the_corpus_loader(made):
    out, doc, _ = made
    corpus = load(case_files(out))
    assert corpus.errors == []
    expected = sum(c["cases"] for c in doc["configurations"]) + sum(g["cases"] for g in doc["graphs"])
    assert len(corpus.cases) == expected > 100
    assert all(c.source and c.source["nodes"] for c in corpus.cases)
    families = {c.family for c in corpus.cases}
    assert {"graph-roundtrip", "graph-activation", "graph-data-movement", "boundary-ties", "boundary-range",
            "boundary-specials", "boundary-dq", "all-codes", "dynamic", "invalid"} <= families
    statuses = {c.status for c in corpus.cases}
    assert statuses == {"normative", "implementation-defined", "invalid"}


def test_what_the_models_hold_becomes_configurations(made):
    _, doc, _ = made
    texts = [c["configuration"] for c in doc["configurations"]]
    blocked = "blocked (axis {} of rank 2, axis written {}, block_size {})"
    for wanted in ("QuantizeLinear-21 float -> float8e4m3fn, per-tensor, zero point given (all 0), "
                   "saturate=0",
                   "DequantizeLinear-21 float8e4m3fn -> float, per-axis (axis 0 of rank 2, axis written 0)",
                   "DequantizeLinear-21 int4 -> float, " + blocked.format(1, -1, 32),
                   "QuantizeLinear-21 float -> uint4, " + blocked.format(0, 0, 2),
                   "DequantizeLinear-21 uint4 -> float, " + blocked.format(0, 0, 16),
                   "DequantizeLinear-21 int4 -> float, " + blocked.format(0, 0, 32),
                   "DequantizeLinear-21 int4 -> float, per-axis (axis 1 of rank 2, axis written 1)",
                   "QuantizeLinear-21 float -> int16", "DequantizeLinear-21 uint4 -> float",
                   "com.microsoft QuantizeLinear-1 float -> int16",
                   "com.microsoft DequantizeLinear-1 int8 -> float",
                   "DynamicQuantizeLinear-11 float -> uint8", "; invalid: QDQ005"):
        assert any(wanted in t for t in texts), (wanted, texts)
    # deduplicated: one configuration per key, uint8 activations shared by several models
    assert len({c["id"] for c in doc["configurations"]}) == len(texts)
    nodes = {c["id"]: [n["model"] for n in doc["nodes"] if n["configuration"] == c["id"]]
             for c in doc["configurations"]}
    assert any(len(set(models)) > 1 for models in nodes.values())


def test_the_cases_hold_the_models_own_parameters(models, made):
    out, doc, _ = made
    templates = _templates(out)
    hand = {t.name: numpy_helper.to_array(t) for t in onnx.load(models["hand"]).graph.initializer}
    blocked = next(t for t in templates.values() if t.get("source", {}).get("nodes") == [
        "hand.onnx: node 3 'dq_w4_blocked'"] and t["family"] == "boundary-dq")
    assert blocked["shape"] == [8, 40]  # both blocks kept: a whole one and the partial last (8 of 32)
    assert blocked["granularity"] == {"kind": "blocked", "axes": [1], "axis_attribute": "negative",
                                      "block_size": 32}
    assert np.array_equal(np.float32(blocked["inputs"]["scale"]["values"]), hand["s_w4"].reshape(-1))
    assert np.array_equal(np.asarray(blocked["inputs"]["zero_point"]["values"]), hand["z_w4"].reshape(-1))
    # 64 per-channel int8 MatMul weights: channels sliced, each with its own scale and zero point
    s8 = onnx.load(models["s8-per-channel"])
    inits = {t.name: numpy_helper.to_array(t) for t in s8.graph.initializer}
    dq = next(n for n in s8.graph.node if n.op_type == "DequantizeLinear" and inits[n.input[0]].ndim == 2)
    scale, zp = inits[dq.input[1]], inits[dq.input[2]]
    ref = f"{models['s8-per-channel'].name}: node {list(s8.graph.node).index(dq)} {dq.name!r}"
    t = next(t for t in templates.values() if ref in t.get("source", {}).get("nodes", [])
             and t["family"] == "boundary-dq")
    kept = np.float32(t["inputs"]["scale"]["values"])
    idx = [int(np.flatnonzero(scale == v)[0]) for v in kept]
    assert idx == sorted(idx) and 16 <= len(idx) < 64 and {0, 63, int(np.argmax(np.abs(scale))),
                                                          int(np.argmin(np.abs(scale)))} <= set(idx)
    assert np.array_equal(np.asarray(t["inputs"]["zero_point"]["values"]), zp[idx])
    assert t["shape"][1] == len(idx) and "channels" in t["source"]["concrete"]


def test_the_invalid_node_is_an_invalid_case_with_its_rule(made):
    out, _, _ = made
    t = next(t for t in _templates(out).values() if t.get("status") == "invalid")
    assert t["rule"] == "QDQ005" and t["source"]["nodes"] == ["hand.onnx: node 5 'dq_invalid'"]
    assert t["spec"]["text"].startswith("There are three supported quantization granularities")
    (case,) = expand(Template(t, "<t>"))
    assert case.status == "invalid" and case.expected is None


def test_generating_twice_gives_identical_bytes(models, tmp_path):
    paths = [models["hand"], models["s4-per-channel"]]
    assert _make(paths, tmp_path / "a")[0] == 0
    assert _make(paths, tmp_path / "b")[0] == 0
    a = {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()}
    assert a == {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()}
    # an earlier output folder is replaced; a foreign one is refused
    assert _make([models["u8"]], tmp_path / "a")[0] == 0
    assert not any(p.name.endswith("yaml") and "hand" in p.read_text() for p in (tmp_path / "a").iterdir())
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "x.txt").write_text("mine")
    code, _, err = _make(paths, tmp_path / "foreign")
    assert code == 2 and "holds no from-model.json" in err and (tmp_path / "foreign" / "x.txt").exists()


def test_bad_input_is_one_line_with_the_checks_exit_statuses(models, tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not a model")
    code, text, err = _make([garbage, models["u8"]], tmp_path / "o1")
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"{garbage}: cannot make cases: ")
    assert "Traceback" not in err and (tmp_path / "o1" / "from-model.json").exists()
    code, _, err = _make([models["u8"].parent / "float.onnx"], tmp_path / "o2")
    assert code == 3 and "NOTHING MADE" in err and not (tmp_path / "o2").exists()
    assert main(["run", "--backend", "oracle", "--model", str(models["u8"]), "--cases",
                 str(tmp_path)]) == 2


def test_external_data_reads_only_the_parameters(models, tmp_path, monkeypatch):
    from qdq_conformance.checker import tensors

    save_external(models["hand"], tmp_path / "ext.onnx")
    read: list[str] = []
    original = tensors.read_external

    def spy(t, base_dir):  # noqa: ANN001, ANN202
        read.append(t.name)
        return original(t, base_dir)

    monkeypatch.setattr(tensors, "read_external", spy)
    monkeypatch.setattr("qdq_conformance.checker.tensor_facts.read_external", spy)
    code, text, _ = _make([tmp_path / "ext.onnx"], tmp_path / "out")
    assert code == 0 and read
    assert not {"w8", "w4", "w_bad"} & set(read), read
    assert {"s_w4", "z_w4", "s_b", "z_b"} <= set(read)


@pytest.mark.parametrize(("change", "message"), [
    ({"ranks": [2]}, "ranks and an explicit shape exclude each other"),
    ({"kind": "blocked"}, "needs block_size"),
    ({"block_size": 4}, "block_size is for a blocked granularity"),
])
def test_an_explicit_shape_granularity_is_checked(change, message):
    t = {"id": "t", "description": "d", "spec": {"text": "t"}, "operator": "DequantizeLinear",
         "versions": [21],
         "family": "granularity", "status": "normative", "types": {"x": "int8", "scale": "float"},
         "shape": [4, 8], "granularity": {"kind": "per-axis", "axes": [0], **change}}
    with pytest.raises(CaseFileError, match=message):
        expand(Template(t, "<t>"))


def test_a_defect_of_this_tool_costs_its_node_only_and_says_so(models, tmp_path, monkeypatch):
    from qdq_conformance.generators.frommodel import convert
    from qdq_conformance.generators.frommodel import node_configs as nodes

    def broken(checked, model, base_dir):  # noqa: ANN001, ANN202
        if checked.site.node.name == "dq_f8":
            raise RuntimeError("boom")
        return nodes.read_node(checked, model, base_dir)

    monkeypatch.setattr(convert, "read_node", broken)
    code, text, err = _make([models["hand"]], tmp_path / "o")
    assert code == 1 and "Traceback" not in err
    assert ("error: hand.onnx: node 1 'dq_f8': no case could be made (a problem of this tool): internal "
            "error (RuntimeError: boom); please report it") in err
    assert "12 quantization nodes: 9 in cases, 3 not (" in text
    assert (tmp_path / "o" / "from-model.json").exists()
