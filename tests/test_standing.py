"""How a case stands against its expectation entry, one table for every view: for every run status and every
entry (none, or each status an entry may record), the run's tally and its surprises (the live run), the
summary's tally, the report's first screen (overview), ``findings``, ``diff``, the scoreboard, the report's
expectations table and its page (the embedded data, and what the page's script shows of it in Chromium) all
give the answer of :data:`GRID`, written here apart from the code (``results/standing.py``).

A case this tool's own code failed on (``harness-error``) stands apart from every backend result, with or
without an entry: counted apart, never a surprise, an expected or new failure, nor a reason an entry is
stale.

Before the one function, the overview disagreed on 7 of the 56 combinations (an implementation-defined case
against any entry, a passed case against an ``unsupported`` entry: not an unexpected pass there, one in the
tally), and the page's script on others (an unsupported case against a failing entry was "unexpected")."""

from __future__ import annotations

import os
import re

import pytest

from qdq_conformance.domain import EXPECTABLE, FAILING, RunStatus
from qdq_conformance.reports import diff, findings, overview, render
from qdq_conformance.results import CaseRecord, Results, header, read, standing
from qdq_conformance.results.standing import TABLE
from qdq_conformance.results.tally import tally
from qdq_conformance.runner.expectations import Entry, Expectations, Tracker

from .browser import Browser, find_chromium
from .results_files import entry, record, write

ENTRIES = ("none", "failed", "error", "crashed", "timeout", "invalid-accepted", "unsupported")
#: run status (rows) x the status the case's entry records (columns): how the case stands
GRID = """
                        none        failed      error       crashed     timeout     invalid-acc unsupported
passed                  passed      unexp-pass  unexp-pass  unexp-pass  unexp-pass  unexp-pass  unexp-pass
implementation-defined  not-judged  unexp-pass  unexp-pass  unexp-pass  unexp-pass  unexp-pass  unexp-pass
unsupported             not-judged  not-judged  not-judged  not-judged  not-judged  not-judged  expected
failed                  new-fail    expected    new-fail    new-fail    new-fail    new-fail    new-fail
error                   new-fail    new-fail    expected    new-fail    new-fail    new-fail    new-fail
crashed                 new-fail    new-fail    new-fail    expected    new-fail    new-fail    new-fail
timeout                 new-fail    new-fail    new-fail    new-fail    expected    new-fail    new-fail
invalid-accepted        new-fail    new-fail    new-fail    new-fail    new-fail    expected    new-fail
harness-error           harness     harness     harness     harness     harness     harness     harness
"""
TABLE_HERE = {(row.split()[0], column): answer for row in GRID.strip().splitlines()[1:]
              for column, answer in zip(ENTRIES, row.split()[1:], strict=True)}
COMBOS = sorted(TABLE_HERE)
#: the grid's words -> the values results.standing gives (and the page's data carries)
WORDS = {"passed": "passed", "expected": "expected", "unexp-pass": "unexpected-pass",
         "new-fail": "new-failure", "not-judged": "not-judged", "harness": "harness-error"}


def test_the_grid_covers_every_run_status_and_every_entry_status():
    """A new run status (or a status an entry may newly record) needs its row here, and in the table."""
    assert {s for s, _ in TABLE_HERE} == {s.value for s in RunStatus} == set(TABLE)
    assert set(ENTRIES[1:]) == EXPECTABLE


def _record(status: str, column: str, case_id: str = "quantizelinear-21-case") -> CaseRecord:
    return record(case_id, status, message="m", operator="QuantizeLinear", domain="ai.onnx", version=21,
                  family="ties", granularity="per-tensor", types={"x": "float32", "y": "int8"},
                  case_status="normative", expectation=None if column == "none" else entry(column, 3))


def _run(*records: CaseRecord) -> Results:
    return header("demo", "1.0"), list(records), {"counts": {}}


@pytest.mark.parametrize(("status", "column"), COMBOS)
def test_the_one_function(status, column):
    assert standing(status, None if column == "none" else column).value == WORDS[TABLE_HERE[status, column]]


