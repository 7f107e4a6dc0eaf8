"""``cases --from-model``: the compute ops around a model's quantization nodes (Conv, MatMul, Gemm, Add, Mul,
LeakyRelu, AveragePool, GlobalAveragePool, Sigmoid, Softmax, Resize, Concat; DynamicQuantizeLinear ->
MatMulInteger; weight-only MatMul) become graph cases with the model's own weights, sliced keeping their
per-channel / blocked structure, read without the rest of the weight; they pass the corpus schema and run on
``ort`` and ``onnx-reference``."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from onnx import numpy_helper

from qdq_conformance.frommodel_cmd import make
from qdq_conformance.generators.corpus import case_files, load

pytest.importorskip("onnxruntime.quantization")

from .frommodel_models import COMPUTE, compute_model, save_external  # noqa: E402 - after the skip

#: the models whose compute patterns are checked here
ORT = ("u8", "s8-per-channel", "s4-per-channel", "dynamic", "blocked-int4-b16")
VERDICTS = {"passed", "failed", "implementation-defined", "unsupported"}


def _make(paths: list[Path], out: Path) -> tuple[int, str]:
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code, _ = make([str(p) for p in paths], out)
    return code, said.getvalue()


@pytest.fixture(scope="module")
def made(quantized_models, tmp_path_factory) -> tuple[Path, dict, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("compute")
    models = {**{n: quantized_models[n] for n in ORT}, "compute": compute_model(folder / "compute.onnx")}
    out = folder / "cases"
    code, text = _make(list(models.values()), out)
    assert code == 0, text
    return out, json.loads((out / "from-model.json").read_text()), models


def _graph(out: Path, row: dict) -> dict:
    (g,) = yaml.safe_load((out / row["file"]).read_text())["graphs"]
    return g


def _rows(doc: dict, model: str, node: str) -> list[dict]:
    return [g for g in doc["graphs"] if any(n.startswith(f"{model}: node ") and n.endswith(f" {node!r}")
                                            for n in g["nodes"])]


def _inits(path: Path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def test_every_compute_op_between_quantization_nodes_is_a_graph_case_or_a_reason(made):
    out, doc, _ = made
    for node, want in COMPUTE.items():
        (row,) = _rows(doc, "compute.onnx", node)
        if want.startswith("graph-"):
            assert row["family"] == want and row["file"] and row["cases"] == 1 and not row["problem"], row
            assert _graph(out, row)["family"] == want
        else:
            assert row["file"] is None and row["problem"] == want, row
    corpus = load(case_files(out))
    assert corpus.errors == []
    families = {c.family for c in corpus.cases}
    assert {f for f in COMPUTE.values() if f.startswith("graph-")} | {"graph-compute-integer"} <= families
    assert all(c.source and c.source["nodes"] for c in corpus.cases)
    # every quantization node still accounted for
    for m in doc["models"]:
        assert m["in_cases"] == m["quantization_nodes"] > 0, m


def test_ort_conv_and_matmul_hold_the_models_weights_sliced_per_channel(made):
    out, doc, models = made
    inits = _inits(models["s8-per-channel"])
    model = onnx.load(models["s8-per-channel"])
    by_out = {n.output[0]: n for n in model.graph.node}
    # MatMul [1, 288] x [288, 64], int8 weights per column: 8 columns spread (with the extreme scales), K 32
    (row,) = _rows(doc, "s8-per-channel.onnx", "fc")
    g = _graph(out, row)
    assert g["family"] == "graph-compute-matmul"
    fc = next(n for n in model.graph.node if n.name == "fc")
    wdq = by_out[fc.input[1]]
    w, scale = inits[wdq.input[0]], inits[wdq.input[1]]
    kept = np.float32(g["params"]["ws1"]["values"])
    cols = [int(np.flatnonzero(scale == v)[0]) for v in kept]
    assert cols == sorted(cols) and 8 <= len(cols) < 64
    assert {0, 63, int(np.argmax(scale)), int(np.argmin(scale))} <= set(cols)
    codes = np.asarray(g["constants"]["w1"]["values"]).reshape(g["constants"]["w1"]["shape"])
    assert codes.shape == (32, len(cols)) and np.array_equal(codes, w[:32, cols])
    assert g["inputs"]["x"]["shape"] == [1, 32]
    assert "columns" in g["source"]["concrete"] and "[288, 64] as [32," in g["source"]["concrete"]
    # Conv 8x3x3x3 with its int32 bias per channel: every channel kept, the bias DQ's own scale
    (row,) = _rows(doc, "s8-per-channel.onnx", "conv")
    g = _graph(out, row)
    conv = next(n for n in model.graph.node if n.name == "conv")
    wdq, bdq = by_out[conv.input[1]], by_out[conv.input[2]]
    assert g["family"] == "graph-compute-conv"
    assert np.array_equal(np.asarray(g["constants"]["w1"]["values"]), inits[wdq.input[0]].reshape(-1))
    assert np.array_equal(np.asarray(g["constants"]["w2"]["values"]), inits[bdq.input[0]])
    assert np.array_equal(np.float32(g["params"]["ws2"]["values"]), inits[bdq.input[1]])
    ops = [n["op"] for n in g["nodes"]]
    assert ops == ["QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv",
                   "QuantizeLinear", "DequantizeLinear"]


def test_blocked_weights_keep_whole_blocks_and_grouped_conv_keeps_groups(made):
    out, doc, models = made
    # weight-only int4/uint4 MatMul in blocks of 16 along K (288 = 18 blocks): blocks 0, 1, 16, 17
    (row,) = _rows(doc, "blocked-int4-b16.onnx", "fc_matmul_Q4")
    g = _graph(out, row)
    assert g["family"] == "graph-compute-float-output" and g["outputs"] == ["y"]
    inits = _inits(models["blocked-int4-b16"])
    dq = next(n for n in onnx.load(models["blocked-int4-b16"]).graph.node if n.op_type == "DequantizeLinear")
    w, scale = inits[dq.input[0]], inits[dq.input[1]]
    rows = [*range(32), *range(256, 288)]
    codes = np.asarray(g["constants"]["w1"]["values"]).reshape(g["constants"]["w1"]["shape"])
    cols = [int(c) for c in g["source"]["concrete"].split("columns ")[1].split(";")[0].split(", ")]
    assert np.array_equal(codes, w[np.ix_(rows, cols)])
    got = np.float32(g["params"]["ws1"]["values"]).reshape(g["params"]["ws1"]["shape"])
    assert np.array_equal(got, scale[np.ix_([0, 1, 16, 17], cols)])
    assert g["inputs"]["x"]["shape"] == [1, 64]
    # the hand-made int4 weights [40, 12] in blocks of 16: the partial last block stays partial
    (row,) = _rows(doc, "compute.onnx", "matmul_w4")
    g = _graph(out, row)
    assert g["constants"]["w1"]["shape"][0] == 40 and g["params"]["ws1"]["shape"][0] == 3
    # a depthwise Conv of 8 groups keeps a few groups (with the extreme scales), its group attribute says so
    (row,) = _rows(doc, "compute.onnx", "conv_dw")
    g = _graph(out, row)
    conv = next(n for n in g["nodes"] if n["op"] == "Conv")
    inits = _inits(models["compute"])
    kept = np.float32(g["params"]["ws1"]["values"])
    groups = [int(np.flatnonzero(inits["ws_dw"] == v)[0]) for v in kept]
    assert conv["attributes"]["group"] == len(groups) < 8 and g["inputs"]["x"]["shape"][1] == len(groups)
    assert {int(np.argmax(inits["ws_dw"])), int(np.argmin(inits["ws_dw"]))} <= set(groups)
    codes = np.asarray(g["constants"]["w1"]["values"]).reshape(g["constants"]["w1"]["shape"])
    assert np.array_equal(codes, inits["w_dw"][groups])
    assert np.array_equal(np.asarray(g["constants"]["w2"]["values"]), inits["b_dw"][groups])


def test_dynamic_matmulinteger_holds_its_weights_and_scale_chain(made):
    out, doc, models = made
    rows = [g for g in doc["graphs"] if g["family"] == "graph-compute-integer"
            and g["nodes"][0].startswith("dynamic.onnx")]
    (row,) = rows
    g = _graph(out, row)
    ops = [n["op"] for n in g["nodes"]]
    assert ops == ["DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul"]
    m = onnx.load(models["dynamic"])
    mmi = next(n for n in m.graph.node if n.op_type == "MatMulInteger")
    w = _inits(models["dynamic"])[mmi.input[1]]
    codes = np.asarray(g["constants"]["w"]["values"]).reshape(g["constants"]["w"]["shape"])
    cols = [int(c) for c in g["source"]["concrete"].split("columns ")[1].split(";")[0].split(", ")]
    assert np.array_equal(codes, w[:32, cols])


def test_external_weights_are_read_only_where_the_slice_is(models_external):
    path, out, read, ranges = models_external
    assert read and not {"conv_w_quantized", "fc_w_quantized", "conv_b_quantized"} & set(read), read
    assert {"conv_w_quantized", "fc_w_quantized", "conv_b_quantized"} <= set(ranges)
    sizes = {t.name: t for t in onnx.load(path, load_external_data=False).graph.initializer}
    fc = next(n for n in ranges if n.startswith("fc_w"))
    total = sum(b - a for a, b in ranges[fc])
    full = int(np.prod(sizes[fc].dims))
    assert 0 < total <= 32 * 16 < full // 30, (total, full)
    assert json.loads((out / "from-model.json").read_text())["models"][0]["in_cases"] == 11


@pytest.fixture
def models_external(quantized_models, tmp_path, monkeypatch) -> tuple[Path, Path, list[str], dict]:
    from qdq_conformance.checker import tensors
    from qdq_conformance.generators.frommodel import weights

    save_external(quantized_models["s8-per-channel"], tmp_path / "ext.onnx")
    read: list[str] = []
    ranges: dict[str, list[tuple[int, int]]] = {}
    whole, some = tensors.read_external, tensors.read_external_ranges

    def spy(t, base_dir):  # noqa: ANN001, ANN202
        read.append(t.name)
        return whole(t, base_dir)

    def spy_ranges(t, base_dir, wanted):  # noqa: ANN001, ANN202
        ranges.setdefault(t.name, []).extend(wanted)
        return some(t, base_dir, wanted)

    monkeypatch.setattr(tensors, "read_external", spy)
    monkeypatch.setattr("qdq_conformance.checker.tensor_facts.read_external", spy)
    monkeypatch.setattr(weights, "read_external_ranges", spy_ranges)
    code, _ = _make([tmp_path / "ext.onnx"], tmp_path / "out")
    assert code == 0
    return tmp_path / "ext.onnx", tmp_path / "out", read, ranges


@pytest.mark.parametrize("backend", ["ort", "onnx-reference"])
def test_the_compute_cases_run_and_get_a_verdict(made, backend, tmp_path):
    out, _, _ = made
    results = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", backend, "--cases",
                        str(out), "--results", str(results), "--workers", "1", "-k", "graph"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    records = [r for r in map(json.loads, results.read_text().splitlines()) if r.get("type") == "case"]
    expected = {c.id for c in load(case_files(out)).cases if c.id.startswith("graph")}
    assert {r["id"] for r in records} == expected and len(records) == 2 * len(expected)
    assert {r["status"] for r in records} <= VERDICTS, {r["status"] for r in records} - VERDICTS
    families = {r["family"] for r in records}
    assert {"graph-compute-conv", "graph-compute-matmul", "graph-compute-float-output",
            "graph-compute-integer", "graph-compute-pool", "graph-compute-exp", "graph-compute-resize",
            "graph-compute-elementwise"} <= families
    passed = {r["family"] for r in records if r["status"] == "passed"}  # (not only disagreements)
    assert len(passed & {"graph-compute-conv", "graph-compute-matmul", "graph-compute-float-output",
                         "graph-compute-integer"}) >= 2, passed
