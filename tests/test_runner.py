"""The pytest runner end to end: `pytest --backend=...` on a small case folder, in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "runner_cases"
FAKE = "python:tests.fake_backends:make"


def run_pytest(*args, cwd=ROOT):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases", str(CASES), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


def pytest_final_line(stdout):
    """pytest's own final line ("2 failed, 3 passed ... in 1.2s"): the one just above the run's summary, which
    comes last; without the '=' padding, whose width depends on the length of the duration."""
    lines = stdout.strip().splitlines()
    k = max(i for i, ln in enumerate(lines) if ln.startswith("=") and "qdq-conformance:" in ln)
    return lines[k - 1].strip("= ")


def read_results(path):
    lines = [json.loads(x) for x in Path(path).read_text().splitlines()]
    return lines[0], [x for x in lines if x["type"] == "case"], lines[-1]


def test_reference_backend_passes_everything_and_streams_results(tmp_path):
    res = tmp_path / "r.jsonl"
    p = run_pytest("--backend=oracle", "--results", str(res), "-q")
    assert p.returncode == 0, p.stdout[-3000:]
    head, cases, summary = read_results(res)
    assert head["backend"] == "oracle" and head["onnx_version"] and head["python"]
    assert len(cases) == 2 * 8  # 8 concrete cases x 2 graph forms
    assert {c["status"] for c in cases} == {"passed", "implementation-defined"}
    assert summary["type"] == "summary" and summary["exitstatus"] == 0
    c = next(c for c in cases if c["id"].startswith("dequantizelinear-21-block-size"))
    assert c["case_status"] == "invalid" and c["rule"] == "QDQ008" and c["status"] == "passed"
    for key in ("operator", "domain", "version", "types", "attributes", "granularity", "family", "spec",
                "ambiguity", "duration", "mismatches"):
        assert key in c


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory):
    res = tmp_path_factory.mktemp("mis") / "r.jsonl"
    p = run_pytest(f"--backend={FAKE}", "--case-timeout=3", "--results", str(res), "-rA")
    return p, read_results(res)


def test_each_misbehaviour_costs_one_case_and_is_named(misbehaving):
    p, (_, cases, summary) = misbehaving
    assert p.returncode == 1
    status = {(c["id"], c["form"]): c["status"] for c in cases}
    assert status[("quantizelinear-13-ties-near-bounds-float-int8", "runtime")] == "crashed"
    assert status[("quantizelinear-13-saturation-huge-float-int8", "runtime")] == "unsupported"
    assert status[("quantizelinear-13-basic-float-int8", "runtime")] == "failed"
    assert status[("quantizelinear-13-basic-float-uint8", "runtime")] == "passed"
    assert status[("dequantizelinear-21-block-size-above-range-uint8-float-blocked-low-axis1-r2-blocksize9",
                   "runtime")] == "invalid-accepted"
    assert len(cases) == 16 and summary["counts"]["crashed"] == 2


def test_failure_report_shows_clause_data_mismatch_and_repro(misbehaving):
    p, _ = misbehaving
    out = p.stdout
    assert "quantizelinear-13-basic-float-int8 [runtime] on misbehaving 0.0-test: failed" in out
    assert 'spec (' in out and "y = saturate" in out
    assert "1 of 16 elements differ, first at [0]" in out
    assert "at [0]: expected" in out
    assert "repro (paste into a bug report):" in out and "= QuantizeLinear (" in out  # (the model's text)
    assert "model = onnx.load_model_from_string(" in out and "feeds = {" in out
    assert "SKIPPED" in out and "saturation is not implemented here" in out


def test_repro_script_runs_standalone(misbehaving):
    _, (_, cases, _) = misbehaving
    rec = next(c for c in cases if c["id"] == "quantizelinear-13-basic-float-int8" and c["form"] == "runtime")
    code = rec["repro"].replace("from qdq_conformance.reference import run",
                                "from qdq_conformance.reference import run")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and "y int8" in out.stdout


def test_expectations_turn_known_failures_into_xfail_and_warn_on_stale(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        "backend: misbehaving\nentries:\n"
        "  - cases: 'quantizelinear-13-ties-near-bounds-*'\n    status: crashed\n    reason: segfaults\n"
        "  - cases: 'quantizelinear-*-basic-float-int8'\n    status: failed\n    reason: off by one\n"
        "  - cases: 'dequantizelinear-21-block-size-*'\n    status: invalid-accepted\n    reason: lenient\n"
        "  - cases: 'quantizelinear-13-basic-float-uint8'\n    status: failed\n    reason: was broken once\n"
        "  - cases: 'no-such-case-*'\n    status: failed\n    reason: gone\n")
    p = run_pytest(f"--backend={FAKE}", "--expectations", str(exp), "-k", "not nan and not signed", "-rA")
    assert p.returncode == 0, p.stdout[-3000:]
    assert "xfailed" in p.stdout and "XPASS" in p.stdout
    # a -k subset says nothing about which entries are stale: it did not reach every case an entry names
    assert "stale expectation" not in p.stdout and "no-such-case-*" not in p.stdout
    assert "stale entries not checked (the run is a subset of the corpus: -k not nan and not signed;" in \
        p.stdout
    p = run_pytest(f"--backend={FAKE}", "--expectations", str(exp), "--form", "runtime", "-rA")
    assert "stale expectation" in p.stdout and "no-such-case-*): matches no collected case" in p.stdout
    assert "quantizelinear-13-basic-float-uint8): all its cases pass now" in p.stdout
    p = run_pytest(f"--backend={FAKE}", "--expectations", str(exp), "--strict-expectations",
                   "-k", "not nan and not signed")
    assert p.returncode == 1 and "XPASS(strict)" in p.stdout


def test_selection_by_markers_and_keywords():
    p = run_pytest("--backend=oracle", "-m", "v21 and y_int8 and runtime", "--collect-only", "-q")
    ids = [ln for ln in p.stdout.splitlines() if "::" in ln]
    assert ids == ["tests/data/runner_cases/small.yaml::quantizelinear-21-basic-float-int8[runtime]"]
    p = run_pytest("--backend=oracle", "-m", "family_nan and implementation_defined", "--collect-only",
                   "-q")
    assert sum("::" in ln for ln in p.stdout.splitlines()) == 2


def test_xdist_and_junit(tmp_path):
    res, junit = tmp_path / "r.jsonl", tmp_path / "j.xml"
    p = run_pytest("--backend=oracle", "-n", "2", "--results", str(res), f"--junitxml={junit}")
    assert p.returncode == 0, p.stdout[-2000:]
    _, cases, _ = read_results(res)
    assert len(cases) == 16
    assert junit.read_text().count("<testcase") == 16


def test_suite_folder_runs_like_the_cases(tmp_path):
    from qdq_conformance.cli import main

    suite = tmp_path / "suite.tar.gz"
    assert main(["generate", "--cases", str(CASES), "--out", str(suite), "--form", "both"]) == 0
    res = tmp_path / "r.jsonl"
    p = run_pytest("--backend=oracle", "--suite", str(suite), "--results", str(res), cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-2000:]
    _, cases, _ = read_results(res)
    assert len(cases) == 16


def test_a_bad_case_file_is_one_failure_not_the_end(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "ok.yaml").write_text((CASES / "small.yaml").read_text())
    (cases / "bad.yaml").write_text("cases:\n  - id: x\n    colour: red\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases", str(cases),
           "--backend=oracle", "-q", "-k", "basic or load"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1
    assert "case file error:" in p.stdout and "bad.yaml:2" in p.stdout
    assert "1 failed, 8 passed" in p.stdout


def test_command_backend_worked_example_agrees_with_ort(tmp_path):
    res = tmp_path / "r.jsonl"
    cmd = f"command:{sys.executable} {ROOT / 'examples' / 'command_runner.py'}"
    p = run_pytest(f"--backend={cmd}", "-k", "basic and runtime", "--results", str(res))
    assert p.returncode == 0, p.stdout[-2000:]
    _, cases, _ = read_results(res)
    assert len(cases) == 4 and {c["status"] for c in cases} == {"passed"}


def test_onnx_backend_module(tmp_path):
    res = tmp_path / "r.jsonl"
    p = run_pytest("--backend=onnx-backend:onnxruntime.backend", "-k", "basic", "--results", str(res))
    assert p.returncode == 0, p.stdout[-2000:]
    head, cases, _ = read_results(res)
    assert head["backend"] == "onnx-backend:onnxruntime.backend" and head["backend_version"] != "unknown"
    assert {c["status"] for c in cases} == {"passed"} and len(cases) == 8