@pytest.mark.parametrize(("status", "column"), COMBOS)
def test_the_tally_and_the_live_run(status, column):
    want = TABLE_HERE[status, column]
    t = tally([_record(status, column)], 1, 0)
    assert (t["unexpected_passes"], t["new_failures"], t["held"], t["harness_errors"]) == (
        want == "unexp-pass", want == "new-fail", want == "expected", want == "harness")
    live = Tracker()
    live.note("c", "runtime", status, None if column == "none" else column, None if column == "none" else 3)
    assert live.tally(Expectations(), 0) == {**t, "in_force": 0}
    assert bool(live.surprises) == (column != "none" and want in ("unexp-pass", "new-fail"))
    if column != "none":  # (an entry none of whose cases ended as it records, nor failed otherwise: stale)
        e = Expectations(entries=[Entry(["c"], column, "r", None, 3)])
        assert bool(live.stale(e, True, ["runtime"])) == (want in ("unexp-pass", "not-judged"))


@pytest.mark.parametrize(("status", "column"), COMBOS)
def test_the_overview(status, column):
    want = TABLE_HERE[status, column]
    ov = overview.overview(_run(_record(status, column)))
    assert (ov.unexpected_passes, ov.expected_failing, ov.new_failing, ov.harness_errors) == (
        want == "unexp-pass", want == "expected" and status in FAILING, want == "new-fail", want == "harness")


@pytest.mark.parametrize(("status", "column"), COMBOS)
def test_findings_diff_and_the_scoreboard(status, column):
    want = TABLE_HERE[status, column]
    rec = _record(status, column)
    if status in FAILING:
        (f,) = findings.group([rec])
        assert (f.expected, f.new) == (want == "expected", want == "new-fail")
        (change,) = diff.diff_records(_run(_record("passed", column)), _run(rec)).changes
        assert change.category == (diff.EXPECTED_NOW if want == "expected" else "regressed")
    if want == "harness":
        (change,) = diff.diff_records(_run(_record("passed", column)), _run(rec)).changes
        assert change.category == diff.HARNESS_ERROR
    board = render.scoreboard([_run(rec)])
    assert board["expected"][0].get(status, 0) == (want == "expected" and status in FAILING)
    rows = render.expectations_table([rec])
    if column != "none":
        (row,) = rows
        assert (row["met"], row["unexpected"], row["unsupported"], row["harness_errors"]) == (
            want == "expected", want in ("unexp-pass", "new-fail"), want == "not-judged", want == "harness")


def _all_combos(tmp_path):
    """One run holding every combination (case ids name them), as the writer writes it, and its report."""
    path = write(tmp_path / "r.jsonl",
                 [_record(s, c, f"quantizelinear-21-{s}-against-{c}") for s, c in COMBOS])
    return path, render.render_files([path], tmp_path / "r.html")


def test_the_page_receives_each_cases_standing(tmp_path):
    path, page = _all_combos(tmp_path)
    packed = re.search(r'id="data" data-encoding="gzip\+base64"[^>]*>([^<]+)<', page.read_text())
    assert packed
    got = {c["id"]: c["standing"] for c in render.unpack_cases(packed.group(1))}
    assert got == {f"quantizelinear-21-{s}-against-{c}": WORDS[TABLE_HERE[s, c]] for s, c in COMBOS}
    assert len(read(path)[1]) == len(COMBOS)


def test_the_page_shows_what_it_receives(tmp_path):
    exe = find_chromium()
    if exe is None:
        if os.environ.get("QDQ_REQUIRE_BROWSER") == "1":
            pytest.fail("QDQ_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium); set QDQ_REQUIRE_BROWSER=1 to require it")
    _, page = _all_combos(tmp_path)
    with Browser(exe) as b:
        b.open(page)
        b.wait_for("document.body.dataset.ready === '1'")
        b.eval("document.getElementById('more').click()")  # (every case listed)
        shown = b.eval("Object.fromEntries([...document.querySelectorAll('#cases tbody tr')].map(tr => "
                       "[tr.children[0].textContent, [tr.children[2].textContent, tr.className]]))")
        b.eval("var s = document.getElementById('fexp'); s.value = 'new'; "
               "s.dispatchEvent(new Event('input'))")
        new = set(b.eval("[...document.querySelectorAll('#cases tbody tr')].map(tr => "
                         "tr.children[0].textContent)"))
    assert len(shown) == len(COMBOS)
    for s, c in COMBOS:
        want, cid = TABLE_HERE[s, c], f"quantizelinear-21-{s}-against-{c}"
        label = s + {"expected": " (expected)", "unexp-pass": " (unexpected pass)"}.get(want, "")
        css = "xfail" if want == "expected" and s in FAILING else s
        assert shown[cid] == [label, css], (s, c)
        assert (cid in new) == (want == "new-fail"), (s, c)
