"""The HTML report in real headless Chromium: counts match the results file, filters work, hostile text stays
text; the verdict and the findings come first, expected failures look different from unexpected ones, and
nothing scrolls sideways at 1,400 px.

Skipped when no Chromium is installed, unless QDQ_REQUIRE_BROWSER=1 (as .ci/run sets), which turns the skip
into a failure. QDQ_SCREENSHOT_DIR keeps the screenshot it takes. (The README's screenshots of a real run are
``docs/make_screenshots.py``'s, with the same layout checks: a script, not a test that skips when not asked.)
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from qdq_conformance.reports.render import render_files
from qdq_conformance.results import header, read
from qdq_conformance.sharding import shard_of

from .browser import Browser, find_chromium
from .results_files import entry, record, write

STATUSES = ["passed"] * 78 + ["failed"] * 12 + ["unsupported"] * 5 + ["implementation-defined"] * 3 + \
    ["error", "xx"]


def first_index(k: int) -> list[int]:
    """The index of case k's mismatching element, as a run records it: one number per dimension (odd k: 8 x
    8)."""
    return [(k % 64) // 8, k % 8] if k % 2 else [k % 64]


def _failed_details(k: int) -> dict:
    values = [str(float(v)) for v in range(64)]
    codes = list(range(64))
    got = codes[:]
    got[k % 64] += 1
    shape = [8, 8] if k % 2 else [64]
    return {
        "inputs": {"x": {"type": "float", "shape": shape, "values": values, "codes": codes,
                         "truncated": False}},
        "expected": [{"type": "int8", "shape": shape, "values": values, "codes": codes, "truncated": False}],
        "actual": [{"type": "int8", "shape": shape, "values": values, "codes": got, "truncated": False}],
        "mismatches": [{"output": 0, "reason": "values differ", "count": 1, "total": 64,
                        "first_indices": [first_index(k)], "max_ulp": None}],
        "spec": {"operator": "QuantizeLinear", "versions": "21-28", "text": "rounding to nearest even. " * 4},
        "repro": "import numpy as np\nimport onnx\n"
        + "# reproduce the case with onnx and the backend's API\n" * 30, "attributes": {"axis": 1},
        "comparison": "exact",
    }


def long_message(k: int) -> str:
    """A message longer than the case list shows, with words and a long unbroken token (as backends' errors
    have)."""
    return (f"message {k}: " + "the backend's error text goes on " * 8
            + "ONNX_NAMESPACE::TensorProto::FLOAT16" * 3 +
            " and on" * 20)


def write_results(path: Path, n: int, evil: bool = False) -> Counter:
    """A results file of ``n`` cases, mixed statuses, failures carrying full details like a real run's."""
    ops = [("QuantizeLinear", 21), ("QuantizeLinear", 23), ("DequantizeLinear", 21), ("DequantizeLinear", 25)]
    types = ["int8", "uint8", "int4", "float8e4m3fn", "int16"]
    counts: Counter = Counter()
    records = []
    for k in range(n):
        status = STATUSES[k % len(STATUSES)]
        status = "failed" if status == "xx" else status
        op, v = ops[k % len(ops)]
        cid = f"{op.lower()}-{v}-case-{k:05d}-{types[k % len(types)]}"
        if evil and k == 1:
            cid += "<script>window.pwned=1</script>"
        implementation_defined = status == "implementation-defined"
        rec = record(cid, status, backend=("demo-backend", "9.9"), operator=op, domain="ai.onnx", version=v,
                     types={"x": "float", "y": types[k % len(types)]}, family="ties",
                     granularity=["per-tensor", "per-axis", "blocked"][k % 3],
                     case_status="implementation-defined" if implementation_defined else "normative",
                     ambiguity="nan-to-integer" if implementation_defined else None,
                     behaviour="NaN -> 0" if implementation_defined else None,
                     message=("<img src=x onerror=window.pwned=2>" if evil and k == 1 else long_message(k)
                              if status == "failed" and k % 7 == 0 else f"message {k}"),
                     duration=0.001)
        if status != "passed":
            rec.update(_failed_details(k))  # type: ignore[typeddict-item]
        if status == "failed" and k % 3 == 0:
            rec["expectation"] = entry("failed", 7, "A known deviation. " * 12)
        counts[status] += 1
        records.append(rec)
    write(path, records, header("demo-backend", "9.9"), {"counts": dict(counts)})
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
        failing = sum(counts[s] for s in ("failed", "error"))
        _check_first_screen_and_layout(b, failing)
        _check_expected_failures_look_different(b)

        # the status filter, then free text on top of it
        b.eval("var s = document.getElementById('fstatus'); s.value = 'failed';"
               "s.dispatchEvent(new Event('input'))")
        assert b.eval("Number(document.getElementById('shown').dataset.matching)") == counts["failed"]
        statuses = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => "
                          "tr.children[2].textContent)")
        assert statuses and set(statuses) == {"failed"}
        b.eval("var q = document.getElementById('q'); q.value = 'dequantizelinear-25';"
               "q.dispatchEvent(new Event('input'))")
        ids = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => "
                     "tr.children[0].textContent)")
        assert ids and all(i.startswith("dequantizelinear-25-") for i in ids)

        # details on demand: a click opens the comparison with the mismatching element marked, and the repro;
        # mismatch indices read [4] or [1, 2] (a run records [[4]] / [[1, 2]]: one list per element), not
        # [[4]], [(4,)] or 1,2
        for query in ("dequantizelinear-25", "quantizelinear-21-"):  # 8 x 8 outputs, then 64-element ones
            b.eval(f"var q = document.getElementById('q'); q.value = {query!r}; q.dispatchEvent(new "
                   "Event('input'))")
            b.eval("document.querySelector('#cases tbody tr').click()")
            case = b.eval("document.querySelector('#cases tbody tr').children[0].textContent")
            detail = b.eval("document.querySelector('#cases tr.detail').textContent")
            assert "expected vs actual" in detail and "copy repro" in detail
            index = ", ".join(map(str, first_index(int(case.split("-case-")[1][:5]))))
            # the case table marks exactly the mismatching element's row, by its index
            marked = b.eval("[...document.querySelectorAll('#cases tr.detail table.elements tr.differs')]"
                            ".map(tr => tr.children[1].textContent)")
            assert marked == [index], (marked, index)
            assert f"1 of 64 elements differ, first at [{index}]" in detail, detail
            assert "[[" not in detail and "(" not in detail.split("first at")[1].split("\n")[0]

        # a message longer than the list shows is cut at a word (whole in the details), never mid-word
        b.eval("var q = document.getElementById('q'); q.value = 'goes on'; q.dispatchEvent(new "
               "Event('input'))")
        row = b.eval("[...document.querySelector('#cases tbody tr').children].map(td => td.textContent)")
        k = int(row[0].split("-case-")[1][:5])
        shown_text = row[-1].removesuffix(" …")
        assert row[-1].endswith(" …") and long_message(k).startswith(shown_text) and \
            long_message(k)[len(shown_text)] == " "
        # ... and wraps over several lines in its cell (not one line cut off or pushing the table wider)
        lines = b.eval("var r = document.createRange(); "
                       "r.selectNodeContents(document.querySelector('#cases tbody tr').lastElementChild); "
                       "new Set([...r.getClientRects()].map(x => Math.round(x.top))).size")
        assert lines >= 3, lines
        _no_sideways_scrolling(b)
        b.eval("document.querySelector('#cases tbody tr').click()")
        assert long_message(k) in b.eval("document.querySelector('#cases tr.detail').textContent")
        b.eval("var q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new Event('input'))")

        # a matrix cell lists its cases
        b.eval("var s = document.getElementById('fstatus'); s.value = ''; s.dispatchEvent(new "
               "Event('input'));var q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new "
               "Event('input'));document.querySelector('a[data-cell=\"y|ai.onnx::QuantizeLinear-21|int8\"]').click()")
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


