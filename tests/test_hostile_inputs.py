"""Hostile input to the command line: each is one line naming the file and the problem, a documented exit
status, no traceback, and nothing written where it must not be."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qdq_conformance.cli import main

ESCAPING_CASE = """\
cases:
  - id: evil
    description: An unknown attribute name that walks out of the output folder.
    spec: {operator: QuantizeLinear, versions: "21", text: "Attributes of QuantizeLinear-21."}
    operator: QuantizeLinear
    versions: [21]
    family: basic
    status: invalid
    rule: QDQ012
    types: {x: float, scale: float, y: uint8}
    attributes: {"/../../../escaped": 1}
"""


@pytest.mark.parametrize("name,form", [("out", "folder"), ("out.tar.gz", "tar.gz")])
def test_generate_never_writes_outside_out(tmp_path, capsys, name, form):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "evil.yaml").write_text(ESCAPING_CASE)
    out = tmp_path / "a" / "b" / name
    assert main(["generate", "--cases", str(cases), "--out", str(out), "--format", form]) == 2
    err = capsys.readouterr().err
    assert "evil.yaml:2: evil.id: the case id" in err and "Traceback" not in err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent != cases]
    assert written == [] or all(Path(out) in p.parents for p in written)
    assert not list(tmp_path.rglob("model.onnx"))


def test_an_expectation_link_must_be_http(tmp_path):
    import pytest

    from qdq_conformance.runner.expectations import ExpectationError, load

    path = tmp_path / "x.yaml"
    path.write_text('backend: x\nentries:\n  - cases: "a-*"\n    status: failed\n    reason: r\n'
                    '    link: "javascript:alert(1)"\n')
    with pytest.raises(ExpectationError, match=r"x.yaml:6: entries\[0\].link: link must be an http\(s\) URL"):
        load(path, "1.0")


def _hostile_results(tmp_path: Path) -> Path:
    from qdq_conformance.results import header

    from .results_files import entry, record, write

    case = record("quantizelinear-21-x", "failed", message="<script>alert(1)</script>",
                  backend=("evil<b>", "1|0"), operator="QuantizeLinear<img src=x onerror=alert(1)>",
                  version=21, domain="ai.onnx",
                  expectation=entry("failed", 3, "a | b [click](javascript:alert(2)) <b>x</b>",
                                    "javascript:alert(3)"))
    return write(tmp_path / "hostile.jsonl", [case], header("evil<b>", "1|0"))


def test_reports_render_no_script_links_and_escape_markdown(tmp_path):
    from qdq_conformance.reports.compliance import render_files as render_markdown
    from qdq_conformance.reports.render import render_files

    results = _hostile_results(tmp_path)
    html = render_files([results], tmp_path / "r.html").read_text()
    assert 'href="javascript:' not in html and "<script>alert" not in html and "<img src=x" not in html
    text = render_markdown([results], tmp_path / "c.md").read_text() + (tmp_path / "findings.md").read_text()
    assert "<script>" not in text and "<b>" not in text and "<img" not in text
    assert re.search(r"(?<!\\)\]\(javascript:", text) is None  # an escaped bracket opens no link
    assert "\\[click\\]" in text and "a \\| b" in text
    assert "| evil&lt;b&gt; | 1\\|0 |" in text
