"""Cases made from models run like the corpus's: on ``ort`` and ``onnx-reference`` every case gets a verdict
(never a harness error), ``run --model`` does both steps, the records, ``findings`` and the report name the
model's nodes, and a case made from a configuration the corpus lacked kills a mutant the corpus let
through."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qdq_conformance.cli import main
from qdq_conformance.frommodel_cmd import make
from qdq_conformance.generators.corpus import case_files, load
from qdq_conformance.reports.page import unpack

pytest.importorskip("onnxruntime.quantization")

#: the models run (the others' configurations are the same kinds of node)
RUN = ("hand", "u8", "s4-per-channel", "contrib-s16", "blocked-int4-b32", "dynamic")
VERDICTS = {"passed", "failed", "implementation-defined", "unsupported", "invalid-accepted"}


@pytest.fixture(scope="module")
def cases(quantized_models, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "cases"
    with contextlib.redirect_stdout(io.StringIO()):
        code, _ = make([str(quantized_models[n]) for n in RUN], out)
    assert code == 0
    return out


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", *args], capture_output=True,
                          text=True, timeout=900)


def _records(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == "case"]


@pytest.mark.parametrize("backend", ["ort", "onnx-reference"])
def test_every_case_runs_and_gets_a_verdict(cases, backend, tmp_path):
    results = tmp_path / "r.jsonl"
    p = _cli("run", "--backend", backend, "--cases", str(cases), "--results", str(results), "--workers", "1")
    assert p.returncode in (0, 1), p.stderr[-2000:]
    records = _records(results)
    expected = {c.id for c in load(case_files(cases)).cases}
    assert {r["id"] for r in records} == expected and len(records) == 2 * len(expected)
    assert {r["status"] for r in records} <= VERDICTS, {r["status"] for r in records} - VERDICTS
    assert all(r["source"]["nodes"] for r in records)
    if p.returncode == 1:  # a failing case names the model's nodes in findings
        found = json.loads(_cli("findings", str(results), "--json").stdout)
        assert all(f["model_nodes"] for f in found["findings"])


def test_run_model_does_both_steps_and_names_the_nodes(quantized_models, tmp_path):
    results, report = tmp_path / "r.jsonl", tmp_path / "r.html"
    p = _cli("run", "--backend", "onnx-reference", "--model", str(quantized_models["hand"]), "--results",
             str(results), "--report", str(report), "--workers", "1")
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert ("12 quantization nodes: 10 in cases, 2 not (1 a parameter computed at run time, 1 an operator "
            "the checker does not know)") in p.stdout
    records = _records(results)
    assert records and all(r["source"]["models"] == ["hand.onnx"] for r in records)
    failing = [r for r in records if r["status"] == "failed"]
    html = report.read_text()
    packed = re.findall(r'<script type="application/octet-stream"[^>]*>([^<]*)</script>', html)
    data = json.dumps([unpack(p) for p in packed])
    assert "made from the model" in html and "hand.onnx: node" in data
    if failing:
        text = _cli("findings", str(results)).stdout
        assert "model nodes: hand.onnx: node" in text
        shown = _cli("show", failing[0]["id"], str(results)).stdout
        assert "made from: hand.onnx: node" in shown


def test_a_case_from_the_model_kills_a_mutant_the_corpus_lets_through(cases, capsys):
    """Every per-axis case of the corpus had at most 6 channels; a per-channel table of 16 lanes survived it
    (docs/mutants.md). The int4 per-channel MatMul weight ONNX Runtime writes has 64."""
    code = main(["mutants", "--cases", str(cases), "--only", "per-axis-channels-capped-16", "--json",
                 "--jobs", "1"])
    (verdict,) = json.loads(capsys.readouterr().out)["verdicts"]
    assert code == 0 and verdict["status"] == "killed", verdict
    killer = next(c for c in load(case_files(cases)).cases if c.id == verdict["case"])
    assert killer.source and killer.source["nodes"][0].startswith(("s4-per-channel.onnx", "contrib-s16.onnx"))