def _no_sideways_scrolling(b: Browser) -> None:
    """At the browser's 1,400 px nothing is wider than the page: no horizontal scroll bar, no element past the
    right edge (long ids, messages and the type matrix wrap)."""
    assert b.eval("window.innerWidth") == 1400
    width = b.eval("document.documentElement.clientWidth")
    assert b.eval("document.documentElement.scrollWidth") <= width
    wide = b.eval(f"[...document.querySelectorAll('body *')].filter(e => e.getClientRects().length && "
                  f"e.getBoundingClientRect().right > {width} + 1).map(e => e.tagName + '.' + e.className)")
    assert not wide, wide
    # nor is any text cut off inside its box (overflow hidden, an ellipsis): what does not fit wraps
    clipped = b.eval("[...document.querySelectorAll('body *')].filter(e => e.getClientRects().length && "
                     "getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1)"
                     ".map(e => e.tagName + '#' + e.id + '.' + e.className)")
    assert not clipped, clipped


def _check_first_screen_and_layout(b: Browser, failing: int, verdict: str = "Does not conform: ") -> None:
    """The first screen: the verdict, then the findings (their counts add up to the failing cases)."""
    assert b.eval("document.getElementById('verdict').textContent").startswith(verdict)
    top = b.eval("document.querySelector('#findings tbody tr').getBoundingClientRect().top")
    assert 0 < top < 1000  # on the first screen
    counts = b.eval("[...document.querySelectorAll('#findings tbody tr')].map(tr => "
                    "Number(tr.children[2].textContent.replace(/,/g, '')))")
    assert counts and sum(counts) == failing and len(counts) < 40
    _no_sideways_scrolling(b)
    # a finding's count lists its cases; its example opens with the repro
    b.eval("document.querySelector('#findings a[data-finding]').click()")
    assert b.eval("Number(document.getElementById('shown').dataset.matching)") == counts[0]
    b.eval("document.querySelector('#findings a[data-open]').click()")
    assert "copy repro" in b.eval("document.querySelector('#cases tr.detail').textContent")
    _no_sideways_scrolling(b)
    b.eval("document.getElementById('clearcell').click()")


