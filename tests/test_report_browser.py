"""The HTML report in real headless Chromium: counts match the results file, filters work, hostile text stays text.

Skipped when no Chromium is installed, unless QDQ_REQUIRE_BROWSER=1 (as .ci/run sets), which turns the skip into
a failure. QDQ_SCREENSHOT_DIR keeps the screenshot it takes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from qdq_conformance.reports.render import render_files
from qdq_conformance.runner.results import header

from .browser import Browser, find_chromium

STATUSES = ["passed"] * 78 + ["failed"] * 12 + ["unsupported"] * 5 + ["implementation-defined"] * 3 + \
    ["error", "xx"]


def _failed_details(k: int) -> dict:
    values = [str(float(v)) for v in range(64)]
    codes = list(range(64))
    got = codes[:]
    got[k % 64] += 1
    return {
        "inputs": {"x": {"type": "float", "shape": [64], "values": values, "codes": codes, "truncated": False}},
        "expected": [{"type": "int8", "shape": [64], "values": values, "codes": codes, "truncated": False}],
        "actual": [{"type": "int8", "shape": [64], "values": values, "codes": got, "truncated": False}],
        "mismatches": [{"output": 0, "count": 1, "total": 64, "first_indices": [k % 64], "max_ulp": None}],
        "spec": {"operator": "QuantizeLinear", "versions": "21-28", "text": "rounding to nearest even. " * 4},
        "repro": "import numpy as np\nimport onnx\n" + "# reproduce the case with onnx and the backend's API\n" * 30,
        "attributes": {"axis": 1}, "comparison": "exact",
    }


def write_results(path: Path, n: int, evil: bool = False) -> Counter:
    """A results file of ``n`` cases, mixed statuses, failures carrying full details like a real run's."""
    ops = [("QuantizeLinear", 21), ("QuantizeLinear", 23), ("DequantizeLinear", 21), ("DequantizeLinear", 25)]
    types = ["int8", "uint8", "int4", "float8e4m3fn", "int16"]
    counts: Counter = Counter()
    with path.open("w") as fh:
        fh.write(json.dumps(header("demo-backend", "9.9")) + "\n")
        for k in range(n):
            status = STATUSES[k % len(STATUSES)]
            status = "failed" if status == "xx" else status
            op, v = ops[k % len(ops)]
            cid = f"{op.lower()}-{v}-case-{k:05d}-{types[k % len(types)]}"
            if evil and k == 1:
                cid += "<script>window.pwned=1</script>"
            rec = {"type": "case", "id": cid, "form": "runtime", "status": status, "operator": op,
                   "domain": "ai.onnx", "version": v, "types": {"x": "float", "y": types[k % len(types)]},
                   "family": "ties", "granularity": ["per-tensor", "per-axis", "blocked"][k % 3],
                   "case_status": "implementation-defined" if status == "implementation-defined" else "normative",
                   "ambiguity": "nan-to-integer" if status == "implementation-defined" else None,
                   "behaviour": "NaN -> 0" if status == "implementation-defined" else None,
                   "message": ("<img src=x onerror=window.pwned=2>" if evil and k == 1 else f"message {k}"),
                   "duration": 0.001}
            if status != "passed":
                rec.update(_failed_details(k))
            counts[status] += 1
            fh.write(json.dumps(rec) + "\n")
        fh.write(json.dumps({"type": "summary", "counts": dict(counts)}) + "\n")
    return counts


def test_a_10000_case_report_stays_under_10_mb(tmp_path):
    write_results(tmp_path / "r.jsonl", 10_000)
    html = render_files([tmp_path / "r.jsonl"], tmp_path / "r.html")
    assert html.stat().st_size < 10 * 1024 * 1024, html.stat().st_size


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = find_chromium()
    if exe is None:
        if os.environ.get("QDQ_REQUIRE_BROWSER") == "1":
            pytest.fail("QDQ_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium); set QDQ_REQUIRE_BROWSER=1 to require it")
    return exe


def test_report_in_chromium(tmp_path, chromium):
    counts = write_results(tmp_path / "r.jsonl", 10_000, evil=True)
    page = render_files([tmp_path / "r.jsonl"], tmp_path / "report.html")
    with Browser(chromium) as b:
        b.open(page)
        b.wait_for("document.body.dataset.ready === '1'")
        shown = b.eval("Object.fromEntries([...document.querySelectorAll('#summary td[data-status]')]"
                       ".map(td => [td.dataset.status, Number(td.textContent)]))")
        assert {k: v for k, v in shown.items() if v} == dict(counts)
        assert b.eval("document.getElementById('total').textContent.trim()") == "10000"
        assert b.eval("Number(document.getElementById('shown').dataset.matching)") == 10_000

        # the status filter, then free text on top of it
        b.eval("var s = document.getElementById('fstatus'); s.value = 'failed';"
               "s.dispatchEvent(new Event('input'))")
        assert b.eval("Number(document.getElementById('shown').dataset.matching)") == counts["failed"]
        statuses = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => tr.children[2].textContent)")
        assert statuses and set(statuses) == {"failed"}
        b.eval("var q = document.getElementById('q'); q.value = 'dequantizelinear-25';"
               "q.dispatchEvent(new Event('input'))")
        ids = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => tr.children[0].textContent)")
        assert ids and all(i.startswith("dequantizelinear-25-") for i in ids)

        # details on demand: a click opens the comparison with the mismatching element marked, and the repro
        b.eval("document.querySelector('#cases tbody tr').click()")
        detail = b.eval("document.querySelector('#cases tr.detail').textContent")
        assert "expected vs actual" in detail and "* [" in detail and "copy repro" in detail

        # a matrix cell lists its cases
        b.eval("var s = document.getElementById('fstatus'); s.value = ''; s.dispatchEvent(new Event('input'));"
               "var q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new Event('input'));"
               "document.querySelector('a[data-cell=\"y|ai.onnx::QuantizeLinear-21|int8\"]').click()")
        n = b.eval("Number(document.getElementById('shown').dataset.matching)")
        assert n == sum(1 for k in range(10_000) if k % 4 == 0 and k % 5 == 0)

        # hostile case id and message: shown as text, never run
        b.eval("var q = document.getElementById('q'); document.getElementById('clearcell').click();"
               "q.value = 'window.pwned'; q.dispatchEvent(new Event('input'))")
        cells = b.eval("[...document.querySelector('#cases tbody tr').children].map(td => td.textContent)")
        assert cells[0].endswith("<script>window.pwned=1</script>")
        assert cells[-1] == "<img src=x onerror=window.pwned=2>"
        assert b.eval("typeof window.pwned") == "undefined"

        shot = b.screenshot(tmp_path / "report.png")
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("QDQ_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "report-synthetic.png")
