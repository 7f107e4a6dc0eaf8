"""Findings: failing cases grouped by signature, in `qdq-conformance findings`, the report's first screen, the
scoreboard and the compliance table; mismatch indices read as [4] / [1, 2]."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from qdq_conformance.cli import main
from qdq_conformance.compare import Mismatch, compare
from qdq_conformance.domain import FAILING
from qdq_conformance.reports.findings import group, span
from qdq_conformance.reports.render import render_files, unpack, unpack_cases
from qdq_conformance.reports.signature import failure_class, mismatch_kind, signature
from qdq_conformance.results import CaseRecord, header
from qdq_conformance.types import TYPES

from .results_files import entry, record, write

TRACE = ("\n\nTraceback (most recent call last):\n  File \"/x/execute.py\", line 107, in call_backend\n    "
         "boom")


def _case(cid: str, status: str = "failed", *, op: str = "QuantizeLinear", version: int = 21, y: str = "int8",
          form: str = "runtime", message: str = "", family: str = "ties", granularity: str = "per-tensor",
          got: int | None = None, expected: str | None = None, **extra) -> CaseRecord:
    """A case record; ``got``: the actual value of element 0 (expected: the top of ``y``) for a failed
    case."""
    types = {"x": y, "x_scale": "float", "y": "float"} if op == "DequantizeLinear" else \
        {"x": "float", "y_scale": "float", "y_zero_point": y, "y": y}
    rec = record(cid, status, form=form, message=message, operator=op, domain="ai.onnx", version=version,
                 types=types, family=family, granularity=granularity, case_status="normative", duration=0.001,
                 **extra)
    if status == "failed" and got is not None:
        top = TYPES[y].int_max if TYPES[y].is_integer else 1
        rec["expected"] = [{"type": y, "shape": [2], "values": [str(top), "0"], "codes": [top, 0],
                            "truncated": False}]
        rec["actual"] = [{"type": y, "shape": [2], "values": [str(got), "0"], "codes": [got & 0xFFFF, 0],
                          "truncated": False}]
        rec["mismatches"] = [{"output": 0, "reason": "values differ", "count": 1, "total": 2,
                              "first_indices": [[0]], "max_ulp": None}]
        rec["message"] = message or "output 0: values differ: 1 of 2 elements differ, first at [0]"
    if expected:
        rec["expectation"] = entry(expected, 12, "Known: the backend wraps at the bound. Details.",
                                   "javascript:alert(1)")
    return rec


def _write(path: Path, cases: list[CaseRecord], backend: str = "demo", complete: bool = True) -> Path:
    return write(path, cases, header(backend, "1.0"), complete=complete)


def _run(tmp_path: Path) -> list[dict]:
    """Wrong saturation bound in two versions and three types, both forms, covered by an expectation; one
    error with a backend message naming the case and numbers, in two versions; one new off-by-one failure;
    passes."""
    cases = []
    for v in (21, 23):
        for y in ("int8", "uint8", "int16"):
            for form in ("runtime", "initializer"):
                cases.append(_case(f"quantizelinear-{v}-sat-{y}", version=v, y=y, form=form,
                                   got=TYPES[y].int_min,
                                   family="saturation-inf" if y != "int16" else "boundary-range",
                                   expected="failed"))
    for v in (19, 21):
        cid = f"dequantizelinear-{v}-float8-zp"
        cases.append(_case(cid, "error", op="DequantizeLinear", version=v, y="float8e4m3fn",
                           message=f"Fail: node '{cid}' at /src/quantize_linear.cc:{500 + v}: zero point 1.5 "
                                   f"must be 0 for float8e4m3fn{TRACE}"))
    cases.append(_case("quantizelinear-25-ties-int4", version=25, y="int4", got=6))
    cases += [_case(f"quantizelinear-21-ok-{k}", "passed") for k in range(5)]
    cases.append(_case("quantizelinear-21-known-pass", "passed", expected="failed"))
    return cases


def test_grouping_merges_versions_types_and_forms_and_counts_add_up(tmp_path):
    cases = _run(tmp_path)
    found = group(cases)
    failing = [c for c in cases if c["status"] not in ("passed",)]
    assert sum(f.count for f in found) == len(failing) == 15
    assert [f.state for f in found] == ["new", "new", "expected"]  # new findings first, then by count
    error, ties, sat = found
    assert (sat.count, sat.expected, sat.form, sat.kind) == (12, 12, "both", "wrong saturation bound")
    assert sat.version_span({"ai.onnx::QuantizeLinear": [19, 21, 23, 25]}) == "21-23"
    assert sat.types["y"] == {"int8", "uint8", "int16"}
    assert dict(sat.spans["family"]) == {"saturation-inf": 8, "boundary-range": 4}  # families spanned
    assert "the other end of the range" in sat.what() and sat.entries[12]["cases"] == 12
    assert (error.count, error.status, error.versions) == (2, "error", {19, 21})  # one message, two versions
    assert "must be 0" in error.what() and "Traceback" not in error.what()
    assert (ties.count, ties.kind) == (1, "off by one")
    assert len({f.id for f in found}) == 3 and all(re.fullmatch(r"F[0-9a-f]{8}", f.id) for f in found)
    assert span([10, 13, 19, 21, 23, 25], [10, 13, 19, 21, 23, 24, 25, 28]) == "10-23, 25"
    assert span([19, 21], [19, 21]) == "19-21" and span(["x", 1]) == "1, x"


def test_failure_classes_and_kinds():
    a = _case("quantizelinear-21-a", "error",
              message="node 'quantizelinear-21-a' failed: 3 of 16 at [(4,), (5,)]"
                                                       " in /build/x.cc:12 for float8e5m2" + TRACE)
    b = _case("quantizelinear-23-b", "error", message="node 'quantizelinear-23-b' failed: 1 of 8 at [7] in "
                                                       "/other/x.cc:99 for float8e4m3fn")
    c = _case("quantizelinear-23-c", "error", message="rejected a valid model: refused the zero point")
    assert failure_class(a) == failure_class(b) == "raised at run" and failure_class(c) == "refused at load"
    assert len(group([a, b, c])) == 2
    # the runner's words around a backend's error depend on the case's status, not on the problem
    normative = _case("q1", "error",
                      message="rejected a valid model: [Backend] precision 16 is not supported")
    impl = _case("q2", "error",
                 message="rejected: [Backend] precision 16 is not supported; no catalogued reading "
                                        "rejects this model (readings: "
                                        "mixed-precision-operands:exact-quotient)")
    assert failure_class(normative) == failure_class(impl) == "refused at load"
    assert len(group([normative, impl])) == 1
    assert [failure_class(_case("q", s)) for s in ("crashed", "timeout")] == ["crashed", "timed out"]
    assert failure_class(_case("q", got=5)) == "wrong values"
    accepted = _case("q", "invalid-accepted", rule="QDQ008")
    assert failure_class(accepted) == "accepted an invalid model (rule QDQ008)"
    assert mismatch_kind(_case("q", got=-128)) == "wrong saturation bound"
    assert (mismatch_kind(_case("q", got=126)) == "off by one"
            and mismatch_kind(_case("q", y="uint8", got=0)) ==
            "wrong saturation bound")
    assert mismatch_kind(_case("q", got=5)) == "other values"
    nan = _case("q", y="float8e4m3fn", got=1)
    nan["actual"][0]["values"][0], nan["actual"][0]["codes"][0] = "nan", 0x7F
    assert mismatch_kind(nan) == "NaN" and mismatch_kind(c) == ""
    # a case failing differently in its two forms is two findings, one form each
    r, i = _case("quantizelinear-21-x", got=126), _case("quantizelinear-21-x", form="initializer", got=-128)
    assert sorted(f.form for f in group([r, i])) == ["initializer", "runtime"]


def test_findings_command_text_json_baseline_and_errors(tmp_path, capsys):
    new = _write(tmp_path / "new.jsonl", _run(tmp_path))
    assert main(["findings", str(new)]) == 0
    out = capsys.readouterr().out
    assert "Does not conform: 2 new findings (3 failing case-forms no expectation entry covers)" in out
    assert "and 12 expected failing case-forms in 1 known finding; 15 of 21 judged case-forms fail." in out
    assert "1 case-form passed against an expectation entry (one that records a failure" in out
    assert ("expected: 12 case-forms" in out
            and "ai.onnx::QuantizeLinear 21-23; y integer, zero point; per-tensor; "
            "families saturation-inf, boundary-range; both forms" in out)
    assert "example: dequantizelinear-19-float8-zp [runtime]" in out and "expectation: line 12: Known" in out
    assert main(["findings", str(new), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sum(f["count"] for f in data["findings"]) == data["failing"] == 15 and data["new_failing"] == 3
    assert data["findings"][0]["example"]["id"] and data["verdict"]["kind"] == "bad"
    old = _write(tmp_path / "old.jsonl", [c for c in _run(tmp_path) if "ties" not in c["id"]])
    assert main(["findings", str(new), "--baseline", str(old), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "Since " in out and "1 regressed" not in out and "1 appeared" in out and "1 finding new" in out
    assert "... and 2 more findings (13 case-forms; --limit 0 lists them all)" in out
    assert main(["findings", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_report_first_screen_verdict_findings_and_baseline(tmp_path, capsys):
    new = _write(tmp_path / "new.jsonl", _run(tmp_path))
    html = render_files([new], tmp_path / "r.html").read_text()
    verdict = re.search(r'<p id="verdict" class="verdict (\w+)"[^>]*>([^<]*)</p>', html)
    assert verdict and verdict.group(1) == "bad" and "2 new findings" in verdict.group(2)
    assert html.index('id="verdict"') < html.index('id="findings"') < html.index('id="summary"')
    rows = unpack(re.search(r'<table id="findings" class="findings" data-packed="([^"]+)"', html).group(1))
    assert [r["count"] for r in rows] == [2, 1, 12] and [r["state"] for r in rows][-1] == "expected"
    assert rows[-1]["entries"][0]["link"] is None  # a javascript: link is never rendered
    assert 'data-expected="failed">12<' in html and 'data-unexpected="failed">1<' in html
    cases = unpack_cases(re.search(r'id="data" data-encoding="gzip\+base64"[^>]*>([^<]+)<', html).group(1))
    # unexpected failures first, by finding
    assert [c["status"] for c in cases[:3]] == ["error", "error", "failed"]
    assert {c["standing"] for c in cases[:3]} == {"new-failure"} and cases[0]["finding"] == 0
    # then the unexpected pass
    assert (cases[3]["status"], cases[3]["standing"]) == ("passed", "unexpected-pass")
    assert {(c["status"], c["standing"]) for c in cases[4:16]} == {("failed", "expected")}
    assert (cases[-1]["status"], cases[-1]["standing"]) == ("passed", "passed")
    # with a baseline: what changed since
    old = _write(tmp_path / "old.jsonl", [c for c in _run(tmp_path) if "ties" not in c["id"]])
    assert main(["report", str(new), "-o", str(tmp_path / "b.html"), "--baseline", str(old)]) == 0
    since = re.search(r'<div id="since"><b>([^<]*)</b>', (tmp_path / "b.html").read_text()).group(1)
    assert since.startswith(f"Since {old}: 1 appeared;") and "1 finding new, 0 gone" in since
    assert main(["report", str(new), str(old), "-o", str(tmp_path / "x.html"), "--baseline", str(old)]) == 2
    # all expected: the verdict says so
    fine = _write(tmp_path / "fine.jsonl", [c for c in _run(tmp_path) if c.get("expectation")])
    html = render_files([fine], tmp_path / "f.html").read_text()
    assert re.search(r'class="verdict known"[^>]*>Does not conform in 1 finding \(12 of 13 judged case-forms '
                     r'fail\), all of them expected', html)


def test_scoreboard_and_compliance_carry_the_findings(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", _run(tmp_path), backend="a")
    b = _write(tmp_path / "b.jsonl", [_case("quantizelinear-21-ok", "passed")], backend="b")
    html = render_files([a, b], tmp_path / "board.html").read_text()
    assert ("a 1.0: 3 findings (15 failing case-forms)" in html
            and "b 1.0: 0 findings (0 failing case-forms)" in html)
    rows = unpack(re.search(r'id="findings-table-0" class="findings" data-packed="([^"]+)"', html).group(1))
    assert sum(r["count"] for r in rows) == 15
    assert main(["compliance", "--backends", "a,b", "--results-dir", str(tmp_path), "--reuse",
                 "--markdown", str(tmp_path / "c.md"), "--scoreboard", str(tmp_path / "s.html")]) == 0
    assert "[findings.md](findings.md)" in (tmp_path / "c.md").read_text()
    text = (tmp_path / "findings.md").read_text()  # (the findings page, written beside the table)
    assert "## a 1.0" in text and "## b 1.0" in text and "- No failing case." in text
    assert ("- Known: the backend wraps at the bound. Details. (12 cases)\n  - QuantizeLinear 21-23 (y "
            "integer") in text
    assert "the other end of the range (12 cases)" in text
    assert "- Not yet explained by an expectation entry: DequantizeLinear 19-21 (x float8; per-tensor" in text


def test_mismatch_indices_read_as_lists():
    m = compare(np.array([1, 2, 3, 4, 5, 6], np.int8), np.array([1, 2, 3, 4, 0, 0], np.int8))
    assert str(m) == "values differ: 2 of 6 elements differ, first at [4], [5]"
    m = compare(np.zeros((2, 3), np.int8), np.array([[0, 0, 0], [0, 0, 1]], np.int8))
    assert "first at [1, 2]" in str(m) and "(" not in str(m)
    assert str(Mismatch("values differ", 1, 1, [()])) == "values differ: 1 of 1 elements differ, first at []"


#: how ONNX Runtime 1.27 reworded its errors (RuntimeException -> Fail): the same defects, other words
_REWORDINGS = (("RuntimeException", "Fail"), ("RUNTIME_EXCEPTION", "FAIL"), (": 6 :", ": 1 :"))


def _reworded(rec: dict) -> dict:
    """``rec`` with the backend's part of its message reworded (the runner's own words before it kept): ORT
    1.27's renaming, then the words scrambled outright."""
    message = rec.get("message") or ""
    prefix = next((p for p in ("rejected a valid model: ", "rejected: ", "error: ") if message.startswith(p)),
                  "")
    said = message[len(prefix):]
    for old, new in _REWORDINGS:
        said = said.replace(old, new)
    return {**rec, "message": prefix + " ".join(reversed(said.split())) + " (reworded)"}


def test_rewording_a_backends_error_changes_no_signature():
    """A release that only rewords its errors shows no new finding: ONNX Runtime's kept run, every failing
    case's message reworded, groups into the same findings."""
    from qdq_conformance.results.merge import load_run

    kept = Path(__file__).resolve().parents[1] / "docs" / "results" / "ort.jsonl.gz"
    _, cases, _ = load_run([kept])
    failing = [c for c in cases if c["status"] in FAILING]
    errors = [c for c in failing if c["status"] == "error"]
    assert errors and any("RuntimeException" in (c.get("message") or "") or "Fail" in (c.get("message") or "")
                          for c in errors)
    reworded = [_reworded(c) for c in failing]
    assert [signature(c, "") for c in failing] == [signature(c, "") for c in reworded]
    assert [f.key for f in group(failing)] == [f.key for f in group(reworded)]
    rt = _case("q", "error", message="RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : "
               "Non-zero status code returned while running QuantizeLinear node.")
    assert signature(rt, "runtime") == signature(_reworded(rt), "runtime")