def _check_expected_failures_look_different(b: Browser) -> None:
    """In the summary, the matrices and the case list, expected failures have their own colour."""
    def colour(selector: str) -> str:
        return b.eval(f"getComputedStyle(document.querySelector({selector!r})).backgroundColor")

    assert b.eval("document.querySelector('#summary "
                  "td[data-expected=\"failed\"]').className").endswith("xfail")
    assert colour("#summary td[data-expected='failed']") != colour("#summary td[data-unexpected='failed']")
    statuses = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => tr.className)")
    assert set(statuses) <= {"failed", "error"}  # the first rows: unexpected failures
    unexpected = colour("#cases tbody tr.failed td")
    b.eval("var s = document.getElementById('fexp'); s.value = 'expected'; s.dispatchEvent(new "
           "Event('input'))")
    statuses = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => tr.className)")
    assert statuses and set(statuses) == {"xfail"} and colour("#cases tbody tr.xfail td") != unexpected
    assert b.eval("document.querySelector('#cases tbody tr').children[2].textContent") == "failed (expected)"
    b.eval("var s = document.getElementById('fexp'); s.value = ''; s.dispatchEvent(new Event('input'))")
    assert b.eval("document.querySelectorAll('.matrix td.xfail').length") + \
        b.eval("document.querySelectorAll('.matrix td.failed').length") > 0


