"""HTML report: counts match the results file, hostile text is escaped, scoreboard and CLI work."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from qdq_conformance.cli import main
from qdq_conformance.reports.render import render_files, unpack, unpack_cases

from .results_files import entry, record, write


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.cells, self._in = [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "data-status" in a:
            self._in = a["data-status"]
        if tag == "script" and a.get("type") == "application/octet-stream":
            self._in = "__json__"

    def handle_data(self, data):
        if self._in == "__json__":
            self.scripts.append(data)
        elif self._in:
            self.cells[self._in] = int(data)

    def handle_endtag(self, tag):
        self._in = None


def _results(path, statuses, evil=False, entries=None):
    """A results file of cases ending in ``statuses`` (``entries``: case index -> its expectation entry)."""
    return write(path, [
        record(f"quantizelinear-21-case{k}" + ("<script>alert(1)</script>" if evil and k == 0 else ""), s,
               message="</script><script>alert(2)</script>" if evil else "m", operator="QuantizeLinear",
               domain="ai.onnx", version=21, types={"x": "float", "y": "int8"}, family="ties",
               granularity="per-tensor", case_status="normative", duration=0.001,
               expectation=(entries or {}).get(k))
        for k, s in enumerate(statuses)])


def test_counts_shown_match_the_results_file(tmp_path):
    res = _results(tmp_path / "r.jsonl", ["passed"] * 5 + ["failed"] * 2 + ["unsupported"])
    html = render_files([res], tmp_path / "r.html").read_text()
    p = _Collect()
    p.feed(html)
    assert p.cells["passed"] == 5 and p.cells["failed"] == 2 and p.cells["unsupported"] == 1
    rows = unpack_cases("".join(p.scripts))
    assert len(rows) == 8 and {r["status"] for r in rows} == {"passed", "failed", "unsupported"}
    assert "<link" not in html and "http://" not in html.replace("http://www.w3.org", "")  # self-contained


def test_script_in_case_id_and_message_is_escaped(tmp_path):
    res = _results(tmp_path / "r.jsonl", ["failed", "passed"], evil=True)
    html = render_files([res], tmp_path / "r.html").read_text()
    assert "<script>alert" not in html
    assert len(re.findall(r"<script", html)) == 2  # the data block and the page's own script
    assert "alert(2)" not in html  # the message, like every case field, is inside the packed data
    p = _Collect()
    p.feed(html)
    rows = unpack_cases("".join(p.scripts))
    assert rows[0]["id"].endswith("<script>alert(1)</script>")  # intact once parsed


def test_scoreboard_and_cli(tmp_path, capsys):
    a = _results(tmp_path / "a.jsonl", ["passed", "failed", "unsupported"])
    b = _results(tmp_path / "b.jsonl", ["passed", "passed", "passed"])
    assert main(["report", str(a), str(b), "-o", str(tmp_path / "board.html")]) == 0
    html = (tmp_path / "board.html").read_text()
    assert "1 of 3 cases end differently across the backends that ran them" in html  # unsupported: no vote
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "x.html")]) == 2


def test_diff_lists_regressions_fixes_and_membership_changes(tmp_path, capsys):
    old = _results(tmp_path / "old.jsonl", ["passed", "failed", "passed", "unsupported", "passed"])
    new = _results(tmp_path / "new.jsonl", ["failed", "passed", "passed", "passed"])  # case4 disappeared
    rc = main(["diff", str(old), str(new), "-o", str(tmp_path / "d.html")])
    out = capsys.readouterr().out
    assert rc == 1  # a regression fails the CI step
    assert ("1 regressed, 0 now failing (expected), 1 fixed, 1 changed, 0 appeared, 1 disappeared, 1 "
            "unchanged") in out
    assert "quantizelinear-21-case0 [runtime]  passed -> failed" in out
    assert "quantizelinear-21-case4 [runtime]  passed -> -" in out
    p = _Collect()
    p.feed((tmp_path / "d.html").read_text())
    rows = unpack("".join(p.scripts))
    assert [(r["c"], r["i"][-5:]) for r in rows] == [("regressed", "case0"), ("fixed", "case1"),
                                                     ("changed", "case3"), ("disappeared", "case4")]
    assert main(["diff", str(new), str(old), "--exit-zero"]) == 0
    assert "1 appeared" in capsys.readouterr().out
    assert main(["diff", str(old), str(tmp_path / "nope.jsonl")]) == 2


def test_diff_of_identical_runs_is_empty_and_escapes_html(tmp_path, capsys):
    a = _results(tmp_path / "a.jsonl", ["failed", "passed"], evil=True)
    b = _results(tmp_path / "b.jsonl", ["passed", "passed"], evil=True)
    assert main(["diff", str(a), str(a)]) == 0
    assert ("0 regressed, 0 now failing (expected), 0 fixed, 0 changed, 0 appeared, 0 disappeared, 2 "
            "unchanged") in capsys.readouterr().out
    main(["diff", str(a), str(b), "-o", str(tmp_path / "d.html")])
    assert "<script>alert" not in (tmp_path / "d.html").read_text()


def test_compliance_markdown_from_saved_results(tmp_path, capsys):
    a = _results(tmp_path / "a.jsonl", ["passed", "failed", "unsupported"],
                 entries={1: entry("failed", 7, "Rounds after adding the zero point. More detail.")})
    _results(tmp_path / "b.jsonl", ["passed", "passed", "passed"])
    md = tmp_path / "c.md"
    assert main(["compliance", "--backends", "a,b", "--results-dir", str(tmp_path), "--reuse",
                 "--markdown", str(md), "--scoreboard", str(tmp_path / "scoreboard.html")]) == 0
    text = md.read_text()
    day = json.loads(a.read_text().splitlines()[0])["started"][:10]  # the row says when the run was
    assert f"| demo | 1.0 | {day} | runtime | 1 | 1 | 1 | 0 | 50.0% |" in text
    assert "| ai.onnx::QuantizeLinear-21 | 1 / 1 / 1 | 3 / 0 / 0 |" in text
    findings = (tmp_path / "findings.md").read_text()  # (the findings page, beside the table)
    assert "- Rounds after adding the zero point. More detail. (1 cases)" in findings  # short reasons whole
    assert f"Results of {day}" in findings
    assert (tmp_path / "scoreboard.html").exists()
