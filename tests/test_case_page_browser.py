"""The report's case page, deep links and a report that agrees with its verdict (issue 31), in real headless
Chromium at 1,280 px: a link ``report.html#case=ID&form=F`` opens that case's table (index, x / scale / zero
point, expected and actual with their codes, the explanation; only the rows the verdict's comparison marks);
an error case shows the backend's traceback without this tool's frames and no table; ``#finding=F...`` lists a
finding; the scoreboard and the diff link the same way; an entry's unsupported cases are counted as such;
expected failures are never red; each finding has its plain sentence; no header, sentence or number breaks
across lines.

Skipped without Chromium unless QDQ_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

from qdq_conformance.cli import build_parser
from qdq_conformance.reports.render import render_files
from qdq_conformance.reports.reports_cmd import run_diff
from qdq_conformance.results import CaseRecord

from .browser import SPLIT_WORDS_JS, Browser, find_chromium
from .results_files import entry
from .test_one_case import failed_record, write_run

WIDTH = 1280
CASE = "quantizelinear-21-demo-float-float8e4m3fn"
ERROR = "dequantizelinear-21-demo-error-float8e4m3fn"


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = find_chromium()
    if exe is None:
        if os.environ.get("QDQ_REQUIRE_BROWSER") == "1":
            pytest.fail("QDQ_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium); set QDQ_REQUIRE_BROWSER=1 to require it")
    return exe


def _records() -> list[CaseRecord]:
    out = [failed_record(CASE, "runtime"), failed_record(CASE, "initializer")]
    error = failed_record(ERROR, "runtime")
    error.update(status="error", operator="DequantizeLinear", family="boundary-dq", actual=[], mismatches=[],
                 message="error: Fail: DequantizeLinear with type float8 should have no zero point\n"
                 "Traceback (most recent call last):\n"
                 '  File "/site/qdq_conformance/runner/execute.py", line 107, in call_backend\n'
                 "    returned = backend.run(model, feeds)\n"
                 '  File "/site/onnxruntime/capi/onnxruntime_inference_collection.py", line 470, in invoke\n'
                 "    result = sess.run_with_ort_values(input_dict, output_names, run_options)",
                 expected=[{"type": "float", "shape": [64], "values": ["1.5"] * 64,
                            "codes": [0x3FC00000] * 64, "truncated": False}])
    out.append(error)
    known = entry("failed", 9, "Known: NaN for 480.")
    for k in range(3):  # an entry whose cases this backend does not run
        rec = failed_record(f"quantizelinear-23-demo-unsupported-{k}", "runtime", expectation=known)
        rec.update(status="unsupported", message="NOT_IMPLEMENTED", expected=None, actual=None, mismatches=[],
                   inputs=None)
        out.append(rec)
    amb = failed_record("quantizelinear-21-demo-reading-float8e4m3fn", "runtime", expectation=known)
    amb.update(case_status="implementation-defined", ambiguity="demo-ambiguity", reading=None)
    out.append(amb)
    passed = failed_record("quantizelinear-21-demo-passed", "runtime")
    passed.update(status="passed", message="", expected=None, actual=None, mismatches=[], inputs=None)
    out.append(passed)
    return out


def _link(case: str, form: str) -> str:
    return f"case={urllib.parse.quote(case, safe='')}&form={form}"


def _layout_holds(b: Browser) -> None:
    assert b.eval("window.innerWidth") == WIDTH
    assert b.eval("document.documentElement.scrollWidth") <= b.eval("document.documentElement.clientWidth")
    assert b.eval(SPLIT_WORDS_JS) == []


def test_case_page_deep_links_and_a_report_that_agrees_with_itself(tmp_path, chromium):
    results = write_run(tmp_path / "run.jsonl", _records(), selection={"-k": "demo"})
    page = render_files([results], tmp_path / "run.html")
    with Browser(chromium, width=WIDTH, height=900) as b:
        b.open(page, _link(CASE, "runtime"))
        b.wait_for("document.body.dataset.ready === '1'")
        # the link opened that case: its table, with headers, the one differing row marked
        heads = b.eval("[...document.querySelectorAll('#cases tr.detail table.elements thead th')]"
                       ".map(th => th.textContent)")
        assert heads == ["", "index", "x", "scale", "zero point", "expected", "code", "actual", "code",
                         "why (where x sits)"]
        table = b.eval("[...document.querySelectorAll('#cases tr.detail table.elements tbody tr')].map(tr => "
                       "({marked: tr.classList.contains('differs'), cells: [...tr.children].map(td => "
                       "td.textContent)}))")
        assert [r["marked"] for r in table] == [False, False, True, False]  # NaN vs NaN (0x7f, 0xff): no mark
        assert table[0]["cells"][1:5] == ["0, 0", "0.1", "0.5", ""]  # float32 0.1, the per-axis scale
        assert table[2]["cells"][0] == "*" and table[2]["cells"][1] == "1, 0"
        assert (table[2]["cells"][5:9] == ["nan", "0x7f", "448.0", "0x7e"]
                and "beyond max 448" in table[2]["cells"][9])
        assert b.eval("document.querySelector('#cases tr.target').id") == _link(CASE, "runtime")
        _layout_holds(b)
        shot = b.screenshot(tmp_path / "case.png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        # an error case: the message and the backend's frames, not this tool's; no table of "expected -"
        b.eval(f"location.hash = {_link(ERROR, 'runtime')!r}")
        b.wait_for(f"document.querySelector('#cases tr.target') && "
                   f"document.querySelector('#cases tr.target').id === {_link(ERROR, 'runtime')!r}")
        detail = b.eval("document.querySelector('#cases tr.detail').textContent")
        assert "should have no zero point" in detail and "onnxruntime_inference_collection.py" in detail
        assert "qdq_conformance/runner" not in detail and "backend.run(model" not in detail
        assert b.eval("document.querySelectorAll('#cases tr.detail table.elements').length") == 0
        assert "the backend returned none" in detail and "expected  -" not in detail

        # a finding's link lists its cases (the unexpected one: both forms of CASE)
        fid = b.eval("document.querySelector('#findings tbody tr').dataset.findingId")
        b.eval(f"location.hash = 'finding={fid}'")
        b.wait_for("document.querySelector('#findings tr.target') !== null")
        assert b.eval("Number(document.getElementById('shown').dataset.matching)") == 2
        # its plain sentence, from the per-element explanation and the family, then the raw message
        plain = b.eval("document.querySelector('#findings tbody tr .plain').textContent")
        assert plain.startswith("In boundary-range cases, for an input between 448|480") and "448.0" in plain
        assert "values differ" in b.eval("document.querySelector('#findings tbody tr .raw').textContent")

        # the expectations table: the entry's unsupported cases are unsupported, not unexpected; nothing red
        row = b.eval("[...document.querySelectorAll('#expectations tr')].filter(tr => "
                     "tr.children[0].textContent === '9').map(tr => [...tr.children].map(td => "
                     "td.textContent))[0]")
        assert row[2:6] == ["4", "1", "3", "0"]
        assert (b.eval("[...document.querySelectorAll('#expectations tr')].filter(tr => "
                       "tr.children[0].textContent === '9').map(tr => tr.querySelectorAll('.failed').length)")
                == [0])
        # one legend: an expected failure is lilac, never red, in the readings table too
        assert b.eval("[...document.querySelectorAll('#readings span')].filter(s => s.textContent.indexOf("
                      "'none of the catalogued') >= 0).map(s => s.className)") == ["xfail"]
        # a subset says so on the first screen
        assert "-k demo" in b.eval("document.getElementById('subset').textContent")
        assert "Subset" in b.eval("document.getElementById('verdict').textContent")
        b.eval("window.scrollTo(0, 0)")
        _layout_holds(b)


def test_scoreboard_and_diff_link_the_same_way(tmp_path, chromium):
    a = write_run(tmp_path / "a.jsonl", _records(), backend="a")
    recs = _records()
    recs[0]["status"] = "passed"
    bb = write_run(tmp_path / "b.jsonl", recs, backend="b")
    board = render_files([a, bb], tmp_path / "board.html")
    out = tmp_path / "diff.html"
    ns = build_parser().parse_args(["diff", str(bb), str(a), "-o", str(out), "--exit-zero", "--report",
                                    "run.html"])
    assert run_diff(ns) == 0
    with Browser(chromium, width=WIDTH, height=900) as b:
        b.open(board, _link(CASE, "runtime"))
        b.wait_for("document.body.dataset.ready === '1'")
        assert b.eval("document.querySelector('#board tr.target').id") == _link(CASE, "runtime")
        _layout_holds(b)
        b.open(out, _link(CASE, "runtime"))
        b.wait_for("document.querySelector('#cases tbody tr') !== null")
        assert b.eval("document.querySelector('#cases tr.target').id") == _link(CASE, "runtime")
        assert b.eval("document.querySelector('#cases tr.target a').getAttribute('href')") == \
            f"run.html#{_link(CASE, 'runtime')}"
        assert "different backends (b and a)" in b.eval("document.body.textContent")