def _shard_files(whole: Path, given: tuple[int, ...], n: int) -> list[Path]:
    """Shard files of the run ``whole`` as --shard K/N writes them (only shards ``given``)."""
    head, cases, _ = read(whole)
    del head["read"]  # (what the reader found: never written)
    out = []
    for k in given:
        mine = [c for c in cases if shard_of(c["id"], n) == k]
        path = whole.with_name(f"{whole.stem}-shard-{k}-of-{n}-from-a-ci-matrix-job-artifact.jsonl")
        out.append(write(path, mine, {**head, "shard": f"{k}/{n}"},
                         {"duration_s": 1.0, "counts": dict(Counter(c["status"] for c in mine))}))
    return out


def test_merged_shards_with_one_missing_say_so_on_the_first_screen(tmp_path, chromium):
    write_results(tmp_path / "r.jsonl", 3_000)
    page = render_files(_shard_files(tmp_path / "r.jsonl", (1, 3), 3), tmp_path / "report.html")
    with Browser(chromium) as b:
        b.open(page)
        b.wait_for("document.body.dataset.ready === '1'")
        assert "The run is incomplete (shard 2 of 3 is missing)" in b.eval(
            "document.getElementById('verdict').textContent")
        line = b.eval("document.getElementById('shards-attention').textContent")
        assert line.startswith("2 of 3 shards merged: 1/3 ") and "Shard 2 of 3 is missing" in line
        assert 0 < b.eval("document.getElementById('shards-attention').getBoundingClientRect().bottom") < 1000
        _no_sideways_scrolling(b)


def _odd_ids_results(path: Path) -> None:
    """Four cases, one whose id holds a lone surrogate (a results file may carry one: JSON's \\ud800)."""
    ids = ["quantizelinear-21-plain", "quantizelinear-21-lone-\ud800-surrogate", "dequantizelinear-21-x",
           "dequantizelinear-21-y"]
    write(path, [record(cid, "failed" if k < 2 else "passed", message=f"message {k}",
                        backend=("demo-backend", "9.9"), operator="QuantizeLinear", domain="ai.onnx",
                        version=21, types={"x": "float", "y": "int8"}, family="ties",
                        granularity="per-tensor", case_status="normative", duration=0.001,
                        **(_failed_details(k) if k < 2 else {}))
                 for k, cid in enumerate(ids)], head=header("demo-backend", "9.9"))


@pytest.mark.parametrize("fragment", ["", "case=%E0%A4%A", "case=no-such-case&form=runtime",
                                      "finding=Fdeadbeef"])
def test_odd_ids_and_fragments_leave_the_page_working(tmp_path, chromium, fragment):
    """Issue 38: a lone surrogate in a case id does not empty the case table (encodeURIComponent throws on
    it), a malformed fragment does not stop the page, and a deep link to a case or finding the report does not
    hold says so (not "0 of 0")."""
    _odd_ids_results(tmp_path / "r.jsonl")
    page = render_files([tmp_path / "r.jsonl"], tmp_path / "report.html")
    with Browser(chromium) as b:
        b.open(page, fragment)
        b.wait_for("document.body.dataset.ready === '1'")
        shown = b.eval("document.getElementById('shown').textContent")
        rows = b.eval("document.querySelectorAll('#cases > tbody > tr:not(.detail)').length")
        if fragment.startswith("case="):  # (a malformed one is taken as it is: no case has that id)
            name = "no-such-case" if "no-such" in fragment else "%E0%A4%A"
            want = f'no case "{name}" in this report (the link names none of its 4 case-forms)'
            assert rows == 0 and shown == want, shown
        elif fragment.startswith("finding="):
            assert shown == 'no finding "Fdeadbeef" in this report', shown
        else:  # every case listed, the one with the surrogate too, and its link is a working deep link
            assert rows == 4, shown
            link = b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => tr.id)"
                          ".find(id => id.includes('lone'))")
            assert link.startswith("case=quantizelinear-21-lone-%EF%BF%BD-surrogate"), link
            b.eval(f"location.hash = {link!r}")
            b.wait_for("document.querySelector('#cases tr.target') !== null")
            assert b.eval("document.querySelectorAll('#cases > tbody > tr:not(.detail)').length") == 1
