"""HTML report: counts match the results file, hostile text is escaped, scoreboard and CLI work."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from conformance.cli import main
from conformance.runner.results import header
from reports.render import render_files


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.cells, self._in = [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "data-status" in a:
            self._in = a["data-status"]
        if tag == "script" and a.get("type") == "application/json":
            self._in = "__json__"

    def handle_data(self, data):
        if self._in == "__json__":
            self.scripts.append(data)
        elif self._in:
            self.cells[self._in] = int(data)

    def handle_endtag(self, tag):
        self._in = None


def _results(path, statuses, evil=False):
    lines = [header("demo", "1.0")]
    for k, s in enumerate(statuses):
        cid = f"quantizelinear-21-case{k}" + ("<script>alert(1)</script>" if evil and k == 0 else "")
        lines.append({"type": "case", "id": cid, "form": "runtime", "status": s, "operator": "QuantizeLinear",
                      "domain": "ai.onnx", "version": 21, "types": {"x": "float", "y": "int8"}, "family": "ties",
                      "granularity": "per-tensor", "case_status": "normative",
                      "message": "</script><script>alert(2)</script>" if evil else "m", "duration": 0.001})
    lines.append({"type": "summary", "counts": {}})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_counts_shown_match_the_results_file(tmp_path):
    res = _results(tmp_path / "r.jsonl", ["passed"] * 5 + ["failed"] * 2 + ["unsupported"])
    html = render_files([res], tmp_path / "r.html").read_text()
    p = _Collect()
    p.feed(html)
    assert p.cells["passed"] == 5 and p.cells["failed"] == 2 and p.cells["unsupported"] == 1
    rows = json.loads("".join(p.scripts))
    assert len(rows) == 8 and {r["s"] for r in rows} == {"passed", "failed", "unsupported"}
    assert "<link" not in html and "http://" not in html.replace("http://www.w3.org", "")  # self-contained


def test_script_in_case_id_and_message_is_escaped(tmp_path):
    res = _results(tmp_path / "r.jsonl", ["failed", "passed"], evil=True)
    html = render_files([res], tmp_path / "r.html").read_text()
    assert "<script>alert" not in html
    assert len(re.findall(r"<script", html)) == 2  # the data block and the page's own script
    p = _Collect()
    p.feed(html)
    rows = json.loads("".join(p.scripts))
    assert rows[0]["i"].endswith("<script>alert(1)</script>")  # intact once parsed


def test_scoreboard_and_cli(tmp_path, capsys):
    a = _results(tmp_path / "a.jsonl", ["passed", "failed"])
    b = _results(tmp_path / "b.jsonl", ["passed", "passed"])
    assert main(["report", str(a), str(b), "-o", str(tmp_path / "board.html")]) == 0
    html = (tmp_path / "board.html").read_text()
    assert "1 of 2 cases end differently" in html
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "x.html")]) == 2
